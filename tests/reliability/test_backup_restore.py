"""Item 10 of issue 15: ``marm backup`` is an online, consistent copy through SQLite's
backup API while writers run (mode 0600); ``marm backup --restore`` verifies a file,
keeps the current store aside, restores, and queues the derived state for rebuild."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import invoke_marm, run_marm


def _writer(n: int, tag: str, stop: Path) -> subprocess.Popen:
    """Up to ``n`` real ``marm log`` processes, one after another, until ``stop`` exists."""
    code = ("import os, subprocess, sys\n"
            f"for i in range({n}):\n"
            f"    if os.path.exists({str(stop)!r}):\n"
            "        break\n"
            f"    subprocess.run([sys.executable, '-m', 'marm', 'log', 'NOTE: {tag} write ' + str(i)], check=True,"
            " capture_output=True)\n")
    return subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ))


def _wait_for_memories(home: Path, n: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        conn = sqlite3.connect(home / "marm.db", timeout=30)
        try:
            if conn.execute("SELECT count(*) FROM memories").fetchone()[0] >= n:
                return
        finally:
            conn.close()
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} memories after 120 s")


def test_backup_while_writers_run_is_consistent_and_private(tmp_path, marm_home):
    assert run_marm("log", "DECISION: backups are taken online").code == 0
    stop = tmp_path / "stop"
    writers = [_writer(15, f"w{k}", stop) for k in range(2)]
    files = []
    try:
        _wait_for_memories(marm_home, 2)  # the writers are under way before the first backup
        for k in range(3):
            run = run_marm("backup", str(tmp_path / f"b{k}.db"))
            assert run.code == 0, run.err
            files.append(tmp_path / f"b{k}.db")
    finally:
        stop.touch()  # the backups are taken: the writers need not go on
        for w in writers:
            assert w.wait(timeout=180) == 0
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
        conn = sqlite3.connect(f)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one file, no WAL
            memories = {r[0] for r in conn.execute("SELECT id FROM memories")}
            created = {int(r[0]) for r in conn.execute(
                "SELECT entity_id FROM events WHERE action = 'memory.create'")}
            assert 1 in memories and memories == created  # each memory with its event, no half write
        finally:
            conn.close()
    assert not list(tmp_path.glob(".*.tmp"))


def test_restore_verifies_keeps_the_current_store_and_queues_the_rebuild(tmp_path, marm_home):
    assert invoke_marm("log", "DECISION: the ledger closes at midnight").code == 0
    backup = tmp_path / "before.db"
    assert invoke_marm("backup", str(backup)).code == 0
    assert invoke_marm("log", "FIX: written after the backup").code == 0
    matrix = marm_home / "vectors" / "m" / "p.vec"
    matrix.parent.mkdir(parents=True)
    matrix.write_bytes(b"stale")

    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(backup.read_bytes()[:4096] + b"\x00" * 8192)
    for bad in (foreign, damaged, tmp_path / "missing.db"):
        run = invoke_marm("backup", "--restore", str(bad))
        assert run.code in (2, 4), (bad, run.out, run.err)
        assert "Traceback" not in run.err
    assert "written after the backup" in invoke_marm("recall", "written after", "--mode", "lexical").out

    run = invoke_marm("backup", "--restore", str(backup))
    assert run.code == 0, run.err
    kept = Path(run.json()["previous"])
    assert kept.parent == marm_home and stat.S_IMODE(kept.stat().st_mode) == 0o600
    recall = invoke_marm("recall", "ledger written", "--mode", "lexical", "--limit", "10").out
    assert "closes at midnight" in recall and "written after the backup" not in recall
    old = sqlite3.connect(kept)
    try:
        assert old.execute("SELECT count(*) FROM memories WHERE content LIKE '%after the backup%'").fetchone()[0] == 1
    finally:
        old.close()
    assert not matrix.exists()
    status = invoke_marm("status").json()
    assert "concepts" in str(status) and invoke_marm("history", "1").code == 0
    store = sqlite3.connect(marm_home / "marm.db")
    try:
        assert store.execute("SELECT count(*) FROM outbox WHERE kind = 'concepts' AND state = 'pending'"
                             ).fetchone()[0] == 1
        assert store.execute("SELECT count(*) FROM events WHERE action = 'store.restore'").fetchone()[0] == 1
    finally:
        store.close()
