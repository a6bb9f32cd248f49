"""The hygiene sweep of ``marm drain``: each new memory against its nearest neighbours.

It runs after the outbox tasks (so new memories have their vectors and concepts) and
after the code sweep (so the code graph is current), and it is never on the write
path: ``marm log`` and the hooks only insert. Work is bounded per new memory: the
``NEIGHBOURS`` most similar memories of its project by meaning, plus the few memories
whose words hold the object of a reversal it states (an index lookup), never all
memories. A mark (the highest memory id checked) makes the sweep incremental and safe
to kill: a memory checked twice finds its proposals already queued (value-keyed).

For a new memory and each candidate:

- near-duplicate (same tier, cosine >= ``DUP_MEANING`` and ``similar.near_duplicate``;
  an episode and the highlight kept from it are the two tiers of one turn, not
  duplicates): two hook captures are merged at once into the earliest; anything a
  person wrote is proposed.
- reversal (``similar.reverses`` plus a shared subject: a concept entity or an
  identifier both name, or cosine >= ``TOPIC_MEANING``): the older one is superseded at
  once when both are captures of the same session, and proposed otherwise.
- code baseline: the files and symbols it names are kept for the staleness check.

It also discards the compaction summaries an agent staged and nobody applied or
discarded within ``summarize.staged_days`` (``store.summaries.expire_after``).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any

from marm.config import derived_path
from marm.context import Ctx
from marm.hygiene import actions, similar, stale
from marm.recall.lexical import words as query_words
from marm.store import concept_graph, hygiene, memories, recall_reads, summaries, vecfile, vectors
from marm.store.db import Store
from marm.store.memories import Filter
from marm.store.records import Memory

log = logging.getLogger("marm.hygiene")

NEIGHBOURS = 8
#: Cosine from which two memories may be near-duplicates (their words decide).
DUP_MEANING = 0.88
#: Least share of shared content words (Jaccard) for a near-duplicate.
DUP_WORDS = 0.5
#: Cosine that counts as "the same subject" when no entity or identifier is shared.
TOPIC_MEANING = 0.5
#: Memories read per step (the mark advances after each step).
BATCH = 200


class _Vectors:
    """The project's vector matrices, loaded once per sweep (memory-mapped)."""

    def __init__(self, ctx: Ctx) -> None:
        import numpy as np

        self.np = np
        self.ctx = ctx
        self.model = ctx.setting("embed.model")
        self.parts: dict[str | None, list[tuple[Any, Any]]] = {}

    def of(self, memory: Memory) -> Any | None:
        return vectors.of_memory(self.ctx.store(), self.ctx.home, self.model, memory.id)

    def nearest(self, memory: Memory, mine: Any, k: int) -> dict[int, float]:
        """{id: best-chunk cosine} of the ``k`` memories of the same project closest to ``mine``."""
        np = self.np
        if memory.project not in self.parts:
            self.parts[memory.project] = vectors.load(self.ctx.store(), self.ctx.home, self.model,
                                                      int(mine.shape[1]), [memory.project])
        best: dict[int, float] = {}
        for ids, matrix in self.parts[memory.project]:
            if not len(ids):
                continue
            sims = (np.asarray(matrix) @ mine.T).max(axis=1)
            take = min(len(sims), k * 3 + 2)
            idx = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
            for mid, s in zip(ids[idx].tolist(), sims[idx].tolist(), strict=True):
                if mid not in (memory.id, vecfile.DEAD) and s > best.get(mid, -2.0):
                    best[mid] = float(s)
        return dict(sorted(best.items(), key=lambda kv: -kv[1])[:k])


def _by_words(store: Store, memory: Memory, limit: int = 5) -> set[int]:
    """Memories of the same project holding every word of a reversal's object."""
    out: set[int] = set()
    for r in similar.reversals(memory.content):
        terms = query_words(r.obj)
        if not terms:
            continue
        expr = " AND ".join(recall_reads.phrase(t) for t in terms[:3])
        flt = Filter(project=memory.project)
        out.update(m.id for m, _ in memories.search_words(store, expr, flt, limit) if m.project == memory.project)
    out.discard(memory.id)
    return out


def _entities(graph: concept_graph.Graph | None, memory_id: int) -> set[str]:
    if graph is None:
        return set()
    names, _ = graph.contribution(memory_id)
    return {n.lower() for n in names}


def _same_tier(a: Memory, b: Memory) -> bool:
    """Both episodes or neither: an episode holds the highlights kept from its turn."""
    return (a.kind == "episode") == (b.kind == "episode")


def _older_newer(a: Memory, b: Memory) -> tuple[Memory, Memory]:
    return (a, b) if (a.recorded_at, a.id) <= (b.recorded_at, b.id) else (b, a)


def check(ctx: Ctx, memory: Memory, vecs: _Vectors, graph: concept_graph.Graph | None,
          code: stale.Baselines, counts: Counter[str]) -> None:
    """Compare one new memory with its neighbours; queue or apply what it finds."""
    store = ctx.store()
    mine = vecs.of(memory)
    near = vecs.nearest(memory, mine, NEIGHBOURS) if mine is not None else {}
    candidates = memories.get_many(store, [*near, *_by_words(store, memory)])
    mine_entities: set[str] | None = None
    for other in candidates.values():
        current = memories.get(store, memory.id)
        if current is None or current.status not in memories.VISIBLE_STATUSES:
            return  # merged or superseded by an earlier candidate
        if other.status not in memories.VISIBLE_STATUSES or other.project != memory.project:
            continue
        older, newer = _older_newer(other, current)
        meaning = near.get(other.id)
        if meaning is not None and meaning >= DUP_MEANING and _same_tier(older, newer) and similar.near_duplicate(
                older.content, newer.content, DUP_WORDS):
            _duplicate(store, older, newer, meaning, counts)
            continue
        cue = similar.reverses(newer.content, older.content)
        if cue is None:
            continue
        if mine_entities is None:
            mine_entities = _entities(graph, memory.id)
        shared = (mine_entities & _entities(graph, other.id)) | (
            similar.subject_terms(newer.content) & similar.subject_terms(older.content))
        if not shared and (meaning is None or meaning < TOPIC_MEANING):
            continue
        _reversal(store, older, newer, cue, sorted(shared)[:5], meaning, counts)
    if memory.project is not None:
        counts["code baselines"] += code.add(memory)


def _duplicate(store: Store, older: Memory, newer: Memory, meaning: float, counts: Counter[str]) -> None:
    auto = actions.is_capture(older) and actions.is_capture(newer)
    a, b = sorted((older.content_hash, newer.content_hash))
    detail = {"meaning": round(meaning, 3), "words": round(similar.word_overlap(older.content, newer.content), 3)}
    with store.write():
        item = hygiene.propose(store, "duplicate", older.project, newer.id, older.id, a, b, detail,
                               state="auto" if auto else "open")
        if item is None:
            return
        if auto:
            actions.merge(store, older, newer, f"duplicate of #{older.id} (automatic: both captured by hooks)")
    counts["duplicates merged" if auto else "duplicates proposed"] += 1


def _reversal(store: Store, older: Memory, newer: Memory, cue: similar.Reversal, shared: list[str],
              meaning: float | None, counts: Counter[str]) -> None:
    auto = (actions.is_capture(older) and actions.is_capture(newer) and older.session is not None
            and older.session == newer.session)
    detail = {"cue": cue.cue, "object": cue.obj, "shared": shared,
              **({"meaning": round(meaning, 3)} if meaning is not None else {})}
    with store.write():
        item = hygiene.propose(store, "contradiction", older.project, older.id, newer.id,
                               older.content_hash, newer.content_hash, detail, state="auto" if auto else "open")
        if item is None:
            return
        if auto:
            actions.supersede(store, older, newer, f"reversed by #{newer.id} ({cue.cue} {cue.obj}) in the same session")
    counts["reversals superseded" if auto else "reversals proposed"] += 1


def sweep(ctx: Ctx, deadline: float) -> dict[str, Any]:
    """Check the memories written since the last sweep, then refresh staleness flags."""
    store = ctx.store()
    counts: Counter[str] = Counter()
    upto = int(hygiene.mark(store, "checked_upto") or 0)
    vecs = _Vectors(ctx)
    code = stale.Baselines(ctx)
    path = derived_path(ctx.home)
    graph = concept_graph.Graph.open(path) if path.exists() else None
    try:
        while time.monotonic() < deadline:
            ids = hygiene.memories_after(store, upto, BATCH)
            if not ids:
                break
            for memory in memories.get_many(store, ids).values():
                if memory.status in memories.VISIBLE_STATUSES:
                    check(ctx, memory, vecs, graph, code, counts)
                    counts["checked"] += 1
            upto = ids[-1]
            hygiene.set_mark(store, "checked_upto", str(upto))
        counts["flagged stale"] += stale.refresh(ctx)
        counts["staged summaries expired"] += summaries.expire_after(store, ctx.number("summarize.staged_days", lenient=True))
    finally:
        code.close()
        if graph is not None:
            graph.close()
    return dict(counts)
