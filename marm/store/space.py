"""Free pages handed back to the file system after large deletes.

SQLite keeps the pages a delete frees for its next inserts, so the file never shrinks:
after migration 7 moved the vector BLOBs out, after a compaction or after many
forgets, free pages can be a large share of ``marm.db``. ``reclaim`` runs where no one
waits for it (the end of a drain, under its lease; a forget): once free pages pass
``RECLAIM_SHARE`` of the file and ``RECLAIM_MIN_BYTES``, it frees them with
``PRAGMA incremental_vacuum``. A database is created in that mode (``core.connect``);
one made before is switched by its first reclaim, a whole ``VACUUM`` (``auto_vacuum``
changes only through one), which holds the write lock while it copies the database:
writers wait for it that once (seconds at 100k memories), never again.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from marm.store.db import Store

RECLAIM_SHARE = 0.10
RECLAIM_MIN_BYTES = 8 << 20
_INCREMENTAL = 2


@dataclass(frozen=True, slots=True)
class Space:
    """Bytes of the database file and of its free pages."""

    total: int
    free: int


def space(store: Store) -> Space:
    page = int(store.conn.execute("PRAGMA page_size").fetchone()[0])
    pages = int(store.conn.execute("PRAGMA page_count").fetchone()[0])
    free = int(store.conn.execute("PRAGMA freelist_count").fetchone()[0])
    return Space(pages * page, free * page)


def reclaim(store: Store, share: float = RECLAIM_SHARE, min_bytes: int = RECLAIM_MIN_BYTES) -> int:
    """Free the database's free pages if they pass the thresholds; returns the bytes freed
    (0 when below them, or when another connection's transaction kept the VACUUM out)."""
    if store.in_transaction:
        return 0
    before = space(store)
    if before.free < max(min_bytes, share * before.total):
        return 0
    try:
        if int(store.conn.execute("PRAGMA auto_vacuum").fetchone()[0]) == _INCREMENTAL:
            # ``executescript``: the pragma frees one page per step, and ``execute`` steps
            # it once; there is no transaction open here for it to commit.
            store.conn.executescript("PRAGMA incremental_vacuum;")
        else:
            store.conn.execute(f"PRAGMA auto_vacuum = {_INCREMENTAL}")
            store.conn.execute("VACUUM")
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except sqlite3.OperationalError:  # busy: the next drain tries again
        return 0
    return before.total - space(store).total
