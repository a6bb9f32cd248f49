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
A process that loaded the model first embeds a small batch of pending memories
(unless a drain is running), so the backlog shrinks as people use recall; the newest
memories still waiting after that (a running drain holds them) are embedded for the
query alone, so a memory written a moment ago never competes without its meaning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from marm import config
from marm.errors import BadInput, Unavailable
from marm.recall import lexical
from marm.recall.shape import literal_of, literals_in
from marm.store import Store, flags
from marm.store import memories as memory_store
from marm.store.memories import Filter
from marm.store.records import Hit

MODES = ("auto", "exact", "lexical", "hybrid", "semantic")
#: Pending embeddings a recall that loaded the model does first (bounded: it is a query).
EMBED_ON_RECALL = 16
#: A literal piece of a sentence held by this many memories says little and is not boosted.
COMMON_LITERAL = 200
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
    if mode != "lexical":
        from marm.embed.drain import start_encoder  # start-up cost: see ``meaning``

        start_encoder(store, store.path.parent)  # it loads while the literals are looked up
    only = holders(store, literals_in(query), flt) if mode != "semantic" else None
    if mode == "lexical":
        return Outcome("lexical", words(store, query, flt, limit, only=only))
    return meaning(store, query, flt, limit, semantic_only=mode == "semantic", embed_backlog=embed_backlog,
                   only=only)


def holders(store: Store, pieces: list[str], flt: Filter) -> set[int] | None:
    """The memories in scope holding every literal piece of a sentence, or None when no
    memory does (the question is then answered without them). A piece held by more
    than ``COMMON_LITERAL`` memories says little and is left out."""
    found: set[int] | None = None
    for piece in pieces:
        hits, _ = memory_store.search_literal(store, piece, flt, limit=COMMON_LITERAL)
        if len(hits) >= COMMON_LITERAL:
            continue
        ids = {m.id for m in hits}
        found = ids if found is None else found & ids
    return found or None


def meaning(store: Store, query: str, flt: Filter, limit: int, semantic_only: bool = False,
            embed_backlog: bool = True, only: set[int] | None = None) -> Outcome:
    """The hybrid (or semantic) lane; words only, marked ``lexical_only``, without a model.
    ``only``: when given, these memories rank first (``holders``)."""
    # start-up cost: the lexical and exact lanes load neither the encoder nor numpy
    from marm.embed.drain import embed_pending, encoder_soon, unstored
    from marm.recall import hybrid

    home = store.path.parent
    try:
        # The model may still be loading on a thread: the word side of the search reads
        # the store meanwhile, and the query's embedding (on hybrid's worker) waits for it.
        encoder = encoder_soon(store, home)
        fresh = None
        try:
            if embed_backlog:
                embed_pending(store, home, encoder, EMBED_ON_RECALL)
                fresh = unstored(store, encoder, flt, FRESH_ON_RECALL)
        except Unavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - helping the backlog must never fail a recall
            import logging

            logging.getLogger("marm.recall").warning("embedding pending memories during recall failed: %s", exc)
        hits = hybrid.search(store, home, encoder, query, flt, limit, semantic_only=semantic_only, only=only,
                             episode_half_life_days=_half_life(store), fresh=[fresh] if fresh is not None else [])
    except Unavailable as exc:
        return Outcome("lexical_only", words(store, query, flt, limit, retrieval_mode="lexical_only", only=only),
                       note=f"answered from words only: {exc.message}")
    return Outcome("semantic" if semantic_only else "hybrid", hits)


def exact(store: Store, text: str, flt: Filter, limit: int) -> Outcome:
    """Literal matches, most occurrences first, then newest. Never a near miss."""
    found, retrieval_mode = memory_store.search_literal(store, text, flt, limit=max(limit * 20, 200))
    ranked = sorted(found, key=lambda m: (m.content != text, -m.content.count(text)))
    hits = [Hit(m, float(m.content.count(text)), retrieval_mode) for m in ranked[:limit]]
    return Outcome("exact", hits)


def words(
    store: Store, query: str, flt: Filter, limit: int, retrieval_mode: str = "lexical",
    only: set[int] | None = None,
) -> list[Hit]:
    """BM25 matches of the query's words; with ``only``, those memories first (word matches
    first among them), then the other word matches."""
    expression = lexical.fts_query(lexical.without_exceptions(query))
    if expression is None:
        return []
    found = memory_store.search_words(store, expression, flt, limit if only is None else max(limit * 20, 200))
    if only is None:
        return [Hit(m, score, retrieval_mode) for m, score in found]
    ranked = [Hit(m, score, retrieval_mode) for m, score in found if m.id in only]
    rest = memory_store.get_many(store, sorted(only - {h.memory.id for h in ranked}, reverse=True))
    ranked.extend(Hit(m, 0.0, retrieval_mode) for m in rest.values())
    ranked.extend(Hit(m, score, retrieval_mode) for m, score in found if m.id not in only)
    return ranked[:limit]


def _half_life(store: Store) -> float:
    """``recall.episode_half_life_days`` as saved for the whole machine or in the
    environment (recall sees the store, not the invocation's project settings)."""
    value = config.resolve("recall.episode_half_life_days", flags.all_saved(store), os.environ).value
    try:
        return float(value)
    except ValueError:
        return float(config.SETTINGS["recall.episode_half_life_days"].default)
