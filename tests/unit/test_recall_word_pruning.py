"""The BM25 lane ranks without its most common words only when that cannot change the answer."""

from __future__ import annotations

import random

from marm.recall import bm25
from marm.store import memories, recall_reads
from marm.store.memories import Filter
from marm.text import content_hash

FILLER = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()


def _fill(store, notes: list[str], project: str = "p") -> None:
    with store.write():
        for text in notes:
            memories.insert(store, content=text, content_hash=content_hash(text), kind="note",
                            session=None, project=project)


def _full(store, terms: list[str], limit: int) -> list[tuple[int, float]]:
    """The plain query: FTS5 ranks every match of the OR of all terms."""
    expression = " OR ".join(f'"{t}"' for t in terms)
    return [(r[0], -r[1]) for r in store.conn.execute(
        "SELECT rowid, bm25(memories_fts) AS r FROM memories_fts WHERE memories_fts MATCH ?"
        " ORDER BY r LIMIT ?", (expression, limit))]


def _stats(store, terms):
    return recall_reads.facts(store, Filter(project="p"), terms=terms).words


def _work(store, run) -> tuple[list[tuple[int, float]], int]:
    """``run()``'s ranked matches and how much SQLite did for them (virtual machine
    steps, in hundreds: ranking a match costs steps, a part that does not run none)."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    store.conn.set_progress_handler(count, 100)
    try:
        got = run()
    finally:
        store.conn.set_progress_handler(None, 100)
    return got.ranked, steps[0]


def _unpruned(store, terms):
    return _work(store, lambda: recall_reads.word_matches(store, terms, Filter(project="p"), 10))


def _same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    assert [round(s, 9) for _, s in got] == [round(s, 9) for _, s in want]
    # ids agree except among memories tied on the last score (either may take the last place)
    last = want[-1][1]
    assert {m for m, s in want if s > last + 1e-9} <= {m for m, _ in got}


def test_common_words_are_left_out_of_ranking_and_the_answer_is_unchanged(ctx):
    store = ctx.store()
    rng = random.Random(1)
    notes = []
    for i in range(400):
        words = rng.sample(FILLER, 4)
        if i % 4 != 3:
            words.append("deploy")  # in three quarters of the memories: common
        if i % 5 == 0:
            words.append("rollback")
        if i % 7 == 0:
            words.append("canary")
        notes.append(" ".join(words) + f" step{i}")
    _fill(store, notes)
    terms = ["deploy", "rollback", "canary"]
    stats = _stats(store, terms)
    assert bm25.prunable(terms, stats.total, stats.df, 40) == ["deploy"]
    df = stats.df
    assert df["deploy"] == 300 and df["rollback"] + df["canary"] < 300 - 40  # fewer rows ranked
    got, work = _work(store, lambda: bm25.matches(store, terms, Filter(project="p"), 10, stats))
    # the same statement with a bound no match can pass: the full ranking runs after the parts
    _, failed_work = _work(store, lambda: recall_reads.word_matches(store, terms, Filter(project="p"), 10,
                                                                    ["deploy"], bound=1e9))
    assert work < failed_work, (work, failed_work)  # here it did not run
    _same(got, _full(store, terms, 10))
    assert all("rollback" in notes[m - 1] or "canary" in notes[m - 1] for m, _ in got)


def test_a_wrong_guess_falls_back_to_ranking_every_match(ctx):
    """Long memories holding the rare word score below short ones holding only the common
    word: the bound does not hold, and the plain ranking must answer."""
    store = ctx.store()
    notes = [("rollback " + " ".join(FILLER * 5)) + f" n{i}" for i in range(45)]
    notes += [f"deploy {FILLER[i % len(FILLER)]} m{i}" for i in range(130)]
    notes += [f"{FILLER[i % len(FILLER)]} {FILLER[(i + 3) % len(FILLER)]} o{i}" for i in range(225)]
    _fill(store, notes)
    terms = ["deploy", "rollback"]
    stats = _stats(store, terms)
    assert bm25.prunable(terms, stats.total, stats.df, 40) == ["deploy"]  # the guess is tried ...
    got, work = _work(store, lambda: bm25.matches(store, terms, Filter(project="p"), 10, stats))
    _, plain_work = _unpruned(store, terms)
    assert work > plain_work  # ... found wanting: everything is ranked after it
    _same(got, _full(store, terms, 10))
    assert all(notes[m - 1].startswith("deploy") for m, _ in got)  # and the short ones win


def test_the_indexed_count_is_the_number_of_memories(ctx):
    store = ctx.store()
    assert _stats(store, []).total == 0
    _fill(store, [f"note number {i}" for i in range(300)])
    with store.write():
        for mid in (5, 17, 200):
            memories.delete(store, mid)
    assert _stats(store, []).total == 297 == store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    assert _stats(store, ["note", "number", "absent"]) == recall_reads.WordStats(
        297, {"note": 297, "number": 297, "absent": 0})
    fts_rows = store.conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0]
    assert _stats(store, []).total == fts_rows  # the count bm25's IDF uses


def _common_by_counting_everything(store, flt, terms, share):
    """The definition: count the scope, then each term's matches in it."""
    where, args = flt.where()
    total = store.conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", args).fetchone()[0]
    out = []
    for term in terms:
        n = store.conn.execute(f"SELECT count(*) FROM memories_fts f JOIN memories m ON m.id = f.rowid"
                               f" WHERE memories_fts MATCH ? AND {where}", [f'"{term}"', *args]).fetchone()[0]
        if n > int(share * total):
            out.append(term)
    return out


def test_common_terms_count_only_what_the_answer_needs_and_agree_with_the_definition(ctx):
    store = ctx.store()
    rng = random.Random(3)
    names = {"ana": 0.5, "ben": 0.06, "coco": 0.04, "dora": 0.01, "eve": 0.0}
    for project, size in (("p", 300), ("q", 120), (None, 30)):
        notes = [" ".join([*rng.sample(FILLER, 3), *(n for n, p in names.items() if rng.random() < p)])
                 for _ in range(size)]
        _fill(store, notes, project=project)
    _fill(store, ["ben ben ben"] * 40, project="q")  # common in q, and so in the whole store
    terms = list(names)
    checked = 0
    for flt in (Filter(project="p"), Filter(project="q"), Filter(project=None), Filter(all_projects=True)):
        for share in (0.01, 0.05, 0.2, 0.45):
            want = _common_by_counting_everything(store, flt, terms, share)
            assert recall_reads.facts(store, flt, names=terms, share=share).common(share) == set(want)
            checked += bool(want) and len(want) < len(terms) - 1
    assert checked >= 4  # the cases separate common from rare names, not all one way
