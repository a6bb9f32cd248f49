"""The disposable database of derived graphs (concept graph, code graph).

Everything here can be rebuilt from the durable store and the user's files, so it has
no migrations: each subsystem declares a ``SchemaPart`` (its tables and a version), and
opening the database drops and recreates any part whose stored version differs. Human
verdicts about derived state never live here; they are in the durable database, keyed
on values, so a rebuild cannot undo them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from marm.store import core
from marm.store.migrations import _run


@dataclass(frozen=True, slots=True)
class SchemaPart:
    name: str                 # e.g. "concepts", "code"
    version: int              # bump to have every store rebuild this part
    tables: tuple[str, ...]   # every table/virtual table the DDL creates, to drop on rebuild
    ddl: str                  # CREATE statements, ';'-separated


def connect(path: Path, *parts: SchemaPart) -> sqlite3.Connection:
    """Open the derived database (WAL, autocommit) and make sure ``parts`` are current."""
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
