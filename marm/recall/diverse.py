"""Diversify the top of a ranking: a near-duplicate of a higher result gives way.

A conversation circles a topic: five turns about the same trip share most of their
words, and together they fill a top 5 that the one turn saying where the trip went
does not reach. Maximal marginal relevance (Carbonell and Goldstein, 1998) picks the
results one by one, each time the candidate whose score minus ``PENALTY`` times its
likeness to an already picked result is highest. Likeness is the overlap of the two
memories' word stems (Jaccard), so it needs no vectors and means the same for
memories not embedded yet. A memory that says something new keeps its place; one that
repeats a higher result moves down by at most ``PENALTY``.
"""

from __future__ import annotations

from marm.recall import lexical

#: How far a memory that repeats a higher one (all its stems shared) moves down.
PENALTY = 0.08


def likeness(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two stem sets (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def rerank(pool: list[tuple[float, int]], texts: dict[int, str], limit: int,
           penalty: float = PENALTY) -> list[tuple[float, int]]:
    """The ``limit`` best of ``pool`` ((score, id), best first) picked by maximal marginal
    relevance over ``texts``; each keeps its own score."""
    words = {mid: lexical.stems(texts.get(mid, "")) for _, mid in pool}
    left = list(pool)
    picked: list[tuple[float, int]] = []
    while left and len(picked) < limit:
        def marginal(item: tuple[float, int]) -> float:
            crowd = max((likeness(words[item[1]], words[mid]) for _, mid in picked), default=0.0)
            return item[0] - penalty * crowd

        best = max(left, key=marginal)
        picked.append(best)
        left.remove(best)
    return picked
