"""The recall read model: every query the hybrid lane makes, with typed rows.

What a ranking needs from the store, and nothing else: word statistics (how many
memories hold each term, how many memories there are), the best BM25 matches, session
neighbours (the memories just before and after, and whether one asks), the text and
validity time a score reads, which memories a filter lets a recall see, and the
memories valid at a date. The ranking maths (BM25's IDF and bounds, the fused score)
is ``marm.recall``'s; matrix files of vectors are ``marm.store.vectors``'.

The number of memories the word index holds comes from ``memory_count``, a one-row
table its own triggers keep (migration 3): bm25's IDF counts the same rows, and reading
one row beats counting an index (milliseconds at 100k memories).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from marm.store.db import Store
from marm.store.memories import COLUMNS, Filter, to_memory
from marm.store.records import Memory


@dataclass(frozen=True, slots=True)
class WordStats:
    """What bm25's IDF reads: memories indexed, and per term the memories holding it."""

    total: int
    df: dict[str, int]


@dataclass(frozen=True, slots=True)
class Neighbours:
    """Session neighbours: ``before[id]`` is the memory just before ``id``, ``after[id]``
    the one just after; ``asking`` holds the ids whose text asks something (a "?")."""

    before: dict[int, int]
    after: dict[int, int]
    asking: set[int]


@dataclass(frozen=True, slots=True)
class Scoring:
    """What the fused score reads of a memory: its text and its validity time."""

    content: str
    valid_at: str


def phrase(term: str) -> str:
    """``term`` as one FTS5 phrase (quotes doubled)."""
    return '"' + term.replace('"', '""') + '"'


def indexed(store: Store) -> int:
    """How many memories the word index holds (``memory_count``, kept by triggers)."""
    row = store.conn.execute("SELECT n FROM memory_count WHERE id = 1").fetchone()
    return int(row[0]) if row else 0


def word_stats(store: Store, terms: Sequence[str]) -> WordStats:
    """(memories indexed, {term: memories containing it}) from the word index, for IDF:
    one statement, however many terms."""
    each = "".join(", (SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?)" for _ in terms)
    row = store.conn.execute(f"SELECT (SELECT n FROM memory_count WHERE id = 1){each}",
                             [phrase(t) for t in terms]).fetchone()
    return WordStats(int(row[0] or 0), {t: int(n) for t, n in zip(terms, row[1:], strict=True)})


def common_terms(store: Store, flt: Filter, terms: Sequence[str], share: float) -> list[str]:
    """The ``terms`` that more than ``share`` of the memories ``flt`` lets a recall see
    contain (``n > int(share * in_scope)``).

    Counting the memories in scope walks an index (15 ms at 100k), so nothing is counted
    further than the answer needs: a term's matches in scope up to the bound the whole
    index allows (past it, the term is common whatever the scope holds), then the scope
    only up to the size at which those matches stop being common.
    """
    where, args = flt.where()
    ceiling = int(share * indexed(store))  # the bound if every memory were in scope
    found: dict[str, int] = {}
    for term in terms:
        found[term] = int(store.conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM memories_fts f JOIN memories m ON m.id = f.rowid"
            f" WHERE memories_fts MATCH ? AND {where} LIMIT ?)", [phrase(term), *args, ceiling + 1]).fetchone()[0])
    need = max((n for n in found.values() if n <= ceiling), default=0)
    enough = int(need / share) + 1 if need else 0
    while need and int(share * enough) < need:  # the scope size whose bound reaches every count
        enough += 1
    scope = int(store.conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {where} LIMIT ?)",
                                   [*args, enough]).fetchone()[0]) if enough else 0
    return [t for t, n in found.items() if n > ceiling or (n and n > int(share * scope))]



def _best_matches(store: Store, terms: Sequence[str], inner: int, common: Sequence[str],
                  bound: float) -> list[tuple[int, float]]:
    """The ``inner`` best ``(rowid, bm25)`` matches of the OR of ``terms`` in the whole index.

    ``common`` and ``bound`` are ``marm.recall.bm25``'s: the terms worth ranking without,
    and the most those terms alone can score.

    FTS5 computes bm25 for every match (about a microsecond each; a common word is in
    tens of thousands of memories at 100k). bm25 is a sum of one part per term, each
    below ``(k1 + 1) * idf``, so a memory holding only common terms C scores below the
    sum of their bounds. The memories holding a rarer term are ranked first, in two
    queries (with C and without it) whose bm25 is the full query's: the same phrases,
    and an absent phrase adds nothing. When ``inner`` of them score above C's bound, no
    memory with only C can enter the list and it is exact; otherwise the full query runs.
    ``bm25()`` rather than ``rank``: FTS5's sorter statement costs a third more a match.
    """
    sql = ("SELECT rowid, bm25(memories_fts) AS r FROM memories_fts WHERE memories_fts MATCH ?"
           " ORDER BY r LIMIT ?")
    if common:
        rare = " OR ".join(phrase(t) for t in terms if t not in common)
        some = " OR ".join(phrase(t) for t in common)
        rows = sorted([*store.conn.execute(sql, (f"({rare}) AND ({some})", inner)),
                       *store.conn.execute(sql, (f"({rare}) NOT ({some})", inner))], key=lambda r: r[1])
        if len(rows) >= inner and -rows[inner - 1][1] > bound * (1 + 1e-9):
            return rows[:inner]
    return store.conn.execute(sql, (" OR ".join(phrase(t) for t in terms), inner)).fetchall()


def word_matches(store: Store, terms: Sequence[str], flt: Filter, limit: int, common: Sequence[str] = (),
                 bound: float = 0.0) -> list[tuple[int, float]]:
    """(memory id, -bm25) of the best matches of any of ``terms``: the BM25 lane without
    building records (``marm.recall.bm25.matches`` decides ``common`` and ``bound``).

    FTS5 ranks its matches first (``_best_matches``), and only the best few times
    ``limit`` are joined to the filter; if the filter leaves too few of them (most
    matches in other projects), the full join runs.
    """
    if not terms:
        return []
    where, args = flt.where()
    inner = limit * 4
    expression = " OR ".join(phrase(t) for t in terms)
    try:
        best = _best_matches(store, terms, inner, common, bound)
        rows: list[tuple[int, float]] = []
        for start in range(0, len(best), limit):  # best first: usually one look-up of ``limit``
            part = best[start : start + limit]
            seen = {r[0] for r in store.conn.execute(
                f"SELECT m.id FROM memories m NOT INDEXED WHERE m.id IN ({','.join('?' * len(part))})"
                f" AND {where}", [*(r[0] for r in part), *args])}
            rows.extend(r for r in part if r[0] in seen)
            if len(rows) >= limit:
                break
        rows = rows[:limit]
        if len(rows) < limit and store.conn.execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (expression,)
        ).fetchone()[0] > inner:
            rows = store.conn.execute(
                f"SELECT m.id, bm25(memories_fts) AS rank FROM memories_fts"
                f" JOIN memories m ON m.id = memories_fts.rowid"
                f" WHERE memories_fts MATCH ? AND {where} ORDER BY rank LIMIT ?",
                [expression, *args, limit]).fetchall()
    except sqlite3.OperationalError:
        return []
    return [(r[0], -float(r[1])) for r in rows]


def neighbours(store: Store, memory_ids: Iterable[int]) -> Neighbours:
    """The memory just before and just after each of ``memory_ids`` in its session and
    project, and which of them ask something.

    Memories of one session are a conversation: the one before often holds the question
    or the problem a memory answers, the one after its consequence; a memory that asks
    something (its text holds a "?") is answered by the one after it. Memories without a
    session, or at its edge, are left out of the respective map.
    """
    ids = list(dict.fromkeys(memory_ids))
    before: dict[int, int] = {}
    after: dict[int, int] = {}
    asking: set[int] = set()
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        for mid, prev, nxt, asks in store.conn.execute(
            "SELECT m.id,"
            " (SELECT max(p.id) FROM memories p WHERE p.session = m.session AND p.id < m.id"
            "  AND p.project IS m.project),"
            " (SELECT min(n.id) FROM memories n WHERE n.session = m.session AND n.id > m.id"
            "  AND n.project IS m.project),"
            " instr(m.content, '?') > 0"
            f" FROM memories m WHERE m.id IN ({','.join('?' * len(part))}) AND m.session IS NOT NULL",
            part,
        ):
            if prev is not None:
                before[mid] = prev
            if nxt is not None:
                after[mid] = nxt
            if asks:
                asking.add(mid)
    return Neighbours(before, after, asking)


def visible(store: Store, memory_ids: Iterable[int], flt: Filter) -> dict[int, Memory]:
    """The memories among ``memory_ids`` that ``flt`` lets a recall see."""
    ids = list(dict.fromkeys(int(i) for i in memory_ids))
    where, args = flt.where()
    out: dict[int, Memory] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        rows = store.conn.execute(
            f"SELECT {COLUMNS} FROM memories m NOT INDEXED WHERE m.id IN ({','.join('?' * len(part))})"
            f" AND {where}", [*part, *args]).fetchall()
        out.update((r[0], to_memory(r)) for r in rows)
    return out


def allowed_ids(store: Store, flt: Filter) -> list[int]:
    """Every memory id ``flt`` lets a recall see (for narrow filters: session, kind, as-of)."""
    where, args = flt.where()
    return [r[0] for r in store.conn.execute(f"SELECT m.id FROM memories m WHERE {where}", args)]


def scoring_rows(store: Store, memory_ids: Iterable[int], flt: Filter) -> dict[int, Scoring]:
    """``{id: (content, validity time)}`` of the memories ``flt`` lets a recall see: what
    the hybrid score reads, without building full records for every candidate.
    (``NOT INDEXED``: look the ids up by rowid; the planner otherwise walks the scope
    index over every memory of the project.)"""
    ids = list(dict.fromkeys(int(i) for i in memory_ids))
    where, args = flt.where()
    out: dict[int, Scoring] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        out.update((r[0], Scoring(r[1], r[2])) for r in store.conn.execute(
            f"SELECT m.id, m.content, coalesce(m.valid_from, m.recorded_at) FROM memories m NOT INDEXED"
            f" WHERE m.id IN ({','.join('?' * len(part))}) AND {where}", [*part, *args]))
    return out



def valid_between(store: Store, flt: Filter, start: str, end: str, limit: int) -> list[int]:
    """Ids of memories in ``flt`` whose validity time (valid_from, else recorded_at) lies
    in [start, end): candidates for a query that names a date. (``INDEXED BY``: the
    planner otherwise walks the scope index over every memory of the project.)"""
    where, args = flt.where()
    return [r[0] for r in store.conn.execute(
        f"SELECT m.id FROM memories m INDEXED BY memories_validity"
        f" WHERE coalesce(m.valid_from, m.recorded_at) >= ?"
        f" AND coalesce(m.valid_from, m.recorded_at) < ? AND {where} ORDER BY m.id DESC LIMIT ?",
        [start, end, *args, limit])]


def waiting_for_vectors(store: Store, flt: Filter, limit: int) -> list[tuple[int, str]]:
    """(id, content) of the newest memories ``flt`` lets a recall see whose ``embed`` task
    is still queued (claimed by a running drain or not): the memories a recall must
    embed for itself, or a memory just written would compete without its meaning."""
    where, args = flt.where()
    return [(r[0], r[1]) for r in store.conn.execute(
        f"SELECT m.id, m.content FROM outbox o JOIN memories m ON m.id = CAST(o.target AS INTEGER)"
        f" WHERE o.kind = 'embed' AND o.state = 'pending' AND {where} ORDER BY o.id DESC LIMIT ?",
        [*args, limit])]
