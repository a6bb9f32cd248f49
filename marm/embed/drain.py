"""The ``embed`` task handler: vectors for new memories, off the write path.

For each memory in a batch: split it into overlapping token windows
(``Encoder.spans``), embed every window, and replace the memory's vectors for the
model in one transaction (delete, then insert), so a re-run after a killed drain
leaves exactly one vector per chunk. A task whose memory is gone is simply done.

Each window is embedded on its own text. (Embedding a memory together with the one
before it in its session was tried and did not help recall on LoCoMo once the
hybrid lane scores session neighbours by their words; it did cost throughput, so
context is left to the recall side, ``recall.hybrid``.)

The vectors are appended to their project's file (``store.vectors``): a batch costs
its own rows, never a rewrite, so a recall that embeds a new memory on its way stays
a few milliseconds at any store size.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from marm import embed
from marm.context import Ctx
from marm.drain import Handler
from marm.errors import Busy
from marm.store import Store, flags, leases, outbox, vectors
from marm.store import memories as memory_store
from marm.store.records import Memory, Task

BATCH = 64


def embed_tasks(store: Store, home: Path, encoder: embed.Embedder, tasks: list[Task]) -> dict[int, str]:
    """Embed the memories of ``tasks`` and store their vectors. Returns failures by task id.

    The batch is embedded at once; if that fails, each memory is tried alone, so one
    bad memory fails (and eventually parks) only its own task.
    """
    found = memory_store.get_many(store, (int(t.target) for t in tasks if t.target.isdigit()))
    todo = [(t, found[int(t.target)]) for t in tasks if t.target.isdigit() and int(t.target) in found]
    if not todo:
        return {}
    errors: dict[int, str] = {}
    try:
        plan = _embed(encoder, [m for _, m in todo])
    except Exception:  # noqa: BLE001 - find the memory that fails, keep the others
        plan = []
        for task, m in todo:
            try:
                plan.extend(_embed(encoder, [m]))
            except Exception as exc:  # noqa: BLE001 - recorded on its task
                errors[task.id] = f"{type(exc).__name__}: {exc}"
    with store.write():
        retired = vectors.write(store, home, encoder.model,
                                [vectors.Embedded(m.id, m.content_hash, chunks, matrix) for m, chunks, matrix in plan])
        vectors.record_batch(store, encoder.model, [m.id for m, _, _ in plan])
    vectors.retire(home, retired)
    return errors


def _embed(encoder: embed.Embedder, todo: list[Memory]) -> list[tuple[Memory, list[vectors.Chunk], Any]]:
    """(memory, its chunks, their vectors) for each memory, all embedded in one call."""
    spans = [encoder.spans(m.content) for m in todo]
    matrix = encoder.embed([m.content[s:e] for m, sp in zip(todo, spans, strict=True) for s, e in sp])
    out, at = [], 0
    for m, sp in zip(todo, spans, strict=True):
        out.append((m, [vectors.Chunk(i, s, e) for i, (s, e) in enumerate(sp)], matrix[at : at + len(sp)]))
        at += len(sp)
    return out


def encoder_for(store: Store, home: Path, env: dict[str, str] | None = None,
                saved: dict[str, str] | None = None) -> embed.Encoder:
    """The process's encoder of the configured model (``Unavailable`` if it cannot be
    used); ``saved``: the stored settings, when the caller has read them already."""
    cfg = embed.settings(home, saved if saved is not None else flags.all_saved(store),
                         env if env is not None else os.environ)
    return embed.load(cfg)


def encoder_soon(store: Store, home: Path, saved: dict[str, str] | None = None) -> embed.Embedder:
    """The configured model, perhaps still loading on a thread (``embed.soon``): a recall
    reads the store meanwhile; ``Unavailable`` comes when it is first used. ``saved``:
    the stored settings, when the caller has read them already."""
    return embed.soon(embed.settings(home, saved if saved is not None else flags.all_saved(store), os.environ))


def start_encoder(store: Store, home: Path, env: dict[str, str] | None = None) -> None:
    """Start loading the configured model on a thread (``embed.start``), for a recall by
    meaning to come: ``encoder_for`` then waits for it."""
    embed.start(embed.settings(home, flags.all_saved(store), env if env is not None else os.environ))


def _process(ctx: Ctx, tasks: list[Task]) -> dict[int, str]:
    embed.expect_bulk()  # a drain embeds batch after batch: worth a graph built for it
    store = ctx.store()
    return embed_tasks(store, ctx.home, encoder_for(store, ctx.home, dict(ctx.env)), tasks)


def embed_pending(store: Store, home: Path, encoder: embed.Embedder, limit: int) -> int:
    """Embed up to ``limit`` pending tasks now, if no drain holds the lease; return how many.

    For a process that has loaded the encoder anyway (a hybrid recall): it helps the
    backlog along without ever waiting for a running drain.
    """
    if not outbox.pending(store, "embed"):
        return 0
    encoder = embed.ready(encoder)  # a model that cannot load fails no task
    try:
        with leases.hold(store, home, "drain", holder=f"marm recall (pid {os.getpid()})"):
            outbox.release_orphans(store, ["embed"])
            tasks = outbox.claim(store, "embed", limit)
            if not tasks:
                return 0
            errors = embed_tasks(store, home, encoder, tasks)
            with store.write():
                outbox.complete(store, [t for t in tasks if t.id not in errors])
            for t in tasks:
                if t.id in errors:
                    outbox.fail(store, t, errors[t.id])
            return len(tasks) - len(errors)
    except Busy:
        return 0


def unstored(encoder: embed.Embedder, waiting: list[tuple[int, str]]) -> tuple[Any, Any] | None:
    """(ids, vectors) of ``waiting`` (id, content): the newest memories in scope still
    waiting for their vectors, as the recall read model listed them, embedded now and
    kept in memory only: a recall scores a memory written a moment ago by its meaning
    too, even while a drain holds the lease or has claimed its task. Bounded: each by
    its first token window."""
    import numpy as np

    if not waiting:
        return None
    texts = [content[slice(*encoder.spans(content)[0])] for _, content in waiting]
    return np.asarray([mid for mid, _ in waiting], dtype=np.int64), encoder.embed(texts)


HANDLER = Handler("embed", BATCH, _process)
