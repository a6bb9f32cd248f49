"""The durable SQLite store: opening, PRAGMAs, migrations and transactions.

Every process opens the database for one invocation and closes it on exit. WAL lets
readers run beside the one writer; ``busy_timeout`` makes a writer wait its turn instead
of failing; each write is one short ``BEGIN IMMEDIATE`` transaction and never waits on a
model. Opening and transactions are ``marm.store.core``'s, shared with the derived
database.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from marm.store import core
from marm.store.migrations import migrate
from marm.store.records import Actor
from marm.text import stamp

__all__ = ["Integrity", "Store", "now"]


def now(offset_seconds: float = 0.0) -> str:
    """Current UTC time (moved by ``offset_seconds``: negative is earlier) in the one
    fixed-width form every stored time uses."""
    return stamp(datetime.now(timezone.utc) + timedelta(seconds=offset_seconds))


@dataclass(frozen=True, slots=True)
class Integrity:
    """One check of ``Store.verify``: what was checked, whether it held, and SQLite's words."""

    name: str
    ok: bool
    detail: str


class Store:
    """One open connection to the durable database, and who is acting through it."""

    def __init__(self, conn: sqlite3.Connection, path: Path, actor: Actor) -> None:
        self.conn = conn
        self.path = path
        self.actor = actor

    @classmethod
    def open(cls, path: Path, actor: Actor | None = None) -> Store:
        """Open (creating and migrating if needed) the database at ``path``."""
        conn = core.connect(path)
        try:
            migrate(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise core.describe(exc, path) from None
        except BaseException:
            conn.close()
            raise
        return cls(conn, path, actor or Actor())

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``); nested calls become savepoints."""
        with core.atomic(self.conn, self.path) as conn:
            yield conn

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def set_busy_timeout(self, seconds: float) -> None:
        """Wait at most ``seconds`` for another process's write lock (a hook's budget)."""
        core.set_busy_timeout(self.conn, seconds)

    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def verify(self) -> list[Integrity]:
        """SQLite's ``quick_check`` and each full-text index's own integrity check."""
        result = self.conn.execute("PRAGMA quick_check").fetchone()[0]
        checks = [Integrity("database", result == "ok", f"quick_check: {result}")]
        for index in ("memories_fts", "memories_tri"):
            try:
                self.conn.execute(f"INSERT INTO {index}({index}, rank) VALUES ('integrity-check', 1)")
                checks.append(Integrity(index, True, "index matches the memories"))
            except sqlite3.DatabaseError as exc:
                checks.append(Integrity(index, False, str(exc)))
        return checks
