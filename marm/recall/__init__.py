"""Recall: two lanes and one rule, never rerank a literal query.

- exact lane: syntax-shaped queries (``shape.literal_of``) return memories containing
  the stored characters verbatim; nothing matching means an empty answer.
- a sentence that holds a literal ("why does ``src/routes/[id]/+page.ts`` load
  twice?") goes to the word and meaning lanes with the literal strongly boosted: the
  memories in scope holding every such piece (``shape.literals_in``) rank first.
- word/meaning lanes: BM25 over words (``lexical``), fused with vectors when the
  embedding model is available (``hybrid``, ``recall.hybrid``), or vectors alone
  (``semantic``). ``auto`` is exact for syntax-shaped queries, else hybrid.

``run`` picks the lane for a mode and returns the hits with the mode it used. When the
model cannot be loaded, the meaning lanes answer from words with mode
``lexical_only`` and a note saying why; a recall never fails for want of a model.
A recall by meaning also embeds a small batch of pending memories (unless a drain is
running) and stores their vectors, so the backlog shrinks as people use recall, and the
newest memories still waiting in scope (a running drain holds them) for the query
alone, so a memory written a moment ago never competes without its meaning; all of it
in the query's own model call (``marm.embed.drain.QueryBatch``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from marm import config
from marm.errors import BadInput, Unavailable
from marm.recall import lexical
from marm.recall.shape import COMMON_LITERAL, holding, literal_of, literals_in
from marm.store import Store, flags, recall_reads
from marm.store import memories as memory_store
from marm.store.memories import Filter
from marm.store.records import Hit

MODES = ("auto", "exact", "lexical", "hybrid", "semantic")
#: Pending embeddings a recall that loaded the model does first (bounded: it is a query).
EMBED_ON_RECALL = 16


@dataclass(frozen=True, slots=True)
class Outcome:
    mode: str                 # the lane that answered
    hits: list[Hit]
    note: str | None = None   # why a lane was not used, for the caller to show


def run(store: Store, query: str, flt: Filter, limit: int, mode: str = "auto",
        embed_backlog: bool = True) -> Outcome:
    """Recall ``query`` in ``mode``; ``embed_backlog=False`` skips embedding pending
    memories, stored or for the query alone (a hook has no time for it: its memories
    not embedded yet are judged by their words)."""
    if mode not in MODES:
        raise BadInput(f"unknown recall mode {mode!r}; use one of {', '.join(MODES)}")
    if not query.strip():
        raise BadInput("the query is empty")
    if "\x00" in query:
        raise BadInput("the query contains a NUL byte")
    literal = literal_of(query)
    if mode == "exact" or (mode == "auto" and literal is not None):
        return exact(store, literal if literal is not None else query, flt, limit)
    pieces = literals_in(query) if mode != "semantic" else []
    if mode == "lexical":
        return Outcome("lexical", words(store, query, flt, limit, pieces=pieces))
    return meaning(store, query, flt, limit, semantic_only=mode == "semantic", embed_backlog=embed_backlog,
                   pieces=pieces)


def meaning(store: Store, query: str, flt: Filter, limit: int, semantic_only: bool = False,
            embed_backlog: bool = True, pieces: Sequence[str] = ()) -> Outcome:
    """The hybrid (or semantic) lane; words only, marked ``lexical_only``, without a model.
    The memories holding every literal ``pieces`` of the query rank first (``shape.holding``)."""
    # start-up cost: the lexical and exact lanes load neither the encoder nor numpy
    from marm.embed.drain import QueryBatch, encoder_soon
    from marm.recall import hybrid

    home = store.path.parent
    saved = flags.all_saved(store)  # read once: the encoder's settings and the episodes' half-life
    batch = QueryBatch() if embed_backlog else None
    try:
        # The model may still be loading on a thread: the word side of the search reads
        # the store meanwhile, and the query's embedding (on hybrid's worker) waits for it,
        # with the pending memories claimed here and the newest still waiting in scope.
        encoder = encoder_soon(store, home, saved=saved)
        if batch is not None:
            batch.claim(store, home, EMBED_ON_RECALL)
        hits = hybrid.search(store, home, encoder, query, flt, limit, semantic_only=semantic_only, pieces=pieces,
                             episode_half_life_days=_half_life(saved), fresh=batch)
    except Unavailable as exc:
        return Outcome("lexical_only", words(store, query, flt, limit, retrieval_mode="lexical_only", pieces=pieces),
                       note=f"answered from words only: {exc.message}")
    finally:
        if batch is not None:
            batch.finish(store, home)
    return Outcome("semantic" if semantic_only else "hybrid", hits)


def exact(store: Store, text: str, flt: Filter, limit: int) -> Outcome:
    """Literal matches, most occurrences first, then newest. Never a near miss."""
    found, retrieval_mode = memory_store.search_literal(store, text, flt, limit=max(limit * 20, 200))
    ranked = sorted(found, key=lambda m: (m.content != text, -m.content.count(text)))
    hits = [Hit(m, float(m.content.count(text)), retrieval_mode) for m in ranked[:limit]]
    return Outcome("exact", hits)


def words(
    store: Store, query: str, flt: Filter, limit: int, retrieval_mode: str = "lexical",
    pieces: Sequence[str] = (),
) -> list[Hit]:
    """BM25 matches of the query's words, in one statement with the holders of its
    literal ``pieces``; when some memories hold them all (``shape.holding``), those
    first (word matches first among them), then the other word matches."""
    expression = lexical.fts_query(lexical.without_exceptions(query))
    if expression is None:
        return []
    found, held = recall_reads.word_hits(store, expression, flt, max(limit * 20, 200) if pieces else limit,
                                         pieces, COMMON_LITERAL)
    only = holding([[m.id for m in ms] for ms in held])
    if only is None:
        return [Hit(m, score, retrieval_mode) for m, score in found[:limit]]
    ranked = [Hit(m, score, retrieval_mode) for m, score in found if m.id in only]
    holders = {m.id: m for ms in held for m in ms}
    # the holders no word matched, by id (the order a look-up by id returned them in)
    rest = sorted(only - {h.memory.id for h in ranked})
    ranked.extend(Hit(holders[mid], 0.0, retrieval_mode) for mid in rest)
    ranked.extend(Hit(m, score, retrieval_mode) for m, score in found if m.id not in only)
    return ranked[:limit]


def _half_life(saved: dict[str, str]) -> float:
    """``recall.episode_half_life_days`` as saved for the whole machine or in the
    environment (recall sees the store, not the invocation's project settings)."""
    spec = config.SETTINGS["recall.episode_half_life_days"]
    return spec.number_or_default(config.resolve(spec.key, saved, os.environ).value)
