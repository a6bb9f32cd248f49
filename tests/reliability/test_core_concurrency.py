"""Many short-lived marm processes writing at once lose nothing and report no error."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

#: Eight writers at once, each a loop of real `marm log` processes: enough to make every
#: write wait its turn several times (2 cores), without spending the run on start-ups.
WORKERS, EACH = 8, 8

_WORKER = """
import subprocess, sys
worker, each = int(sys.argv[1]), int(sys.argv[2])
for i in range(each):
    p = subprocess.run([sys.executable, "-m", "marm", "log", f"worker {worker} wrote entry {i} of the batch"],
                       capture_output=True, text=True)
    if p.returncode != 0 or p.stderr:
        sys.stderr.write(f"{worker}/{i}: rc={p.returncode} {p.stderr}")
"""


@pytest.mark.slow
def test_eight_writers_of_short_lived_processes_lose_nothing(tmp_path, marm_home):
    procs = [
        subprocess.Popen([sys.executable, "-c", _WORKER, str(w), str(EACH)], cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for w in range(WORKERS)
    ]
    errors = [p.communicate(timeout=600)[1] for p in procs]
    assert errors == [""] * WORKERS
    conn = sqlite3.connect(marm_home / "marm.db")
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == WORKERS * EACH
    assert conn.execute("SELECT count(DISTINCT content) FROM memories").fetchone()[0] == WORKERS * EACH
    kinds = dict(conn.execute("SELECT kind, count(*) FROM outbox GROUP BY kind").fetchall())
    assert kinds == {"embed": WORKERS * EACH, "concepts": WORKERS * EACH}
    assert conn.execute("SELECT count(*) FROM events WHERE action = 'memory.create'").fetchone()[0] == WORKERS * EACH
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
