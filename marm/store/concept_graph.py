"""The derived concept graph, in the disposable ``derived.db`` (part ``concepts``).

Every row names the memory it came from: a mention (entity x memory) and an edge
(source, predicate, target, memory) are per-memory contributions, so removing a
memory's contribution is ``DELETE ... WHERE memory_id = ?`` and re-adding it can never
double it. Entities are the union of their mentions: one left without mentions is
deleted, and its display name and type follow the mentions that remain. Each memory's
project is copied onto its rows, so a query filters by scope without the durable
database. Nothing here is a human verdict: those live in ``concept_verdicts``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from marm.store import core, derived
from marm.store.db import now

PART = derived.SchemaPart(
    name="concepts",
    version=1,
    tables=("concept_edges", "concept_mentions", "concept_sources", "concept_entities"),
    ddl="""
    CREATE TABLE concept_entities (
        id    INTEGER PRIMARY KEY,
        key   TEXT NOT NULL UNIQUE,       -- normalised name (verdicts are keyed on it)
        name  TEXT NOT NULL,              -- display name; identifiers keep their exact text
        type  TEXT NOT NULL
    );
    CREATE TABLE concept_mentions (
        entity_id  INTEGER NOT NULL REFERENCES concept_entities(id) ON DELETE CASCADE,
        memory_id  INTEGER NOT NULL,
        project    TEXT,
        name       TEXT NOT NULL,
        type       TEXT NOT NULL,
        salience   REAL NOT NULL,
        PRIMARY KEY (entity_id, memory_id)
    );
    CREATE INDEX concept_mentions_memory ON concept_mentions(memory_id);
    CREATE TABLE concept_edges (
        source     INTEGER NOT NULL REFERENCES concept_entities(id) ON DELETE CASCADE,
        predicate  TEXT NOT NULL,
        target     INTEGER NOT NULL REFERENCES concept_entities(id) ON DELETE CASCADE,
        memory_id  INTEGER NOT NULL,
        project    TEXT,
        weight     REAL NOT NULL,
        PRIMARY KEY (source, predicate, target, memory_id)
    );
    CREATE INDEX concept_edges_target ON concept_edges(target);
    CREATE INDEX concept_edges_memory ON concept_edges(memory_id);
    -- Which memories the graph holds, and how they were read.
    CREATE TABLE concept_sources (
        memory_id     INTEGER PRIMARY KEY,
        project       TEXT,
        content_hash  TEXT NOT NULL,
        extractor     TEXT NOT NULL,
        at            TEXT NOT NULL
    );
    """,
)


@dataclass(frozen=True, slots=True)
class Mention:
    key: str  # normalised: lower case, head lemma, no surrounding punctuation
    name: str  # how people read it; identifiers keep their exact text
    type: (
        str  # concept | decision | error | tool | person | org | place | file | symbol | flag | url
    )
    salience: float  # 0..1: how much this memory is about it


@dataclass(frozen=True, slots=True)
class Relation:
    source: str  # mention keys
    predicate: str
    target: str
    weight: float


@dataclass(frozen=True, slots=True)
class Extraction:
    """One memory's contribution, as an extractor produced it."""

    mentions: tuple[Mention, ...] = ()
    relations: tuple[Relation, ...] = ()



#: When two types name one key, the more specific one wins.
TYPE_RANK = {
    t: i
    for i, t in enumerate(
        (
            "file",
            "symbol",
            "flag",
            "url",
            "person",
            "error",
            "tool",
            "decision",
            "org",
            "place",
            "concept",
        )
    )
}


@dataclass(frozen=True, slots=True)
class Entity:
    id: int
    key: str
    name: str
    type: str
    memories: int = 0


@dataclass(frozen=True, slots=True)
class Edge:
    source: int
    predicate: str
    target: int
    weight: float
    memory_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Stats:
    entities: int
    edges: int
    memories: int


def _scope(project: str | None, all_projects: bool, alias: str) -> tuple[str, list]:
    """The recall scope: the project plus global rows, unless every project is asked for."""
    if all_projects:
        return "1", []
    if project is None:
        return f"{alias}.project IS NULL", []
    return f"({alias}.project IS NULL OR {alias}.project = ?)", [project]


class Graph:
    """One open connection to the concept part of the derived database."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, path: Path) -> Graph:
        return cls(derived.connect(path, PART))

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def write(self) -> Iterator[None]:
        with core.atomic(self.conn, "the derived database"):
            yield

    def reset(self) -> None:
        """Drop and recreate every table of the part (a full rebuild starts here)."""
        derived.reset(self.conn, PART)

    # -- writes (inside ``write()``) -------------------------------------------------

    def remove_memory(self, memory_id: int) -> None:
        """Take one memory's contribution out; tidy the entities it touched."""
        touched = [
            r[0]
            for r in self.conn.execute(
                "SELECT entity_id FROM concept_mentions WHERE memory_id = ?", (memory_id,)
            )
        ]
        self.conn.execute("DELETE FROM concept_edges WHERE memory_id = ?", (memory_id,))
        self.conn.execute("DELETE FROM concept_mentions WHERE memory_id = ?", (memory_id,))
        self.conn.execute("DELETE FROM concept_sources WHERE memory_id = ?", (memory_id,))
        self._tidy(touched)

    def erase_memory(self, memory_id: int) -> None:
        """``remove_memory`` for a forgotten memory, now: the freed pages are zeroed and
        the WAL truncated, so neither its mentions nor an entity only it named stay in
        the file."""
        self.conn.execute("PRAGMA secure_delete = ON")
        with self.write():
            self.remove_memory(memory_id)
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def add_memory(
        self,
        memory_id: int,
        project: str | None,
        content_hash: str,
        extractor: str,
        extraction: Extraction,
    ) -> None:
        """Add one memory's contribution (after ``remove_memory``: never doubled)."""
        ids: dict[str, int] = {}
        for m in extraction.mentions:
            entity_id = self._entity(m.key, m.name, m.type)
            ids[m.key] = entity_id
            self.conn.execute(
                "INSERT OR REPLACE INTO concept_mentions (entity_id, memory_id, project, name, type,"
                " salience) VALUES (?,?,?,?,?,?)",
                (entity_id, memory_id, project, m.name, m.type, m.salience),
            )
        self.conn.executemany(
            "INSERT OR REPLACE INTO concept_edges (source, predicate, target, memory_id, project, weight)"
            " VALUES (?,?,?,?,?,?)",
            [
                (ids[r.source], r.predicate, ids[r.target], memory_id, project, r.weight)
                for r in extraction.relations
                if r.source in ids and r.target in ids
            ],
        )
        self.conn.execute(
            "INSERT OR REPLACE INTO concept_sources (memory_id, project, content_hash, extractor, at)"
            " VALUES (?,?,?,?,?)",
            (memory_id, project, content_hash, extractor, now()),
        )

    def _entity(self, key: str, name: str, type_: str) -> int:
        row = self.conn.execute(
            "SELECT id, type FROM concept_entities WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            cur = self.conn.execute(
                "INSERT INTO concept_entities (key, name, type) VALUES (?,?,?)", (key, name, type_)
            )
            return int(cur.lastrowid or 0)
        if TYPE_RANK.get(type_, 99) < TYPE_RANK.get(row[1], 99):
            self.conn.execute(
                "UPDATE concept_entities SET type = ?, name = ? WHERE id = ?", (type_, name, row[0])
            )
        return int(row[0])

    def _tidy(self, entity_ids: Iterable[int]) -> None:
        """Delete entities left without mentions; recompute the others' name and type."""
        for entity_id in set(entity_ids):
            rows = self.conn.execute(
                "SELECT name, type, count(*) FROM concept_mentions WHERE entity_id = ?"
                " GROUP BY name, type",
                (entity_id,),
            ).fetchall()
            if not rows:
                self.conn.execute(
                    "DELETE FROM concept_edges WHERE source = ? OR target = ?",
                    (entity_id, entity_id),
                )
                self.conn.execute("DELETE FROM concept_entities WHERE id = ?", (entity_id,))
                continue
            type_ = min((r[1] for r in rows), key=lambda t: TYPE_RANK.get(t, 99))
            name = max(rows, key=lambda r: (r[1] == type_, r[2]))[0]
            self.conn.execute(
                "UPDATE concept_entities SET name = ?, type = ? WHERE id = ?",
                (name, type_, entity_id),
            )

    def delete_entity(self, key: str) -> int:
        """Drop an entity with its mentions and edges; returns how many memories named it."""
        row = self.conn.execute("SELECT id FROM concept_entities WHERE key = ?", (key,)).fetchone()
        if row is None:
            return 0
        n = self.conn.execute(
            "SELECT count(*) FROM concept_mentions WHERE entity_id = ?", (row[0],)
        ).fetchone()[0]
        self.conn.execute(
            "DELETE FROM concept_edges WHERE source = ? OR target = ?", (row[0], row[0])
        )
        self.conn.execute("DELETE FROM concept_mentions WHERE entity_id = ?", (row[0],))
        self.conn.execute("DELETE FROM concept_entities WHERE id = ?", (row[0],))
        return int(n)

    def merge_entity(self, alias: str, canonical: str) -> int:
        """Move ``alias``'s mentions and edges onto ``canonical``; returns memories moved."""
        old = self.conn.execute(
            "SELECT id, name, type FROM concept_entities WHERE key = ?", (alias,)
        ).fetchone()
        if old is None:
            return 0
        new_id = self._entity(canonical, canonical, old[2])
        mentions = self.conn.execute(
            "SELECT memory_id, project, name, type, salience FROM concept_mentions WHERE entity_id = ?",
            (old[0],),
        ).fetchall()
        for memory_id, project, _name, type_, salience in mentions:
            self.conn.execute(
                "INSERT INTO concept_mentions (entity_id, memory_id, project, name, type, salience)"
                " VALUES (?,?,?,?,?,?) ON CONFLICT (entity_id, memory_id) DO UPDATE SET"
                " salience = max(salience, excluded.salience)",
                (new_id, memory_id, project, canonical, type_, salience),
            )
        for column in ("source", "target"):
            self.conn.execute(
                f"UPDATE OR IGNORE concept_edges SET {column} = ? WHERE {column} = ?",
                (new_id, old[0]),
            )
        self.conn.execute("DELETE FROM concept_edges WHERE source = target")
        self.conn.execute(
            "DELETE FROM concept_edges WHERE source = ? OR target = ?", (old[0], old[0])
        )
        self.conn.execute("DELETE FROM concept_mentions WHERE entity_id = ?", (old[0],))
        self.conn.execute("DELETE FROM concept_entities WHERE id = ?", (old[0],))
        self._tidy([new_id])
        return len(mentions)

    # -- reads ------------------------------------------------------------------------

    def source_ids(self, project: str | None = None, all_projects: bool = True) -> list[int]:
        where, args = _scope(project, all_projects, "s")
        return [
            r[0]
            for r in self.conn.execute(
                f"SELECT memory_id FROM concept_sources s WHERE {where} ORDER BY memory_id", args
            )
        ]

    def entities_by_key(
        self, keys: Sequence[str], project: str | None = None, all_projects: bool = True
    ) -> list[Entity]:
        """Entities with one of ``keys`` that a memory in scope names."""
        if not keys:
            return []
        where, args = _scope(project, all_projects, "m")
        rows = self.conn.execute(
            f"SELECT e.id, e.key, e.name, e.type, count(m.memory_id) FROM concept_entities e"
            f" JOIN concept_mentions m ON m.entity_id = e.id"
            f" WHERE e.key IN ({','.join('?' * len(keys))}) AND {where}"
            f" GROUP BY e.id ORDER BY count(m.memory_id) DESC",
            [*keys, *args],
        ).fetchall()
        return [Entity(*r) for r in rows]

    def entities_like(
        self, words: Sequence[str], project: str | None, all_projects: bool, limit: int
    ) -> list[Entity]:
        """Entities whose name contains every word, most mentioned first."""
        if not words:
            return []
        where, args = _scope(project, all_projects, "m")
        likes = " AND ".join("instr(e.key, ?) > 0" for _ in words)
        rows = self.conn.execute(
            f"SELECT e.id, e.key, e.name, e.type, count(m.memory_id) AS n FROM concept_entities e"
            f" JOIN concept_mentions m ON m.entity_id = e.id WHERE {likes} AND {where}"
            f" GROUP BY e.id ORDER BY n DESC, length(e.key) LIMIT ?",
            [*words, *args, limit],
        ).fetchall()
        return [Entity(*r) for r in rows]

    def entities(
        self, ids: Iterable[int], project: str | None = None, all_projects: bool = True
    ) -> dict[int, Entity]:
        ids = list(set(ids))
        if not ids:
            return {}
        where, args = _scope(project, all_projects, "m")
        rows = self.conn.execute(
            f"SELECT e.id, e.key, e.name, e.type, count(m.memory_id) FROM concept_entities e"
            f" LEFT JOIN concept_mentions m ON m.entity_id = e.id AND {where}"
            f" WHERE e.id IN ({','.join('?' * len(ids))}) GROUP BY e.id",
            [*args, *ids],
        ).fetchall()
        return {r[0]: Entity(*r) for r in rows}

    def edges_of(
        self, entity_ids: Iterable[int], project: str | None, all_projects: bool, limit: int
    ) -> list[Edge]:
        """Edges touching the entities, one per (source, predicate, target), strongest first
        (typed relations before co-occurrence), with the memories behind each."""
        ids = list(set(entity_ids))
        if not ids:
            return []
        where, args = _scope(project, all_projects, "g")
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(
            f"SELECT g.source, g.predicate, g.target, sum(g.weight), group_concat(g.memory_id)"
            f" FROM concept_edges g WHERE (g.source IN ({marks}) OR g.target IN ({marks})) AND {where}"
            f" GROUP BY g.source, g.predicate, g.target"
            f" ORDER BY g.predicate = 'related_to', sum(g.weight) DESC LIMIT ?",
            [*ids, *ids, *args, limit],
        ).fetchall()
        return [
            Edge(s, p, t, round(w, 3), tuple(sorted({int(x) for x in m.split(",")})))
            for s, p, t, w, m in rows
        ]

    def mention_memories(
        self, entity_ids: Iterable[int], project: str | None, all_projects: bool, limit: int
    ) -> list[tuple[int, int]]:
        """(entity id, memory id) pairs, most salient first."""
        ids = list(set(entity_ids))
        if not ids:
            return []
        where, args = _scope(project, all_projects, "m")
        return [
            tuple(r)
            for r in self.conn.execute(
                f"SELECT m.entity_id, m.memory_id FROM concept_mentions m"
                f" WHERE m.entity_id IN ({','.join('?' * len(ids))}) AND {where}"
                f" ORDER BY m.salience DESC, m.memory_id DESC LIMIT ?",
                [*ids, *args, limit],
            )
        ]

    def entities_of_memories(self, memory_ids: Iterable[int], limit: int) -> list[int]:
        """Entity ids the memories name, most salient first."""
        ids = list(set(memory_ids))
        if not ids:
            return []
        return [
            r[0]
            for r in self.conn.execute(
                f"SELECT entity_id FROM concept_mentions WHERE memory_id IN ({','.join('?' * len(ids))})"
                f" GROUP BY entity_id ORDER BY max(salience) DESC, count(*) DESC LIMIT ?",
                [*ids, limit],
            )
        ]

    def all_entities(self, project: str | None, all_projects: bool) -> list[Entity]:
        where, args = _scope(project, all_projects, "m")
        rows = self.conn.execute(
            f"SELECT e.id, e.key, e.name, e.type, count(m.memory_id) FROM concept_entities e"
            f" JOIN concept_mentions m ON m.entity_id = e.id WHERE {where} GROUP BY e.id",
            args,
        )
        return [Entity(*r) for r in rows]

    def stats(self) -> Stats:
        one = self.conn.execute
        return Stats(
            entities=one("SELECT count(*) FROM concept_entities").fetchone()[0],
            edges=one("SELECT count(*) FROM concept_edges").fetchone()[0],
            memories=one("SELECT count(*) FROM concept_sources").fetchone()[0],
        )

    def contribution(self, memory_id: int) -> tuple[list[str], list[tuple[str, str, str]]]:
        """One memory's entity keys and (source, predicate, target) edges, for tests and
        for ``marm concepts show``-style inspection."""
        keys = [
            r[0]
            for r in self.conn.execute(
                "SELECT e.key FROM concept_mentions m JOIN concept_entities e ON e.id = m.entity_id"
                " WHERE m.memory_id = ? ORDER BY e.key",
                (memory_id,),
            )
        ]
        edges = [
            tuple(r)
            for r in self.conn.execute(
                "SELECT s.key, g.predicate, t.key FROM concept_edges g"
                " JOIN concept_entities s ON s.id = g.source JOIN concept_entities t ON t.id = g.target"
                " WHERE g.memory_id = ? ORDER BY 1, 2, 3",
                (memory_id,),
            )
        ]
        return keys, edges
