"""The ``concepts`` outbox handler: keeps the derived graph in step with the store.

Every memory insert, delete and status change enqueues a ``concepts`` task for the
memory; this handler re-applies each one (``indexer.apply``: remove, then extract and
add if the memory is still visible). It is switched by the ``auto_concepts`` setting.
"""

from __future__ import annotations

from marm import config
from marm.concepts import indexer
from marm.context import Ctx
from marm.drain import Handler
from marm.store.concept_graph import Graph
from marm.store.records import Task


def process(ctx: Ctx, tasks: list[Task]) -> dict[int, str]:
    errors: dict[int, str] = {}
    ids: list[int] = []
    for task in tasks:
        try:
            ids.append(int(task.target))
        except ValueError:
            errors[task.id] = f"concepts task target is not a memory id: {task.target!r}"
    if ids:
        graph = Graph.open(config.derived_path(ctx.home))
        try:
            indexer.apply(ctx.store(), graph, ids, indexer.extractor())
        finally:
            graph.close()
    return errors


def enabled(ctx: Ctx) -> bool:
    return ctx.setting("auto_concepts") == "on"


HANDLER = Handler("concepts", batch=64, process=process, enabled=enabled)
