"""The one unit of work: rollback only what is open, the original error, a full disk, the SQL trace.

A full disk is SQLite's own SQLITE_FULL, produced by ``PRAGMA max_page_count`` on the
real connection: the write that needs one more page fails exactly as on a full disk.
"""

from __future__ import annotations

import sqlite3

import pytest

from marm import cli
from marm.errors import StoreError
from marm.store import Store, core


def _fill_up(conn: sqlite3.Connection) -> None:
    """Let the database grow by no page: the next write that needs one gets SQLITE_FULL."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")


def test_a_full_disk_reports_sqlite_s_error_and_leaves_nothing(tmp_path):
    store = Store.open(tmp_path / "marm.db")
    with store.write():
        store.conn.execute("CREATE TABLE t (x TEXT)")
        store.conn.execute("INSERT INTO t VALUES ('kept')")
    _fill_up(store.conn)
    with pytest.raises(StoreError, match="database or disk is full") as raised, store.write():
        store.conn.execute("INSERT INTO t VALUES ('small')")
        store.conn.execute("INSERT INTO t VALUES (?)", ("x" * 200_000,))
    assert "no transaction is active" not in str(raised.value)
    assert not store.in_transaction
    assert [r[0] for r in store.conn.execute("SELECT x FROM t")] == ["kept"]
    store.close()


def test_the_original_error_is_raised_when_sqlite_already_rolled_back(tmp_path):
    conn = core.connect(tmp_path / "x.db")
    conn.execute("CREATE TABLE t (x)")
    with pytest.raises(ZeroDivisionError), core.atomic(conn):
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("ROLLBACK")  # as SQLite does by itself on SQLITE_FULL or an I/O error
        raise ZeroDivisionError
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0


def test_nested_units_are_savepoints(tmp_path):
    conn = core.connect(tmp_path / "x.db")
    conn.execute("CREATE TABLE t (x)")
    with core.atomic(conn):
        conn.execute("INSERT INTO t VALUES ('outer')")
        with pytest.raises(ValueError), core.atomic(conn):
            conn.execute("INSERT INTO t VALUES ('inner')")
            raise ValueError
        with core.atomic(conn):
            conn.execute("INSERT INTO t VALUES ('second inner')")
    assert [r[0] for r in conn.execute("SELECT x FROM t ORDER BY rowid")] == ["outer", "second inner"]


def test_marm_debug_sql_traces_statements_on_stderr(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MARM_DEBUG", "sql")
    conn = core.connect(tmp_path / "x.db")
    with core.atomic(conn):
        conn.execute("CREATE TABLE traced (x)")
    out = capsys.readouterr()
    assert "sql: BEGIN IMMEDIATE" in out.err and "sql: CREATE TABLE traced (x)" in out.err
    assert out.out == ""
    monkeypatch.setenv("MARM_DEBUG", "")
    quiet = core.connect(tmp_path / "y.db")
    quiet.execute("CREATE TABLE untraced (x)")
    assert "untraced" not in capsys.readouterr().err


def test_marm_log_on_a_full_disk_exits_4_with_sqlite_s_message(marm_home, monkeypatch, capsys):
    with pytest.raises(SystemExit) as first:
        cli.main(["log", "--json", "a first memory that fits"])
    assert first.value.code in (0, None)
    capsys.readouterr()
    before = Store.open(marm_home / "marm.db")
    tables = ("memories", "events", "outbox", "log_entries", "sessions")
    counts = {t: before.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    before.close()
    assert counts["memories"] == 1 and counts["events"] >= 1
    opened = core.connect

    def full_after_open(path, what="database"):
        conn = opened(path, what)
        if path.name == "marm.db":
            _fill_up(conn)
        return conn

    monkeypatch.setattr(core, "connect", full_after_open)
    with pytest.raises(SystemExit) as full:
        cli.main(["log", "--json", "DECISION: " + "a memory that needs new pages " * 200])
    err = capsys.readouterr().err
    assert full.value.code == 4
    assert err.startswith("error: ") and "database or disk is full" in err and err.count("\n") == 1
    monkeypatch.setattr(core, "connect", opened)
    store = Store.open(marm_home / "marm.db")
    contents = [r[0] for r in store.conn.execute("SELECT content FROM memories")]
    assert contents == ["a first memory that fits"]
    # the failed write left no memory, event, task or log entry behind
    assert {t: store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables} == counts
    store.close()
