"""Online backup and restore of the durable database through SQLite's backup API.

Why the backup API and not a file copy: marm.db is in WAL mode and written by short
processes at any moment; copying the file (or the file and its WAL) can catch a write
half-way. ``Connection.backup`` copies a consistent snapshot page by page under SQLite's
own locking, while writers keep running, and a restore copies the backup *into* the
open store the same way, so a process that has the store open sees the restored
content rather than a file swapped under it.

A restore first keeps the current store aside (a backup of it, beside it), and then
invalidates what is derived from it: the vector matrix files (rebuilt from the database
on the next load) and the concept graph (reset, every memory queued for the drain).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from marm.errors import BadInput, StoreError
from marm.store import core, events, outbox, perms, vectors
from marm.store.db import Store, now
from marm.store.migrations import SCHEMA_VERSION, migrate


@dataclass(frozen=True, slots=True)
class Checked:
    path: Path
    memories: int
    schema: int


def backup(store: Store, dest: Path) -> Checked:
    """Write a consistent copy of ``store`` to ``dest`` (0600, one file, no WAL)."""
    dest = dest.resolve()
    if dest == store.path.resolve():
        raise BadInput("the backup file cannot be the store itself")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600))
        target = sqlite3.connect(tmp, isolation_level=None)
        try:
            store.conn.backup(target)
            target.execute("PRAGMA journal_mode = DELETE")
        finally:
            target.close()
        os.replace(tmp, dest)
        perms.private(dest)
    except sqlite3.Error as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"cannot back up to {dest}: {exc}") from None
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"cannot write the backup {dest}: {exc.strerror}") from None
    checked = verify(dest)
    try:  # the audit trail says when a backup was taken; a read-only store is backed up all the same
        with store.write():
            events.append(store, "store.backup", "store", dest.name, detail={"memories": checked.memories})
    except StoreError:
        pass
    return checked


def verify(path: Path) -> Checked:
    """Check that ``path`` is a whole marm database this marm can use; say what it holds."""
    if not path.is_file():
        raise BadInput(f"no backup file at {path}")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the backup {path}: {exc}") from None
    try:
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if app != core.APPLICATION_ID and not (app == 0 and "memories" in tables):
            raise StoreError(f"{path} is not a marm database backup")
        check = conn.execute("PRAGMA integrity_check").fetchall()
        if [r[0] for r in check] != ["ok"]:
            raise StoreError(f"the backup {path} is damaged: {check[0][0]}")
        schema = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if schema > SCHEMA_VERSION:
            raise StoreError(f"the backup {path} is at schema version {schema}, newer than this marm"
                             f" (version {SCHEMA_VERSION}); upgrade marm to restore it")
        count = int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a usable marm backup: {exc}") from None
    finally:
        conn.close()
    return Checked(path, count, schema)


def restore(store: Store, source: Path, derived_db: Path) -> tuple[Checked, Path]:
    """Replace ``store``'s content by the verified backup ``source``; return what was
    restored and where the previous content was kept."""
    checked = verify(source)
    aside = store.path.with_name(f"{store.path.name}.before-restore-{now()[:19].replace(':', '')}")
    backup(store, aside)
    src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    try:
        src.backup(store.conn)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot restore from {source}: {exc}; the previous store is kept at {aside}") from None
    finally:
        src.close()
    store.conn.execute("PRAGMA journal_mode = WAL")
    store.conn.execute(f"PRAGMA application_id = {core.APPLICATION_ID}")
    migrate(store.conn)
    vectors.drop_all(store, store.path.parent)  # the backup's books name files it does not hold
    if derived_db.exists():
        from marm.store.concept_graph import Graph

        graph = Graph.open(derived_db)
        try:
            graph.reset()
        finally:
            graph.close()
    with store.write():
        for (memory_id,) in store.conn.execute("SELECT id FROM memories").fetchall():
            outbox.enqueue(store, "concepts", memory_id, None)
            outbox.enqueue(store, "embed", memory_id, None)
        events.append(store, "store.restore", "store", source.name, detail={
            "memories": checked.memories, "schema": checked.schema, "previous": aside.name})
    return checked, aside
