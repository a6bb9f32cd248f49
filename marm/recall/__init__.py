"""Recall: two lanes and one rule, never rerank a literal query.

- exact lane: syntax-shaped queries (``shape.literal_of``) return memories containing
  the stored characters verbatim; nothing matching means an empty answer.
- word/meaning lanes: BM25 over words (``lexical``), fused with vectors when the
  embedding model is available (``hybrid``, added by the embeddings layer).

``run`` picks the lane for a mode and returns the hits with the mode it used.
"""

from __future__ import annotations

from dataclasses import dataclass

from marm.errors import BadInput
from marm.recall import lexical
from marm.recall.shape import literal_of
from marm.store import Store
from marm.store import memories as memory_store
from marm.store.memories import Filter
from marm.store.records import Hit

MODES = ("auto", "exact", "lexical", "hybrid", "semantic")


@dataclass(frozen=True, slots=True)
class Outcome:
    mode: str                 # the lane that answered
    hits: list[Hit]
    note: str | None = None   # why a lane was not used, for the caller to show


def run(store: Store, query: str, flt: Filter, limit: int, mode: str = "auto") -> Outcome:
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
    return Outcome(
        "lexical_only",
        words(store, query, flt, limit, retrieval_mode="lexical_only"),
        note="the meaning lane is not available; answered from words only",
    )


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
