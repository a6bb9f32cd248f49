"""The durable SQLite store: opening, PRAGMAs, migrations and transactions.

Every process opens the database for one invocation and closes it on exit. WAL lets
readers run beside the one writer; ``busy_timeout`` makes a writer wait its turn instead
of failing; each write is one short ``BEGIN IMMEDIATE`` transaction and never waits on a
model. The data directory is created 0700 and the database file 0600.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from marm.errors import StoreError
from marm.store.migrations import migrate
from marm.store.records import Actor

BUSY_TIMEOUT_MS = 15_000


def now() -> str:
    """Current UTC time in the one fixed-width form every stored time uses."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Store:
    """One open connection to the durable database, and who is acting through it."""

    def __init__(self, conn: sqlite3.Connection, path: Path, actor: Actor) -> None:
        self.conn = conn
        self.path = path
        self.actor = actor
        self._depth = 0

    @classmethod
    def open(cls, path: Path, actor: Actor | None = None) -> Store:
        """Open (creating and migrating if needed) the database at ``path``."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not path.exists():
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as exc:
            raise StoreError(f"cannot create the database at {path}: {exc.strerror}") from None
        try:
            conn = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database at {path}: {exc}") from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"cannot put {path} in WAL mode (got {mode})")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise StoreError(f"{path} is not a marm SQLite database ({exc})") from None
            if "readonly" in str(exc) or "unable to open" in str(exc):
                raise StoreError(f"cannot write the database at {path}: {exc}") from None
            raise StoreError(f"cannot use the database at {path}: {exc}") from None
        except BaseException:
            conn.close()
            raise
        return cls(conn, path, actor or Actor())

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``); nested calls become savepoints."""
        if self._depth:
            name = f"sp{self._depth}"
            self.conn.execute(f"SAVEPOINT {name}")
            self._depth += 1
            try:
                yield self.conn
            except BaseException:
                self.conn.execute(f"ROLLBACK TO {name}")
                self.conn.execute(f"RELEASE {name}")
                raise
            else:
                self.conn.execute(f"RELEASE {name}")
            finally:
                self._depth -= 1
            return
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(f"cannot write the database at {self.path}: {exc}") from None
        self._depth = 1
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            try:
                self.conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                self.conn.execute("ROLLBACK")
                raise StoreError(f"cannot commit to {self.path}: {exc}") from None
        finally:
            self._depth = 0

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])
