"""Diversification: a near-duplicate of a higher result gives way to the next distinct memory."""

from __future__ import annotations

from marm.recall import diverse, lexical

TEXTS = {
    1: "Mel: the road trip was so much fun, the kids loved every mile of the road trip",
    2: "Mel: the kids loved the road trip, so much fun, every mile of it",
    3: "Mel: so much fun on the road trip, the kids loved every mile",
    4: "Mel: we drove all the way to the Grand Canyon and camped by the rim",
}


def test_word_forms_share_stems():
    assert lexical.stems("the kids loved the road trips") == lexical.stems("kid loves road trip")


def test_a_near_duplicate_gives_way_to_the_next_distinct_memory():
    pool = [(0.60, 1), (0.59, 2), (0.58, 3), (0.55, 4)]
    assert [mid for _, mid in pool[:2]] == [1, 2]  # by score alone the repeat comes second
    picked = diverse.rerank(pool, TEXTS, 2)
    assert [mid for _, mid in picked] == [1, 4]
    assert picked[1] == (0.55, 4)  # each keeps its own score
    # A memory well ahead keeps its place even when it repeats a higher one.
    assert [mid for _, mid in diverse.rerank([(0.60, 1), (0.59, 2), (0.30, 4)], TEXTS, 2)] == [1, 2]
