"""Finding 1 of issue 15: another program's SQLite file at marm's path is refused with
exit 4 and left byte for byte; marm's own files carry ``PRAGMA application_id`` and an
old marm file without it is recognised by its tables and stamped."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from marm.store.core import APPLICATION_ID
from tests.helpers import run_marm


def _foreign(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
    conn.commit()
    conn.close()
    return path.read_bytes()


def _app_id(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA application_id").fetchone()[0]
    finally:
        conn.close()


def test_a_foreign_database_is_refused_and_left_as_it_was(marm_home):
    db = marm_home / "marm.db"
    before = _foreign(db)
    for args in (("log", "a note"), ("recall", "note"), ("status",)):
        run = run_marm(*args)
        assert run.code == 4, (args, run.out, run.err)
        assert "another program's SQLite file" in run.err and "Traceback" not in run.err
    assert db.read_bytes() == before
    assert sorted(p.name for p in marm_home.iterdir() if p.name.startswith("marm.db")) == ["marm.db"]  # no -wal


def test_a_foreign_derived_database_is_moved_aside_byte_for_byte(marm_home):
    """derived.db is disposable (item 6): another program's file there is kept, renamed."""
    assert run_marm("log", "DECISION: keep the derived graph on disk").code == 0
    derived = marm_home / "derived.db"
    before = _foreign(derived)
    run = run_marm("concepts", "recall", "derived graph")
    assert run.code == 0, (run.out, run.err)
    aside = [p for p in marm_home.iterdir() if p.name.startswith("derived.db.aside-") and "-wal" not in p.name
             and "-shm" not in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == before
    assert _app_id(derived) == APPLICATION_ID


def test_marm_files_carry_the_id_and_an_old_store_is_stamped(marm_home):
    assert run_marm("log", "DECISION: stamp the store").code == 0
    db = marm_home / "marm.db"
    assert _app_id(db) == APPLICATION_ID
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA application_id = 0")  # as a store written before the id
    conn.close()
    assert _app_id(db) == 0
    recall = run_marm("recall", "stamp the store", "--mode", "lexical")
    assert recall.code == 0 and "stamp the store" in recall.out
    assert _app_id(db) == APPLICATION_ID
