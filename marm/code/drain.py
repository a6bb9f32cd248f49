"""The drain's sweep: re-index repositories that hooks marked dirty.

Runs after the outbox tasks, under a lease of its own (``code-index``), so a user's
``marm code index`` and a drain never write the same tree at once; when that lease is
busy the sweep is skipped (the marks stay, the next drain picks them up).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from marm.code.index import index_tree, record
from marm.errors import Busy, MarmError
from marm.store import code_graph, code_repos, leases, now


def sweep(ctx: Any, deadline: float) -> dict[str, Any]:
    """Index dirty repositories until ``deadline`` (a ``time.monotonic()`` value)."""
    if ctx.setting("auto_code_index") != "on":
        return {"skipped": "switched off"}
    store = ctx.store()
    dirty = code_repos.dirty(store)
    if not dirty:
        return {"indexed": 0, "left": 0}
    summary: dict[str, Any] = {"indexed": 0, "left": 0, "failed": {}}
    try:
        with leases.hold(
            store, ctx.home, "code-index", holder=f"marm drain ({ctx.source})"
        ) as lease:
            graph = code_graph.CodeGraph.open(ctx.home)
            try:
                for repo in dirty:
                    if time.monotonic() >= deadline:
                        summary["left"] += 1
                        continue
                    root = Path(repo.path)
                    started_at = now()
                    try:
                        report = index_tree(graph, root)
                    except MarmError as exc:
                        summary["failed"][repo.path] = exc.message
                        continue
                    record(ctx, root, report, started_at)
                    summary["indexed"] += 1
                    lease.heartbeat(indexed=summary["indexed"], total=len(dirty))
            finally:
                graph.close()
    except Busy:
        return {"skipped": "another code index is running", "left": len(dirty)}
    if not summary["failed"]:
        del summary["failed"]
    return summary
