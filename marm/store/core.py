"""The one way marm opens a SQLite file, and the one unit of work over it.

``marm.db``, ``derived.db``, the concept graph and the code graph all open through
``connect`` (directory 0700, file 0600, everything in the directory tightened to that, WAL, ``busy_timeout``, ``foreign_keys``) and all
write through ``atomic``:

- the outermost ``atomic`` is ``BEGIN IMMEDIATE`` ... ``COMMIT``; a nested one is a
  SAVEPOINT, so a helper that needs a transaction can take one inside its caller's;
- on an error it rolls back only when a transaction is still open (SQLite rolls back
  by itself on a full disk or an I/O error, and a second ``ROLLBACK`` would replace the
  real error with "cannot rollback - no transaction is active"), then re-raises the
  original error; an ``OperationalError`` (full disk, I/O, locked) becomes a
  ``StoreError`` carrying SQLite's own message, so the CLI exits 4 and says why.

``MARM_DEBUG=sql`` (or a comma list containing ``sql``) prints every statement on
stderr, never stdout: the MCP face's stdout is the protocol.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from marm.errors import StoreError
from marm.store import perms

BUSY_TIMEOUT_MS = 15_000


class NotMarm(StoreError):
    """The file is not a usable marm database: another program's, not SQLite, or damaged."""

_savepoints = itertools.count(1)


def _trace_sql() -> bool:
    return "sql" in os.environ.get("MARM_DEBUG", "").split(",")


def _print_sql(statement: str) -> None:
    print(f"sql: {statement}", file=sys.stderr)


#: ``PRAGMA application_id`` of every file marm writes ("marm" in ASCII): how a later
#: open tells marm's file from another program's SQLite file placed at the same path.
APPLICATION_ID = 0x6D61726D


def connect(path: Path, what: str = "database", marker: str = "memories") -> sqlite3.Connection:
    """Open ``path`` (created 0600 in a 0700 directory) in autocommit mode with marm's PRAGMAs.

    ``what`` names the file in error messages ("database", "derived database").
    ``marker`` is a table only marm's file of this kind has: a file from before the
    application id that holds it is marm's and is stamped; any other non-empty SQLite
    file is refused before anything (WAL included) is written to it.
    """
    if read_only_file(path):
        return _connect_read_only(path, what, marker)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    except OSError as exc:
        raise StoreError(f"cannot create the {what} at {path}: {exc.strerror}") from None
    perms.tighten(path.parent)
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the {what} at {path}: {exc}") from None
    if _trace_sql():
        conn.set_trace_callback(_print_sql)

    def configure(conn: sqlite3.Connection) -> None:
        set_busy_timeout(conn, BUSY_TIMEOUT_MS / 1000)
        if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
            # A new file frees pages incrementally (``marm.store.space``); the mode can
            # only be chosen before the first table, or later through a whole VACUUM.
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        _claim(conn, path, what, marker)
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StoreError(f"cannot put {path} in WAL mode (got {mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")

    return _configured(conn, path, what, configure)


def _configured(conn: sqlite3.Connection, path: Path, what: str,
                configure: Callable[[sqlite3.Connection], None]) -> sqlite3.Connection:
    """``conn`` after ``configure``; on any failure it is closed, and a database error is
    told in marm's words (``describe``)."""
    try:
        configure(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise describe(exc, path, what) from None
    except BaseException:
        conn.close()
        raise
    return conn


def read_only_file(path: Path) -> bool:
    """An existing file this process may read but not write (a read-only mount, a
    store of another user's shared read-only): opened read-only rather than refused."""
    return path.is_file() and os.access(path, os.R_OK) and (
        not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK))


def _connect_read_only(path: Path, what: str, marker: str) -> sqlite3.Connection:
    """Open ``path`` with ``mode=ro``; every write then fails with SQLite's "attempt to
    write a readonly database", which ``atomic`` turns into exit 4.

    SQLite opens a read-only WAL database when its ``-shm`` and ``-wal`` files exist (a
    leftover WAL is read) or can be created. In a read-only folder without them there is
    no WAL to miss, so the file is opened ``immutable``; a ``-wal`` with no ``-shm``
    cannot be read safely and is refused with that reason.
    """
    uri = path.resolve().as_uri()
    wal = path.with_name(path.name + "-wal")
    shm = path.with_name(path.name + "-shm")
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                               isolation_level=None, check_same_thread=False)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        if wal.exists() and wal.stat().st_size and not shm.exists():
            raise StoreError(f"cannot read the {what} at {path}: it is read-only and its write-ahead log"
                             f" {wal.name} has no {shm.name} beside it ({exc})") from None
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as exc2:
            raise StoreError(f"cannot open the {what} at {path} (read-only): {exc2}") from None

    def configure(conn: sqlite3.Connection) -> None:
        set_busy_timeout(conn, BUSY_TIMEOUT_MS / 1000)
        _claim(conn, path, what, marker, stamp=False)
        conn.execute("PRAGMA foreign_keys = ON")

    return _configured(conn, path, what, configure)


def _claim(conn: sqlite3.Connection, path: Path, what: str, marker: str, stamp: bool = True) -> None:
    """Make sure ``path`` is marm's (its application id, or an empty file, or an old
    marm file recognised by ``marker``) and stamp it; refuse anything else untouched."""
    app = conn.execute("PRAGMA application_id").fetchone()[0]
    if app == APPLICATION_ID:
        return
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if app != 0 or (tables and marker not in tables):
        owner = f"application id {app:#x}" if app else f"tables {', '.join(sorted(tables)[:5])}"
        raise NotMarm(f"{path} is not a marm {what}: it is another program's SQLite file ({owner});"
                         " marm leaves it as it is. Move it away or set MARM_HOME elsewhere")
    if stamp:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def set_busy_timeout(conn: sqlite3.Connection, seconds: float) -> None:
    """How long a statement waits for another process's lock before failing."""
    conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")


def describe(exc: sqlite3.DatabaseError, path: Path, what: str = "database") -> StoreError:
    """The one-line ``StoreError`` for a SQLite failure while opening ``path``."""
    text = str(exc)
    if "not a database" in text or "malformed" in text:
        return NotMarm(f"{path} is not a marm SQLite {what} ({text})")
    if "readonly" in text or "unable to open" in text:
        return StoreError(f"cannot write the {what} at {path}: {text}")
    return StoreError(f"cannot use the {what} at {path}: {text}")


@contextmanager
def atomic(conn: sqlite3.Connection, where: object = "the database") -> Iterator[sqlite3.Connection]:
    """One unit of work: ``BEGIN IMMEDIATE`` outermost, a SAVEPOINT when nested.

    ``where`` (usually the file's path) names the database in error messages.
    """
    if conn.in_transaction:
        with _savepoint(conn):
            yield conn
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise StoreError(f"cannot write {where}: {exc}") from None
    try:
        yield conn
    except BaseException as exc:
        _rollback(conn, "ROLLBACK")
        if isinstance(exc, sqlite3.OperationalError):
            raise StoreError(f"cannot write {where}: {exc}") from exc
        raise
    try:
        conn.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        _rollback(conn, "ROLLBACK")
        raise StoreError(f"cannot commit to {where}: {exc}") from exc


@contextmanager
def _savepoint(conn: sqlite3.Connection) -> Iterator[None]:
    name = f"marm_sp{next(_savepoints)}"
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        _rollback(conn, f"ROLLBACK TO {name}", f"RELEASE {name}")
        raise
    conn.execute(f"RELEASE {name}")


def _rollback(conn: sqlite3.Connection, *statements: str) -> None:
    """Undo what is still open; a failure here never replaces the error being raised."""
    if not conn.in_transaction:  # SQLite already rolled back (full disk, I/O error)
        return
    with contextlib.suppress(sqlite3.Error):
        for statement in statements:
            conn.execute(statement)
