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
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from marm import embed
from marm.context import Ctx
from marm.drain import Handler
from marm.errors import Busy, Unavailable
from marm.store import Store, flags, leases, outbox, vectors
from marm.store import memories as memory_store
from marm.store.records import Memory, Task

BATCH = 64


def embed_tasks(store: Store, home: Path, encoder: embed.Embedder, tasks: list[Task]) -> dict[int, str]:
    """Embed the memories of ``tasks`` and store their vectors. Returns failures by task id.

    The batch is embedded at once; if that fails, each memory is tried alone, so one
    bad memory fails (and eventually parks) only its own task.
    """
    todo, _ = _with_memories(store, tasks)
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
        retired = _store_vectors(store, home, encoder.model, plan)
    vectors.retire(home, retired)
    return errors


#: What a batch embedded: each memory with its chunks and their vectors.
Plan = list[tuple[Memory, list[vectors.Chunk], Any]]


def _with_memories(store: Store, tasks: list[Task]) -> tuple[list[tuple[Task, Memory]], set[int]]:
    """Each task with its memory, and the ids of the tasks whose memory is gone."""
    found = memory_store.get_many(store, (int(t.target) for t in tasks if t.target.isdigit()))
    todo = [(t, found[int(t.target)]) for t in tasks if t.target.isdigit() and int(t.target) in found]
    held = {t.id for t, _ in todo}
    return todo, {t.id for t in tasks if t.id not in held}


def _embed(encoder: embed.Embedder, todo: list[Memory]) -> Plan:
    """(memory, its chunks, their vectors) for each memory, all embedded in one call."""
    spanned = [(m, encoder.spans(m.content)) for m in todo]
    return _split(spanned, encoder.embed([m.content[s:e] for m, sp in spanned for s, e in sp]))


def _split(spanned: list[tuple[Memory, list[tuple[int, int]]]], matrix: Any, at: int = 0) -> Plan:
    """The rows of ``matrix`` from ``at`` on, handed out to the memories' spans in order."""
    out: Plan = []
    for m, sp in spanned:
        out.append((m, [vectors.Chunk(i, s, e) for i, (s, e) in enumerate(sp)], matrix[at : at + len(sp)]))
        at += len(sp)
    return out


def _store_vectors(store: Store, home: Path, model: str, plan: Plan) -> Any:
    """Write ``plan``'s vectors and book them, inside the caller's transaction; what
    ``vectors.write`` retired, for ``vectors.retire`` once it has committed."""
    retired = vectors.write(store, home, model,
                            [vectors.Embedded(m.id, m.content_hash, chunks, matrix) for m, chunks, matrix in plan])
    vectors.record_batch(store, model, [m.id for m, _, _ in plan])
    return retired


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


class QueryBatch:
    """What a hybrid recall embeds in the same model call as its query.

    A model call has a fixed cost besides its texts' (in a process that embeds one
    query the int8 weights are dequantised on every call: ~45 ms here, against ~10 ms
    for one more short text), so the memories a recall embeds ride along with its query
    instead of taking calls of their own:

    - ``claim``, before the search: up to ``limit`` pending embed tasks, under the drain
      lease (none while a drain holds it). Every token window of each is embedded, and
      the vectors are stored once the recall has its answer (``finish``), exactly as the
      drain stores them: a recall helps the backlog along without ever waiting for a drain.
    - ``see``, from the search: the newest memories in scope still waiting for their
      vectors (the recall read model lists them). These are scored for this query: the
      ones claimed here by all their windows, the others (a drain has their tasks) by
      their first window, kept in memory only. A memory written a moment ago never
      competes without its meaning.

    ``embed_with`` runs on the search's worker thread (it waits for the model); ``claim``
    and ``finish`` on the caller's, which owns the store's connection. Helping the
    backlog never fails a recall: a batch that fails is logged and its tasks released.
    """

    def __init__(self) -> None:
        self._tasks: list[Task] = []
        self._memories: list[Memory] = []
        self._gone: set[int] = set()  # tasks whose memory no longer exists: done as they are
        self._lease: ExitStack | None = None
        self._waiting: list[tuple[int, str]] = []
        self._plan: Plan | None = None
        self._model: str | None = None

    def claim(self, store: Store, home: Path, limit: int) -> None:
        try:
            if not outbox.pending(store, "embed"):
                return
            lease = ExitStack()
            try:
                lease.enter_context(leases.hold(store, home, "drain", holder=f"marm recall (pid {os.getpid()})"))
            except Busy:
                return
            self._lease = lease
            outbox.release_orphans(store, ["embed"])
            self._tasks = outbox.claim(store, "embed", limit)
            todo, self._gone = _with_memories(store, self._tasks)
            self._memories = [m for _, m in todo]
        except Exception as exc:  # noqa: BLE001 - helping the backlog must never fail a recall
            _batch_failed(exc)
            self._memories, self._gone = [], set()

    def see(self, waiting: list[tuple[int, str]]) -> None:
        """The newest memories in scope still waiting for their vectors: (id, content)."""
        self._waiting = waiting

    def embed_with(self, encoder: embed.Embedder, query: str) -> tuple[Any, tuple[Any, Any] | None]:
        """The query's vector, and (memory ids, vectors) of the waiting memories to score
        with it, from one model call."""
        import numpy as np

        try:
            claimed = {m.id: (m, encoder.spans(m.content)) for m in self._memories}
            heads = [(mid, content[slice(*encoder.spans(content)[0])])
                     for mid, content in self._waiting if mid not in claimed]
            texts = [m.content[s:e] for m, spans in claimed.values() for s, e in spans]
            matrix = encoder.embed([query, *texts, *(text for _, text in heads)])
        except Unavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - as above
            _batch_failed(exc)
            self._memories = []
            return encoder.embed([query])[0], None
        plan = _split(list(claimed.values()), matrix, 1)  # row 0 is the query's
        at = 1 + sum(len(chunks) for _, chunks, _ in plan)
        self._plan, self._model = plan, encoder.model
        scored = {mid for mid, _ in self._waiting}
        ids = [m.id for m, chunks, _ in plan if m.id in scored for _ in chunks] + [mid for mid, _ in heads]
        rows = [v for m, _, matrix_ in plan if m.id in scored for v in matrix_]
        rows.extend(matrix[at:])
        if not ids:
            return matrix[0], None
        return matrix[0], (np.asarray(ids, dtype=np.int64), np.asarray(rows, dtype=np.float32))

    def finish(self, store: Store, home: Path) -> None:
        """Store the claimed memories' vectors if they were embedded and complete their
        tasks (and those whose memory is gone); release any other task for a drain; then
        give the lease back."""
        if self._lease is None:
            return
        try:
            plan = self._plan or []
            embedded = {m.id for m, _, _ in plan}
            done = [t for t in self._tasks if t.id in self._gone or (t.target.isdigit() and int(t.target) in embedded)]
            rest = [t for t in self._tasks if t not in done]
            retired = None
            if done:
                with store.write():
                    if plan and self._model is not None:
                        retired = _store_vectors(store, home, self._model, plan)
                    outbox.complete(store, done)
            if retired is not None:
                vectors.retire(home, retired)
            if rest:
                outbox.release(store, rest)
        except Exception as exc:  # noqa: BLE001 - as above: the recall has its answer
            _batch_failed(exc)
        finally:
            self._lease.close()
            self._lease = None


def _batch_failed(exc: Exception) -> None:
    import logging

    logging.getLogger("marm.recall").warning("embedding pending memories during recall failed: %s", exc)


HANDLER = Handler("embed", BATCH, _process)
