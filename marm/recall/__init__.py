"""Recall: two lanes and one rule, never rerank a literal query.

- exact lane: syntax-shaped queries (``shape.literal_of``) return memories containing
  the stored characters verbatim; nothing matching means an empty answer.
- word/meaning lanes: BM25 over words (``lexical``), fused with vectors when the
  embedding model is available (``hybrid``, ``recall.hybrid``), or vectors alone
  (``semantic``). ``auto`` is exact for syntax-shaped queries, else hybrid.

``run`` picks the lane for a mode and returns the hits with the mode it used. When the
model cannot be loaded, the meaning lanes answer from words with mode
``lexical_only`` and a note saying why; a recall never fails for want of a model.
A process that loaded the model first embeds a small batch of pending memories
(unless a drain is running), so the backlog shrinks as people use recall; the newest
memories still waiting after that (a running drain holds them) are embedded for the
query alone, so a memory written a moment ago never competes without its meaning.
"""

from __future__ import annotations

from dataclasses import dataclass

from marm.errors import BadInput, Unavailable
from marm.recall import lexical
from marm.recall.shape import literal_of
from marm.store import Store
from marm.store import memories as memory_store
from marm.store.memories import Filter
from marm.store.records import Hit

MODES = ("auto", "exact", "lexical", "hybrid", "semantic")
#: Pending embeddings a recall that loaded the model does first (bounded: it is a query).
EMBED_ON_RECALL = 16
#: Memories still waiting for vectors after that (a drain holds them) that a recall
#: embeds for itself, newest first, without storing them.
FRESH_ON_RECALL = 8


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
    if mode == "lexical":
        return Outcome("lexical", words(store, query, flt, limit))
    return meaning(store, query, flt, limit, semantic_only=mode == "semantic", embed_backlog=embed_backlog)


def meaning(store: Store, query: str, flt: Filter, limit: int, semantic_only: bool = False,
            embed_backlog: bool = True) -> Outcome:
    """The hybrid (or semantic) lane; words only, marked ``lexical_only``, without a model."""
    # start-up cost: the lexical and exact lanes load neither the encoder nor numpy
    from marm.embed.drain import embed_pending, encoder_for, unstored
    from marm.recall import hybrid

    home = store.path.parent
    try:
        encoder = encoder_for(store, home)
    except Unavailable as exc:
        return Outcome("lexical_only", words(store, query, flt, limit, retrieval_mode="lexical_only"),
                       note=f"answered from words only: {exc.message}")
    fresh = None
    try:
        if embed_backlog:
            embed_pending(store, home, encoder, EMBED_ON_RECALL)
            fresh = unstored(store, encoder, flt, FRESH_ON_RECALL)
    except Exception as exc:  # noqa: BLE001 - helping the backlog must never fail a recall
        import logging

        logging.getLogger("marm.recall").warning("embedding pending memories during recall failed: %s", exc)
    hits = hybrid.search(store, home, encoder, query, flt, limit, semantic_only=semantic_only,
                         fresh=[fresh] if fresh is not None else [])
    return Outcome("semantic" if semantic_only else "hybrid", hits)


def exact(store: Store, text: str, flt: Filter, limit: int) -> Outcome:
    """Literal matches, most occurrences first, then newest. Never a near miss."""
    found, retrieval_mode = memory_store.search_literal(store, text, flt, limit=max(limit * 20, 200))
    ranked = sorted(found, key=lambda m: (m.content != text, -m.content.count(text)))
    hits = [Hit(m, float(m.content.count(text)), retrieval_mode) for m in ranked[:limit]]
    return Outcome("exact", hits)


def words(
    store: Store, query: str, flt: Filter, limit: int, retrieval_mode: str = "lexical"
) -> list[Hit]:
    expression = lexical.fts_query(query)
    if expression is None:
        return []
    return [Hit(m, score, retrieval_mode) for m, score in memory_store.search_words(store, expression, flt, limit)]
