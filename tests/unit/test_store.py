"""The durable store: migrations, PRAGMAs, file modes, raw content, refusal of bad files."""

from __future__ import annotations

import os
import sqlite3
import stat

import pytest

from marm.errors import StoreError, StoreTooNew
from marm.store import Store, outbox
from marm.store.migrations import SCHEMA_VERSION


def test_fresh_store_is_migrated_wal_and_private(tmp_path):
    path = tmp_path / "home" / "marm.db"
    store = Store.open(path)
    assert store.schema_version() == SCHEMA_VERSION
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    store.close()
    again = Store.open(path)  # reopening runs no migration and keeps the version
    assert again.schema_version() == SCHEMA_VERSION
    again.close()


def test_database_from_a_newer_marm_is_refused(tmp_path):
    path = tmp_path / "marm.db"
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreTooNew, match="newer than this marm"):
        Store.open(path)


def test_a_file_that_is_not_sqlite_is_refused(tmp_path):
    path = tmp_path / "marm.db"
    path.write_bytes(b"this is not a database at all, just text" * 100)
    with pytest.raises(StoreError, match="not a marm SQLite database"):
        Store.open(path)


def test_failed_write_rolls_back_everything(tmp_path):
    store = Store.open(tmp_path / "marm.db")
    with pytest.raises(RuntimeError), store.write():
        outbox.enqueue(store, "embed", 1, "h")
        raise RuntimeError("boom")
    assert outbox.counts(store) == {}
    with store.write():
        outbox.enqueue(store, "embed", 1, "h")
    assert outbox.counts(store) == {"embed": {"pending": 1, "parked": 0}}
    store.close()


def test_outbox_claim_complete_fail_and_park(tmp_path):
    store = Store.open(tmp_path / "marm.db")
    with store.write():
        for target in range(3):
            outbox.enqueue(store, "embed", target, f"h{target}")
    first = outbox.claim(store, "embed", 2)
    assert [t.target for t in first] == ["0", "1"]
    assert [t.target for t in outbox.claim(store, "embed", 5)] == ["2"]  # leased ones are skipped
    with store.write():
        outbox.complete(store, first[:1])
    assert outbox.pending(store, "embed") == 2
    task = first[1]
    for attempt in range(1, outbox.MAX_ATTEMPTS + 1):
        parked = outbox.fail(store, task, f"failure {attempt}")
        task = outbox.claim(store, "embed", 1)[0] if not parked else task
    assert parked
    assert outbox.parked(store) == [("embed", "1", 3, "failure 3")]
    assert outbox.retry_parked(store) == 1
    assert outbox.pending(store, "embed") == 2
    store.close()


def test_reenqueue_while_leased_keeps_the_task(tmp_path):
    """A task re-armed for new content while a drain holds it must survive that drain."""
    store = Store.open(tmp_path / "marm.db")
    with store.write():
        outbox.enqueue(store, "embed", 7, "old")
    [task] = outbox.claim(store, "embed", 1)
    with store.write():
        outbox.enqueue(store, "embed", 7, "new")
    with store.write():
        outbox.complete(store, [task])
    [again] = outbox.claim(store, "embed", 1)
    assert again.content_hash == "new"
    store.close()
