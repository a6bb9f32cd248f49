"""Export and import of the durable store, as plain records (dicts), one per line.

Export reads a scope (a project plus global rows, or everything). Import writes a file's
records back keeping ids and times, and is idempotent:

- a memory already here (same content hash, project and recorded_at) is not added
  again; its file id maps to the local id;
- a memory whose id is taken here by a different memory (or by a forgotten one's
  history) gets a fresh id, and every reference in the file (log rows, supersede links,
  tombstones, events) follows it: a *remap*, reported in the result;
- a text forgotten here (a ``memory.forget`` event with its hash in its project) is not
  brought back, and a text retracted here (a tombstone) comes in retracted;
- events already here (same time, action and entity) are not added again.

Only ids never reused matter: after an import, the id sequences are moved past every
id the file mentions, so a later memory never inherits a forgotten one's history.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import orjson

from marm.store import events, memories, outbox
from marm.store.db import Store
from marm.store.records import Memory
from marm.text import content_hash

#: Simple tables: export type -> (table, columns, key columns). Import inserts a row
#: whose key is not taken and leaves an existing one alone (the local verdict stands).
SIMPLE: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "session": ("sessions", ("name", "project", "platform", "created_at", "last_seen_at"), ("name",)),
    "notebook_active": ("notebook_active", ("session", "name", "since"), ("session", "name")),
    "concept_alias": ("concept_aliases", ("alias", "canonical", "at"), ("alias",)),
    "concept_suppression": ("concept_suppressions", ("name", "reason", "at"), ("name",)),
    "concept_dismissal": ("concept_dismissals", ("a", "b", "at"), ("a", "b")),
    "tombstone": ("tombstones", ("content_hash", "scope", "memory_id", "reason", "at"),
                  ("content_hash", "scope")),
}
MEMORY_FIELDS = (
    "id", "content", "content_hash", "kind", "session", "project", "platform", "source",
    "recorded_at", "valid_from", "valid_to", "status", "status_reason", "superseded_by", "metadata",
)
LOG_FIELDS = ("id", "memory_id", "entry_date", "topic", "summary", "session", "project", "recorded_at")
NOTEBOOK_FIELDS = ("name", "content", "created_at", "updated_at")
EVENT_FIELDS = (
    "id", "at", "action", "entity", "entity_id", "source", "platform", "session", "project",
    "reason", "before_hash", "after_hash", "detail",
)


def _scope(column: str, project: str | None, all_projects: bool) -> tuple[str, list[Any]]:
    if all_projects:
        return "1", []
    if project is None:
        return f"{column} IS NULL", []
    return f"({column} IS NULL OR {column} = ?)", [project]


def _dicts(store: Store, sql: str, args: list[Any], fields: tuple[str, ...]) -> list[dict[str, Any]]:
    return [dict(zip(fields, row, strict=True)) for row in store.conn.execute(sql, args)]


def export_records(store: Store, project: str | None, all_projects: bool) -> Iterator[dict[str, Any]]:
    """Every record of the scope, typed, in an order import can replay."""
    where, args = _scope("project", project, all_projects)
    for m in _dicts(store, f"SELECT {', '.join(MEMORY_FIELDS)} FROM memories WHERE {where} ORDER BY id",
                    args, MEMORY_FIELDS):
        m["metadata"] = orjson.loads(m["metadata"] or "{}")
        yield {"type": "memory", **m}
    yield from ({"type": "log", **r} for r in _dicts(
        store, f"SELECT {', '.join(LOG_FIELDS)} FROM log_entries WHERE memory_id IN"
        f" (SELECT id FROM memories WHERE {where}) ORDER BY id", args, LOG_FIELDS))
    yield from ({"type": "notebook", **r} for r in _dicts(
        store, f"SELECT {', '.join(NOTEBOOK_FIELDS)} FROM notebook ORDER BY name", [], NOTEBOOK_FIELDS))
    for kind, (table, columns, keys) in SIMPLE.items():
        sql, sargs = f"SELECT {', '.join(columns)} FROM {table}", []
        if kind == "session":
            sql, sargs = f"{sql} WHERE {where}", args
        elif kind == "tombstone" and not all_projects:
            sql, sargs = f"{sql} WHERE scope IN ('', ?)", [project or ""]
        yield from ({"type": kind, **r} for r in _dicts(store, f"{sql} ORDER BY {', '.join(keys)}",
                                                        sargs, columns))
    for e in _dicts(store, f"SELECT {', '.join(EVENT_FIELDS)} FROM events WHERE {where} ORDER BY id",
                    args, EVENT_FIELDS):
        e["detail"] = orjson.loads(e["detail"] or "{}")
        yield {"type": "event", **e}


@contextmanager
def acting_as(store: Store, source: str) -> Iterator[None]:
    """Record the events appended meanwhile as coming from ``source`` (e.g. ``import``)."""
    before = store.actor
    store.actor = replace(before, source=source)
    try:
        yield
    finally:
        store.actor = before


def same_memory(store: Store, record: dict[str, Any]) -> int | None:
    """The local id of the memory ``record`` describes, if it is already here."""
    row = store.conn.execute(
        "SELECT id FROM memories WHERE content_hash = ? AND project IS ? AND recorded_at = ?",
        (record["content_hash"], record["project"], record["recorded_at"]),
    ).fetchone()
    return None if row is None else int(row[0])


def forgotten_texts(store: Store) -> set[tuple[str, str | None]]:
    """(content hash, project) of every memory forgotten here: import does not bring
    those texts back."""
    return {(h, p) for h, p in store.conn.execute(
        "SELECT before_hash, project FROM events WHERE action = 'memory.forget'")}


_TABLE_OF = {"memory": "memories", "log": "log_entries"}


def id_taken(store: Store, entity: str, entity_id: int) -> bool:
    """Whether ``entity_id`` is in use here: a row, or the history of a forgotten one."""
    table = _TABLE_OF[entity]
    if store.conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (entity_id,)).fetchone():
        return True
    return store.conn.execute(
        "SELECT 1 FROM events WHERE entity = ? AND entity_id = ? LIMIT 1", (entity, str(entity_id))
    ).fetchone() is not None


def _sequence(store: Store, table: str) -> int:
    row = store.conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
    top = store.conn.execute(f"SELECT max(id) FROM {table}").fetchone()[0]
    return max(row[0] if row else 0, top or 0)


def reserve_id(store: Store, entity: str, above: int = 0) -> int:
    """A fresh id for ``entity`` that no row or event here uses, greater than ``above``
    (the largest id an import file mentions, so that its free ids stay free)."""
    table = _TABLE_OF[entity]
    fresh = max(_sequence(store, table), above) + 1
    while id_taken(store, entity, fresh):
        fresh += 1
    advance_sequence(store, entity, fresh)
    return fresh


def advance_sequence(store: Store, entity: str, at_least: int) -> None:
    """Make sure AUTOINCREMENT never hands out ``at_least`` or anything below it."""
    table = _TABLE_OF[entity]
    if store.conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?",
                          (at_least, table)).rowcount == 0:
        store.conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (table, at_least))


def insert_memory(store: Store, record: dict[str, Any], memory_id: int,
                  note: dict[str, Any] | None = None) -> Memory:
    """Insert an exported memory as it was (times, status, provenance) under ``memory_id``,
    without its supersede link (``link_superseded`` sets it once both ends exist). Queues
    its ``embed`` and ``concepts`` tasks and records a ``memory.import`` event (``note``
    adds to its detail)."""
    assert store.in_transaction
    values = {**record, "id": memory_id, "superseded_by": None,
              "metadata": orjson.dumps(record.get("metadata") or {}).decode()}
    store.conn.execute(
        f"INSERT INTO memories ({', '.join(MEMORY_FIELDS)}) VALUES ({','.join('?' * len(MEMORY_FIELDS))})",
        [values[f] for f in MEMORY_FIELDS],
    )
    for task in memories.TASK_KINDS:
        outbox.enqueue(store, task, memory_id, record["content_hash"])
    detail: dict[str, Any] = {"status": record["status"], **(note or {})}
    if memory_id != record["id"]:
        detail["exported_id"] = record["id"]
    events.append(store, "memory.import", "memory", memory_id, after_hash=record["content_hash"],
                  session=record["session"], project=record["project"], detail=detail)
    return memories.get(store, memory_id)  # type: ignore[return-value]


def link_superseded(store: Store, memory_id: int, superseded_by: int) -> None:
    """Restore an imported memory's supersede link (part of its ``memory.import``)."""
    store.conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ?", (superseded_by, memory_id))


def log_of(store: Store, memory_id: int) -> int | None:
    row = store.conn.execute("SELECT id FROM log_entries WHERE memory_id = ?", (memory_id,)).fetchone()
    return None if row is None else int(row[0])


def insert_log(store: Store, record: dict[str, Any], log_id: int, memory_id: int) -> None:
    assert store.in_transaction
    values = {**record, "id": log_id, "memory_id": memory_id}
    store.conn.execute(
        f"INSERT INTO log_entries ({', '.join(LOG_FIELDS)}) VALUES ({','.join('?' * len(LOG_FIELDS))})",
        [values[f] for f in LOG_FIELDS],
    )
    events.append(store, "log.import", "log", log_id, session=record["session"],
                  project=record["project"], detail={"memory_id": memory_id})


def put_notebook(store: Store, record: dict[str, Any]) -> bool:
    """Add a notebook entry, or take the file's text when it is newer; True if changed."""
    row = store.conn.execute("SELECT content, updated_at FROM notebook WHERE name = ?",
                             (record["name"],)).fetchone()
    if row is not None and (row[1] >= record["updated_at"] or row[0] == record["content"]):
        return False
    store.conn.execute(
        "INSERT INTO notebook (name, content, created_at, updated_at) VALUES (?,?,?,?)"
        " ON CONFLICT (name) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
        [record[f] for f in NOTEBOOK_FIELDS],
    )
    events.append(store, "notebook.import", "notebook", record["name"],
                  before_hash=content_hash(row[0]) if row else None,
                  after_hash=content_hash(record["content"]))
    return True


def put_simple(store: Store, kind: str, record: dict[str, Any]) -> bool:
    """Insert a simple row unless its key is taken; True if inserted (with an event)."""
    table, columns, keys = SIMPLE[kind]
    cur = store.conn.execute(
        f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({','.join('?' * len(columns))})",
        [record[c] for c in columns],
    )
    if cur.rowcount == 0:
        return False
    detail = {k: record[k] for k in columns if k not in keys and k != "at" and record[k] is not None}
    events.append(store, f"{kind}.import", kind, "|".join(str(record[k]) for k in keys),
                  project=record.get("project") if kind == "session" else None, detail=detail)
    return True


def has_event(store: Store, record: dict[str, Any], entity_id: str) -> bool:
    """Whether an event like ``record`` (time, action, entity, hashes) is already here."""
    return store.conn.execute(
        "SELECT 1 FROM events WHERE at = ? AND action = ? AND entity = ? AND entity_id = ?"
        " AND before_hash IS ? AND after_hash IS ?",
        (record["at"], record["action"], record["entity"], entity_id, record["before_hash"],
         record["after_hash"]),
    ).fetchone() is not None


def entity_of_event(store: Store, record: dict[str, Any]) -> str | None:
    """The local entity id of an event like ``record``, under whatever id it was imported
    (how a forgotten memory's history, imported before, is found again)."""
    row = store.conn.execute(
        "SELECT entity_id FROM events WHERE at = ? AND action = ? AND entity = ?"
        " AND before_hash IS ? AND after_hash IS ? ORDER BY id LIMIT 1",
        (record["at"], record["action"], record["entity"], record["before_hash"], record["after_hash"]),
    ).fetchone()
    return None if row is None else str(row[0])


def insert_event(store: Store, record: dict[str, Any], entity_id: str, detail: dict[str, Any]) -> None:
    """Copy an exported event as it was (time, surface, agent), under ``entity_id``."""
    store.conn.execute(
        "INSERT INTO events (at, action, entity, entity_id, source, platform, session, project,"
        " reason, before_hash, after_hash, detail) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (record["at"], record["action"], record["entity"], entity_id, record["source"],
         record["platform"], record["session"], record["project"], record["reason"],
         record["before_hash"], record["after_hash"], orjson.dumps(detail).decode()),
    )
