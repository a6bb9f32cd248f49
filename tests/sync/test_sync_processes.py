"""Real `marm sync` processes: four stores syncing at once (plus a second sync of one
store at the same time) lose and double nothing; a sync killed with SIGKILL in the
middle of its push or its pull, then run again, converges."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from marm.ops import review as review_ops
from marm.ops import transfer as transfer_ops
from marm.text import content_hash
from tests.sync.helpers import PROJECT, server_text

pytestmark = pytest.mark.slow


def _start(s, i: int, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "marm", "sync", "team"], env={**os.environ, **s.env(i), **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _creates_on_remote(url: str) -> list[str]:
    """The memory ids of every create the remote holds (duplicates would show twice)."""
    if url.startswith("dir:"):
        out = []
        for path in Path(url[4:]).glob("chunks/*.jsonl"):
            out += [e["memory"] for e in map(orjson.loads, path.read_bytes().splitlines())
                    if e["action"] in ("memory.create", "memory.import")]
        return out
    import psycopg

    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(
            "SELECT memory FROM marm_events WHERE action IN ('memory.create', 'memory.import')")]


def test_four_processes_syncing_at_once_lose_and_double_nothing(stores):
    s = stores(4)
    for i in range(4):
        for n in range(25):
            s.log(i, f"NOTE: store {i} fact {n} about the release train")
    review_ops.doubt(s.ctxs[1], s.id_of(1, "NOTE: store 1 fact 3 about the release train"))
    for c in s.ctxs:
        c.close()
    for _ in range(3):
        procs = [_start(s, i) for i in range(4)] + [_start(s, 0)]   # store 0 twice at once
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err.decode()
    states = [s.state(i) for i in range(4)]
    assert all(st == states[0] for st in states)
    texts = [m[0] for m in states[0]["memories"]]
    assert len(texts) == len(set(texts)) == 100
    assert {t: st for t, st, *_ in states[0]["memories"]}["NOTE: store 1 fact 3 about the release train"] == "doubted"
    creates = _creates_on_remote(s.url)
    assert len(creates) == len(set(creates)) == 100
    for i in range(4):
        n = s.ctxs[i].store().conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        assert n == 100


def _import_many(s, i: int, n: int, tmp: Path) -> None:
    lines = [orjson.dumps({"type": "marm-export", "version": 1})]
    for k in range(1, n + 1):
        text = f"NOTE: bulk fact {k} about the deployment pipeline"
        lines.append(orjson.dumps({
            "type": "memory", "id": k, "content": text, "content_hash": content_hash(text), "kind": "note",
            "session": "bulk", "project": PROJECT, "platform": None, "source": "cli",
            "recorded_at": f"2026-01-01T00:00:{k % 60:02d}.{k:06d}Z", "valid_from": None, "valid_to": None,
            "status": "active", "status_reason": None, "superseded_by": None, "metadata": {}}))
    path = tmp / f"bulk{i}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    transfer_ops.import_(s.ctxs[i], str(path))


def _wait_then_kill(proc: subprocess.Popen, ready, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if ready():
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.communicate(timeout=60)
    return proc.returncode


def _scalar(db: Path, sql: str) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute(sql).fetchone()[0] or 0)
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def test_kill_9_in_the_middle_of_push_and_of_pull_then_a_sync_converges(stores, tmp_path):
    # Ten batches each way (the sync.batch setting, through its environment variable), so
    # a kill lands between two committed batches whatever the machine's speed.
    n, batch = 2000, {"MARM_SYNC_BATCH": "200"}
    s = stores(2)
    _import_many(s, 0, n, tmp_path)
    for c in s.ctxs:
        c.close()
    db0, db1 = s.homes[0] / "marm.db", s.homes[1] / "marm.db"
    # Killed once its first batch is on the remote (the second is in flight or the pull has begun).
    code = _wait_then_kill(_start(s, 0, **batch), lambda: _scalar(db0, "SELECT max(pushed_upto) FROM sync_remotes") > 0)
    assert code == -signal.SIGKILL
    assert subprocess.run([sys.executable, "-m", "marm", "sync", "team"], env={**os.environ, **s.env(0)},
                          capture_output=True, timeout=300).returncode == 0
    # Killed while pulling: some memories are in, not all of them.
    pulling = _start(s, 1, **batch)
    code = _wait_then_kill(pulling, lambda: _scalar(db1, "SELECT count(*) FROM memories") > 0)
    partial = _scalar(db1, "SELECT count(*) FROM memories")
    assert code == -signal.SIGKILL and 0 < partial < n, partial
    assert subprocess.run([sys.executable, "-m", "marm", "sync", "team"], env={**os.environ, **s.env(1)},
                          capture_output=True, timeout=300).returncode == 0
    assert _scalar(db1, "SELECT count(*) FROM memories") == n
    assert _scalar(db1, "SELECT count(DISTINCT content) FROM memories") == n
    assert s.state(0) == s.state(1)
    creates = _creates_on_remote(s.url)
    assert len(creates) == len(set(creates)) == n
    assert "bulk fact 1999 about" in server_text(s.url)
