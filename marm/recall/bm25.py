"""BM25 arithmetic the word lane needs beside FTS5's own ``bm25()``.

FTS5 ranks; this module decides how little of the index it has to rank (``prunable``:
common terms whose summed bound cannot lift a memory into the answer) and turns a raw
bm25 into a share of the query (``idf`` sums).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from marm.store import Store, recall_reads
from marm.store.memories import Filter
from marm.store.recall_reads import Neighbours, WordMatches, WordStats

#: FTS5's bm25 k1: one term adds less than ``(k1 + 1) * idf`` to a memory's score.
K1 = 1.2


def idf(total: int, n: int) -> float:
    """A term's IDF as FTS5's bm25 computes it."""
    return max(1e-6, math.log((total - n + 0.5) / (n + 0.5)))


def prunable(terms: Sequence[str], total: int, df: dict[str, int], inner: int) -> list[str]:
    """The most common ``terms`` that are worth ranking without (see ``marm.store.recall_reads.word_matches``).

    Their summed bound must stay below an estimate of the ``inner``-th best score: what
    a memory holding each rarer term once at average length scores (the sum of their
    IDFs), but no more than ``log(total / inner)``, above which fewer than ``inner``
    memories would hold such terms if words were independent. A wrong guess costs a
    second ranking, never a wrong answer. Only terms in more than ``inner`` memories
    are worth it, and the rarer terms must be in at least ``inner`` memories.
    """
    ranked = sorted((t for t in terms if df.get(t, 0) > inner), key=lambda t: -df[t])
    rest = sum(idf(total, df[t]) for t in terms if df.get(t, 0))
    cap = math.log(max(1.0, total / inner))
    common: list[str] = []
    bound = 0.0
    for term in ranked:
        term_idf = idf(total, df[term])
        if (bound + (K1 + 1) * term_idf >= min(rest - term_idf, cap)
                or sum(df.get(t, 0) for t in terms if t not in common and t != term) < inner):
            break
        common.append(term)
        bound += (K1 + 1) * term_idf
        rest -= term_idf
    return common


def plan(terms: Sequence[str], stats: WordStats, inner: int) -> tuple[list[str], float]:
    """(the terms worth ranking without, the most they alone can score) for the
    ``inner`` best matches of ``terms`` (``prunable``)."""
    common = prunable(terms, stats.total, stats.df, inner)
    return common, sum((K1 + 1) * idf(stats.total, stats.df[t]) for t in common)


def matches(store: Store, terms: Sequence[str], flt: Filter, limit: int,
            stats: WordStats | None = None) -> WordMatches:
    """(memory id, -bm25) of the ``limit`` best matches of any of ``terms`` that ``flt``
    lets a recall see, with their session neighbours. ``stats`` is what the recall
    read model's first statement counted for ``terms`` (``recall_reads.facts``), read
    here when the caller has none."""
    if not terms:
        return WordMatches([], Neighbours())
    stats = stats or recall_reads.facts(store, flt, terms=terms).words
    common, bound = plan(terms, stats, limit * 4)
    return recall_reads.word_matches(store, terms, flt, limit, common, bound)
