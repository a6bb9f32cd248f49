"""The recall read model: what a recall reads of the store, in at most three statements.

A hybrid recall reads its candidate set in three steps, each one SQL statement whose
rows are typed (a UNION ALL of row kinds, id lists passed as JSON through ``json_each``):

1. ``facts``: what depends on the query alone. Word statistics (memories indexed, and
   per term the memories holding it), how many memories in scope name each of the
   query's names (and the scope's size, counted only as far as the answer needs), the
   vector files in scope, the ids a narrow filter allows, the memories valid at or
   naming a date the query names, the holders of the query's literal pieces, and the
   newest memories still waiting for their vectors.
2. ``word_matches``: the best BM25 matches that the filter lets a recall see, with
   their session neighbours.
3. ``rows``: every candidate's record, text and validity time, the neighbours of the
   vector matches (the replies to the questions among them join the candidates), and
   the dates the candidates name.

The ranking maths (BM25's IDF and bounds, which names are common, the fused score) is
``marm.recall``'s; between the steps it decides what the next one asks. The vector
files themselves are ``marm.store.vectors``'. A lexical recall is one statement
(``word_hits``). Only documented FTS5 is used: ``MATCH``, ``bm25()`` and counting
matches; the number of memories comes from ``memory_count``, a one-row table its own
triggers keep (migration 3), which bm25's IDF counts the same way.
"""

from __future__ import annotations

import json

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from marm.store import vectors
from marm.store.db import Store
from marm.store.memories import COLUMNS, Filter, literal_sql, to_memory
from marm.store.mentions import reach_back
from marm.store.records import Memory
from marm.store.vectors import VectorFile

#: An FTS5 query that matches nothing at once (an empty phrase): what a part of a
#: statement that must not run asks, since FTS5 runs its MATCH whatever else holds.
NOTHING = "'\"\"'"
#: Memories valid at (and naming) a date the query names, read per named date.
DATE_CANDIDATES = 200


@dataclass(frozen=True, slots=True)
class WordStats:
    """What bm25's IDF reads: memories indexed, and per term the memories holding it."""

    total: int
    df: dict[str, int]


@dataclass(frozen=True, slots=True)
class Neighbours:
    """Session neighbours: ``before[id]`` is the memory just before ``id``, ``after[id]``
    the one just after; ``asking`` holds the ids whose text asks something (a "?")."""

    before: dict[int, int] = field(default_factory=dict)
    after: dict[int, int] = field(default_factory=dict)
    asking: set[int] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class Facts:
    """What a recall knows from its first statement (``facts``)."""

    words: WordStats
    #: per name (lower-cased): memories in scope holding it, counted up to ``ceiling + 1``
    names: dict[str, int]
    #: ``int(share * memories indexed)``: a name held by more is common whatever the scope
    ceiling: int
    #: memories in scope, counted only as far as deciding which names are common needs
    scope: int
    files: list[VectorFile]
    allowed: list[int] | None       # the ids a narrow filter lets a recall see, or None
    dated: list[int]                # valid at, or naming, a date the query names
    held: list[list[int]]           # per literal piece, the memories holding it
    waiting: list[tuple[int, str]]  # (id, content) still waiting for vectors, newest first

    def common(self, share: float) -> set[str]:
        """The names more than ``share`` of the memories in scope hold."""
        return {t for t, n in self.names.items() if n > self.ceiling or (n and n > int(share * self.scope))}


@dataclass(frozen=True, slots=True)
class WordMatches:
    """The second statement's answer: (id, -bm25) best first, and their neighbours."""

    ranked: list[tuple[int, float]]
    near: Neighbours


@dataclass(frozen=True, slots=True)
class Row:
    """A candidate as the third statement read it: what its score reads (text, validity
    time) and its record's columns, made a ``Memory`` only for what is returned
    (``memory``): a recall scores hundreds of candidates and returns a few."""

    content: str
    valid_at: str
    columns: tuple[Any, ...]

    def memory(self) -> Memory:
        return to_memory(self.columns)


@dataclass(frozen=True, slots=True)
class CandidateRows:
    """The third statement's answer: the neighbours of the vector matches, the visible
    candidates (the replies to the vector matches' questions among them) and, when
    asked, the dates each of them names."""

    near: Neighbours
    rows: dict[int, Row]
    named: dict[int, list[tuple[str, str]]]


#: ``phrase`` of a ``json_each`` row's value, in SQL.
_PHRASE_OF_VALUE = """'"' || replace(j.value, '"', '""') || '"'"""


def phrase(term: str) -> str:
    """``term`` as one FTS5 phrase (quotes doubled)."""
    return '"' + term.replace('"', '""') + '"'


def _ids(values: Iterable[int]) -> str:
    return orjson.dumps(list(dict.fromkeys(int(v) for v in values))).decode()


class _Union:
    """A UNION ALL of typed row kinds: each arm gives its kind and ``width`` values."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.ctes: list[str] = []
        self.arms: list[str] = []
        self.args: list[Any] = []
        self.cte_args: list[Any] = []

    def cte(self, sql: str, args: Sequence[Any] = ()) -> None:
        self.ctes.append(sql)
        self.cte_args.extend(args)

    def arm(self, kind: str, values: Sequence[str], tail: str, args: Sequence[Any] = ()) -> None:
        cols = ", ".join([f"'{kind}'", *values, *["NULL"] * (self.width - len(values))])
        self.arms.append(f"SELECT {cols} {tail}".rstrip())
        self.args.extend(args)

    def run(self, store: Store) -> list[tuple[Any, ...]]:
        if not self.arms:
            return []
        head = f"WITH {', '.join(self.ctes)} " if self.ctes else ""
        return store.conn.execute(head + " UNION ALL ".join(self.arms), [*self.cte_args, *self.args]).fetchall()


def facts(store: Store, flt: Filter, *, terms: Sequence[str] = (), names: Sequence[str] = (),
          share: float = 0.0, files: tuple[str, int, Sequence[str | None] | None] | None = None,
          narrow: bool = False, spans: Sequence[tuple[str, str]] = (), pieces: Sequence[str] = (),
          held_limit: int = 0, waiting: int = 0, per_date: int = DATE_CANDIDATES) -> Facts:
    """Everything a recall reads that depends on the query alone, in one statement.

    ``terms``: the words whose index counts bm25 needs; ``names`` (lower-cased): the
    names whose share of the scope says whether they are common (over ``share``);
    ``files``: (model, dim, projects) of the vector files to read; ``narrow``: list the
    ids ``flt`` allows; ``spans``: [start, end) stamps of the dates the query names;
    ``pieces``: literal pieces whose holders to list (up to ``held_limit`` each);
    ``waiting``: how many memories still waiting for vectors to list; ``per_date``: how
    many candidates valid at, and how many naming, each date to list (newest first).

    A name's matches in scope are counted up to the bound the whole index allows (past
    it, the name is common whatever the scope holds), then the scope only up to the
    size at which those matches stop being common (counting the scope walks an index:
    15 ms at 100k memories).
    """
    where, args = flt.where()
    q = _Union(width=3)
    q.arm("total", ["(SELECT n FROM memory_count WHERE id = 1)"], "")
    if terms:  # one arm over a JSON list: a compound SELECT holds at most 500 arms
        q.arm("df", ["j.value", f"(SELECT count(*) FROM memories_fts WHERE memories_fts MATCH {_PHRASE_OF_VALUE})"],
              "FROM json_each(?) j", [json.dumps(list(dict.fromkeys(terms)))])
    lowered = list(dict.fromkeys(names))
    if lowered:
        q.cte("c(ceiling) AS (SELECT coalesce((SELECT CAST(? * n AS INTEGER) FROM memory_count WHERE id = 1), 0))",
              [share])
        counts = (f"SELECT j.value AS k, (SELECT count(*) FROM (SELECT 1 FROM memories_fts f JOIN memories m"
                  f" ON m.id = f.rowid WHERE memories_fts MATCH {_PHRASE_OF_VALUE} AND {where}"
                  f" LIMIT (SELECT ceiling + 1 FROM c))) AS n FROM json_each(?) j")
        q.cte(f"named(k, n) AS MATERIALIZED ({counts})", [*args, json.dumps(lowered)])
        # The smallest scope size past which no count at or below the ceiling is common:
        # counting further cannot change the answer.
        q.cte("need(n) AS (SELECT coalesce(max(n), 0) FROM named WHERE n <= (SELECT ceiling FROM c))")
        q.arm("name", ["k", "n"], "FROM named")
        q.arm("ceiling", ["ceiling"], "FROM c")
        q.arm("scope", [f"(SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {where} LIMIT (SELECT CASE"
                        " WHEN n = 0 THEN 0 ELSE CAST(n / ? AS INTEGER) + 2 END FROM need)))"], "", [*args, share])
    if files is not None:
        clause, file_args = vectors.in_scope(*files)
        q.arm("file", ["id", f"json_array({vectors.FILE_COLUMNS})"],
              f"FROM vector_files WHERE {clause}", file_args)
    if narrow:
        q.arm("allowed", [f"(SELECT json_group_array(m.id) FROM memories m WHERE {where})"], "", args)
    for start, end in spans:
        q.arm("dated", ["id"], f"FROM (SELECT m.id FROM memories m INDEXED BY memories_validity"
                               f" WHERE coalesce(m.valid_from, m.recorded_at) >= ?"
                               f" AND coalesce(m.valid_from, m.recorded_at) < ? AND {where}"
                               f" ORDER BY m.id DESC LIMIT ?)", [start, end, *args, per_date])
        q.arm("dated", ["id"], f"FROM (SELECT DISTINCT d.memory_id AS id FROM memory_dates d"
                               f" JOIN memories m ON m.id = d.memory_id"
                               f" WHERE d.start > ? AND d.start < ? AND d.end > ? AND {where}"
                               f" ORDER BY d.memory_id DESC LIMIT ?)",
              [reach_back(start), end, start, *args, per_date])
    for i, piece in enumerate(pieces):
        sql, piece_args, _ = literal_sql(piece, flt, held_limit, columns="m.id")
        q.arm("held", [str(i), "id"], f"FROM ({sql})", piece_args)
    if waiting:
        q.arm("waiting", ["id", "content"], f"FROM (SELECT m.id, m.content FROM outbox o"
                                            f" JOIN memories m ON m.id = CAST(o.target AS INTEGER)"
                                            f" WHERE o.kind = 'embed' AND o.state = 'pending' AND {where}"
                                            f" ORDER BY o.id DESC LIMIT ?)", [*args, waiting])
    total, ceiling, scope = 0, 0, 0
    df: dict[str, int] = {}
    counted: dict[str, int] = {}
    found_files: list[VectorFile] = []
    allowed: list[int] | None = None
    dated: list[int] = []
    held: list[list[int]] = [[] for _ in pieces]
    queued: list[tuple[int, str]] = []
    for kind, a, b, _ in q.run(store):
        if kind == "total":
            total = int(a or 0)
        elif kind == "df":
            df[a] = int(b)
        elif kind == "name":
            counted[a] = int(b)
        elif kind == "ceiling":
            ceiling = int(a)
        elif kind == "scope":
            scope = int(a)
        elif kind == "file":
            found_files.append(VectorFile(*orjson.loads(b)))
        elif kind == "allowed":
            allowed = orjson.loads(a)
        elif kind == "dated":
            dated.append(int(a))
        elif kind == "held":
            held[int(a)].append(int(b))
        else:
            queued.append((int(a), b))
    return Facts(WordStats(total, df), counted, ceiling, scope, found_files, allowed, dated, held, queued)


_NEXT = ("(SELECT min(n.id) FROM memories n WHERE n.session = m.session AND n.id > m.id"
         " AND n.project IS m.project)")
_PREV = ("(SELECT max(p.id) FROM memories p WHERE p.session = m.session AND p.id < m.id"
         " AND p.project IS m.project)")


def word_matches(store: Store, terms: Sequence[str], flt: Filter, limit: int, common: Sequence[str] = (),
                 bound: float = 0.0) -> WordMatches:
    """The ``limit`` best BM25 matches of any of ``terms`` that ``flt`` lets a recall see,
    as (memory id, -bm25), with their session neighbours: one statement.

    ``common`` and ``bound`` are ``marm.recall.bm25``'s: the terms worth ranking without,
    and the most those terms alone can score. FTS5 computes bm25 for every match (about
    a microsecond each; a common word is in tens of thousands of memories at 100k).
    bm25 is a sum of one part per term, each below ``(k1 + 1) * idf``, so a memory
    holding only common terms C scores below the sum of their bounds. The memories
    holding a rarer term are ranked first, in two parts (with C and without it) whose
    bm25 is the full query's: the same phrases, and an absent phrase adds nothing. When
    ``4 * limit`` of them score above C's bound, no memory with only C can enter the
    list and it is exact; otherwise the full query ranks. (A part that must not run
    matches ``NOTHING``: FTS5 runs a MATCH whatever else its WHERE says.) ``bm25()``
    rather than ``rank``: FTS5's sorter statement costs a third more a match.

    Only the best ``4 * limit`` are joined to the filter; if it leaves too few of them
    (most matches in other projects) and there were more matches, the full join ranks.
    Memories of one session are a conversation: the one before often holds the question
    a memory answers, the one after its consequence; ``near`` has them, and which
    matches ask something (a "?"). Memories without a session have no neighbours.
    """
    if not terms:
        return WordMatches([], Neighbours())
    where, args = flt.where()
    inner = limit * 4
    every = " OR ".join(phrase(t) for t in terms)
    rank = "SELECT rowid AS id, bm25(memories_fts) AS r FROM memories_fts WHERE memories_fts MATCH ?"
    ctes: list[str] = []
    params: list[Any] = []
    if common:
        rare = " OR ".join(phrase(t) for t in terms if t not in common)
        some = " OR ".join(phrase(t) for t in common)
        ctes += [f"a AS ({rank} ORDER BY r LIMIT ?)", f"b AS ({rank} ORDER BY r LIMIT ?)",
                 "split AS MATERIALIZED (SELECT id, r, 0 AS part, row_number() OVER () AS pos FROM a"
                 " UNION ALL SELECT id, r, 1, row_number() OVER () FROM b)",
                 "ok(ok) AS (SELECT (SELECT count(*) FROM split) >= ? AND"
                 " -(SELECT r FROM split ORDER BY r, part, pos LIMIT 1 OFFSET ?) > ?)",
                 f"whole AS ({rank.replace('MATCH ?', f'MATCH (SELECT CASE WHEN ok THEN {NOTHING} ELSE ? END FROM ok)')}"
                 " ORDER BY r LIMIT ?)",
                 "best AS MATERIALIZED (SELECT id, r, row_number() OVER () AS pos FROM (SELECT id, r FROM split"
                 " WHERE (SELECT ok FROM ok) ORDER BY r, part, pos LIMIT ?)"
                 " UNION ALL SELECT id, r, row_number() OVER () FROM whole)"]
        params += [f"({rare}) AND ({some})", inner, f"({rare}) NOT ({some})", inner,
                   inner, inner - 1, bound * (1 + 1e-9), every, inner, inner]
    else:
        ctes.append(f"best AS MATERIALIZED (SELECT id, r, row_number() OVER () AS pos FROM"
                    f" ({rank} ORDER BY r LIMIT ?))")
        params += [every, inner]
    ctes += [f"seen AS MATERIALIZED (SELECT best.id, best.r, best.pos FROM best CROSS JOIN memories m"
             f" ON m.id = best.id WHERE {where} ORDER BY best.pos LIMIT ?)",
             f"wide AS MATERIALIZED (SELECT m.id, bm25(memories_fts) AS r FROM memories_fts"
             f" JOIN memories m ON m.id = memories_fts.rowid WHERE memories_fts MATCH (CASE"
             f" WHEN (SELECT count(*) FROM seen) >= ? THEN {NOTHING}"
             f" WHEN (SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?) > ? THEN ? ELSE {NOTHING} END)"
             f" AND {where} ORDER BY r LIMIT ?)",
             "found AS (SELECT id, r, pos FROM seen WHERE NOT EXISTS (SELECT 1 FROM wide)"
             " UNION ALL SELECT id, r, row_number() OVER () FROM wide)"]
    params += [*args, limit, limit, every, inner, every, *args, limit]
    sql = (f"WITH {', '.join(ctes)} SELECT f.id, f.r, CASE WHEN m.session IS NULL THEN NULL ELSE {_PREV} END,"
           f" CASE WHEN m.session IS NULL THEN NULL ELSE {_NEXT} END,"
           " m.session IS NOT NULL AND instr(m.content, '?') > 0"
           " FROM found f CROSS JOIN memories m ON m.id = f.id ORDER BY f.pos")
    try:
        rows = store.conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError:
        return WordMatches([], Neighbours())
    near = Neighbours()
    for mid, _, prev, nxt, asks in rows:
        if prev is not None:
            near.before[mid] = prev
        if nxt is not None:
            near.after[mid] = nxt
        if asks:
            near.asking.add(mid)
    return WordMatches([(r[0], -float(r[1])) for r in rows], near)


def rows(store: Store, flt: Filter, candidates: Iterable[int], vector_matches: Iterable[int],
         dates: bool) -> CandidateRows:
    """The records ``flt`` lets a recall see among ``candidates`` and the replies to the
    questions among ``vector_matches`` (the memory just after one that asks, in its
    session), those matches' neighbours after them, and (``dates``) the dates each
    record names: one statement. (``CROSS JOIN``: look the ids up by rowid; the planner
    otherwise walks the scope index over every memory of the project.)"""
    where, args = flt.where()
    width = 16
    pad = ", ".join(["NULL"] * (width - 3))
    record = (f"{COLUMNS}, coalesce(m.valid_from, m.recorded_at) AS valid_at"
              f" FROM want CROSS JOIN memories m ON m.id = want.id WHERE {where}")
    # The records are read once: straight into the answer, or (to join them to the
    # dates they name) into a table first.
    arms = (f"SELECT 'row', * FROM found UNION ALL SELECT 'date', d.memory_id, d.start, d.end, {pad}"
            f" FROM found f CROSS JOIN memory_dates d ON d.memory_id = f.id") if dates else f"SELECT 'row', {record}"
    sql = (f"WITH top(id) AS (SELECT value FROM json_each(?)),"
           f" tn AS MATERIALIZED (SELECT m.id, {_NEXT} AS nxt, instr(m.content, '?') > 0 AS asks"
           f" FROM top CROSS JOIN memories m ON m.id = top.id WHERE m.session IS NOT NULL),"
           f" want(id) AS (SELECT value FROM json_each(?) UNION SELECT nxt FROM tn WHERE asks AND nxt IS NOT NULL)"
           + (f", found AS MATERIALIZED (SELECT {record})" if dates else "")
           + f" SELECT 'near', id, nxt, asks, {pad} FROM tn UNION ALL {arms}")
    near = Neighbours()
    out: dict[int, Row] = {}
    named: dict[int, list[tuple[str, str]]] = {}
    for r in store.conn.execute(sql, [_ids(vector_matches), _ids(candidates), *args]).fetchall():
        if r[0] == "row":
            out[r[1]] = Row(r[2], r[16], r[1:16])
        elif r[0] == "near":
            if r[2] is not None:
                near.after[r[1]] = r[2]
            if r[3]:
                near.asking.add(r[1])
        else:
            named.setdefault(r[1], []).append((r[2], r[3]))
    return CandidateRows(near, out, named)


def visible(store: Store, memory_ids: Iterable[int], flt: Filter) -> dict[int, Memory]:
    """The memories among ``memory_ids`` that ``flt`` lets a recall see (the semantic
    lane's one read after ``facts``)."""
    where, args = flt.where()
    return {r[0]: to_memory(r) for r in store.conn.execute(
        f"SELECT {COLUMNS} FROM json_each(?) j CROSS JOIN memories m ON m.id = j.value WHERE {where}",
        [_ids(memory_ids), *args])}


def word_hits(store: Store, fts_query: str | None, flt: Filter, limit: int, pieces: Sequence[str] = (),
              held_limit: int = 0) -> tuple[list[tuple[Memory, float]], list[list[Memory]]]:
    """The lexical lane's one statement: (memory, -bm25) of the ``limit`` best matches of
    ``fts_query`` (a safe FTS5 expression, or None for none) that ``flt`` lets a recall
    see, and per literal piece the memories holding it (up to ``held_limit``, newest first)."""
    where, args = flt.where()
    width = len(COLUMNS.split(",")) + 1
    arms: list[str] = []
    params: list[Any] = []
    if fts_query is not None:
        arms.append(f"SELECT * FROM (SELECT -1, {COLUMNS}, bm25(memories_fts) AS rank FROM memories_fts"
                    f" JOIN memories m ON m.id = memories_fts.rowid"
                    f" WHERE memories_fts MATCH ? AND {where} ORDER BY rank LIMIT ?)")
        params += [fts_query, *args, limit]
    for i, piece in enumerate(pieces):
        sql, piece_args, _ = literal_sql(piece, flt, held_limit, columns=f"{COLUMNS}, NULL")
        arms.append(f"SELECT {i}, * FROM ({sql})")
        params += piece_args
    if not arms:
        return [], []
    try:
        found = store.conn.execute(" UNION ALL ".join(arms), params).fetchall()
    except sqlite3.OperationalError:
        return [], [[] for _ in pieces]
    hits = [(to_memory(r[1:width]), -float(r[width])) for r in found if r[0] == -1]
    held: list[list[Memory]] = [[] for _ in pieces]
    for r in found:
        if r[0] >= 0:
            held[r[0]].append(to_memory(r[1:width]))
    return hits, held

