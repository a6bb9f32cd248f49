"""The disposable database of derived graphs (concept graph, code graph).

Everything here can be rebuilt from the durable store and the user's files, so it has
no migrations: each subsystem declares a ``SchemaPart`` (its tables and a version), and
opening the database drops and recreates any part whose stored version differs. Human
verdicts about derived state never live here; they are in the durable database, keyed
on values, so a rebuild cannot undo them.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import orjson

from marm.store import code_repos, core, events, outbox, perms
from marm.store.db import Store, now
from marm.store.migrations import _run


@dataclass(frozen=True, slots=True)
class SchemaPart:
    name: str                 # e.g. "concepts", "code"
    version: int              # bump to have every store rebuild this part
    tables: tuple[str, ...]   # every table/virtual table the DDL creates, to drop on rebuild
    ddl: str                  # CREATE statements, ';'-separated


#: Beside derived.db: one JSON line per time it was moved aside (read by the drain, which
#: queues the rebuild, and by ``marm doctor``, which says what happened).
MOVED_NOTE = "derived.db.moved"


def connect(path: Path, *parts: SchemaPart) -> sqlite3.Connection:
    """Open the derived database (WAL, autocommit) and make sure ``parts`` are current.

    It is disposable: a damaged or foreign file is moved aside (never deleted: it may be
    someone's) and a fresh one made; the note beside it has the drain queue the rebuild.
    """
    try:
        return _connect(path, *parts)
    except core.NotMarm as exc:
        _move_aside(path, str(exc))
        return _connect(path, *parts)


def _move_aside(path: Path, reason: str) -> Path:
    stamp = now()[:19].replace(":", "")
    aside = path.with_name(f"{path.name}.aside-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        src = path.with_name(path.name + suffix)
        if src.exists():
            os.replace(src, aside.with_name(aside.name + suffix))
    note = path.with_name(MOVED_NOTE)
    with open(perms.open_append(note), "ab") as f:
        f.write(orjson.dumps({"at": now(), "reason": reason, "aside": aside.name, "queued": False}) + b"\n")
    return aside


def moves(home: Path) -> list[dict]:
    """Every recorded move of derived.db, oldest first."""
    try:
        lines = (home / MOVED_NOTE).read_bytes().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return out


def requeue_after_move(store: Store, home: Path) -> int:
    """If derived.db was moved aside since the last drain, queue its rebuild: every memory
    for the concept graph (parked tasks re-armed), every known repository for the code
    graph; an event records it. Returns how many moves this answered."""
    pending = [m for m in moves(home) if not m.get("queued")]
    if not pending:
        return 0
    with store.write():
        ids = [r[0] for r in store.conn.execute("SELECT id FROM memories")]
        for memory_id in ids:
            outbox.enqueue(store, "concepts", memory_id, None)
        for repo in code_repos.listing(store):
            code_repos.mark_dirty(store, repo.path, repo.project)
        for m in pending:
            events.append(store, "derived.rebuild", "derived", m["aside"], reason=m["reason"],
                          detail={"memories": len(ids)})
    note = home / MOVED_NOTE
    tmp = note.with_name(note.name + ".tmp")
    with open(perms.open_append(tmp), "ab") as f:
        f.truncate(0)
        f.write(b"".join(orjson.dumps({**m, "queued": True}) + b"\n" for m in moves(home)))
    os.replace(tmp, note)
    return len(pending)


def _connect(path: Path, *parts: SchemaPart) -> sqlite3.Connection:
    conn = core.connect(path, "derived database", marker="schema_parts")
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS schema_parts (name TEXT PRIMARY KEY, version INTEGER NOT NULL)")
        for part in parts:
            ensure(conn, part)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise core.describe(exc, path, "derived database") from None
    except BaseException:
        conn.close()
        raise
    return conn


def ensure(conn: sqlite3.Connection, part: SchemaPart) -> None:
    row = conn.execute("SELECT version FROM schema_parts WHERE name = ?", (part.name,)).fetchone()
    if row is not None and row[0] == part.version:
        return
    with core.atomic(conn, "the derived database"):
        row = conn.execute("SELECT version FROM schema_parts WHERE name = ?", (part.name,)).fetchone()
        if row is None or row[0] != part.version:
            _create(conn, part)


def _create(conn: sqlite3.Connection, part: SchemaPart) -> None:
    for table in part.tables:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    _run(conn, part.ddl)
    conn.execute(
        "INSERT INTO schema_parts (name, version) VALUES (?, ?) ON CONFLICT (name)"
        " DO UPDATE SET version = excluded.version",
        (part.name, part.version),
    )


def reset(conn: sqlite3.Connection, part: SchemaPart) -> None:
    """Drop and recreate one part's tables (a full rebuild starts here)."""
    with core.atomic(conn, "the derived database"):
        _create(conn, part)
