"""A real `marm import --from mcp-memory` of a source many batches long (``BATCH_RECORDS``)
beside other processes: a writer with the shortest hook budget gets the lock while it
runs, every time; and a kill -9 after its first batches are committed, then the same
import again: the killed run left whole batches only (a prefix of the source, each
memory with its queued work), and the second adds exactly the rest, each text once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from marm import config
from marm.context import Ctx
from marm.hooks.run import BUDGET
from marm.importers import BATCH_RECORDS
from marm.ops.memory import write_memory
from tests.helpers import run_marm

ENTITIES, EACH = 60, 25
TOTAL = ENTITIES * EACH


def _graph(path: Path) -> list[str]:
    """An MCP memory graph of TOTAL observations; the memory texts, in source order."""
    texts = []
    with path.open("w") as f:
        for e in range(ENTITIES):
            observations = [f"fact {e}.{i}: retries < {i} && backoff doubles" for i in range(EACH)]
            f.write(json.dumps({"type": "entity", "name": f"service{e}", "entityType": "service",
                                "observations": observations}) + "\n")
            texts += [f"service{e}: {o}" for o in observations]
    return texts


def _state(db: Path) -> tuple[list[str], Counter[tuple[str, str]]]:
    """Committed memories (in id order) and their pending outbox tasks, as another
    process sees them."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        texts = [c for (c,) in conn.execute("SELECT content FROM memories ORDER BY id")]
        tasks = Counter(conn.execute(
            "SELECT o.kind, m.content FROM outbox o JOIN memories m ON o.target = CAST(m.id AS TEXT)"))
        return texts, tasks
    finally:
        conn.close()


def _committed(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    except sqlite3.OperationalError:  # not created or migrated yet
        return 0
    finally:
        conn.close()


def test_kill_9_between_batches_then_import_again_adds_exactly_the_rest(tmp_path, marm_home):
    assert TOTAL > 4 * BATCH_RECORDS
    source = tmp_path / "memory.jsonl"
    texts = _graph(source)
    db = config.database_path(marm_home)
    proc = subprocess.Popen([sys.executable, "-m", "marm", "import", "--from", "mcp-memory", str(source), "--json"],
                            cwd=tmp_path, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _committed(db) == 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the import committed nothing before it ended: {proc.stderr.read().decode()[-300:]}")
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL

    kept, tasks = _state(db)
    assert 0 < len(kept) < TOTAL  # killed mid-way: some batches in, the rest not
    # Whole batches only: exactly the first memories of the source, in order, each with
    # both its queued tasks (written in the memory's own transaction).
    assert kept == texts[:len(kept)]
    assert tasks == Counter({(k, t): 1 for t in kept for k in ("embed", "concepts")})

    again = run_marm("import", "--from", "mcp-memory", str(source), "--json", cwd=tmp_path, timeout=300)
    assert again.code == 0, again.err
    counts = again.json()["projects"]["(global)"]
    assert counts["added"] == {"note": TOTAL - len(kept)}
    assert counts["skipped"] == {"already here": len(kept)}

    final, tasks = _state(db)
    assert Counter(final) == Counter(texts)  # the full set, each text once
    assert len(final) == TOTAL
    assert tasks == Counter({(k, t): 1 for t in texts for k in ("embed", "concepts")})


def test_a_hook_with_the_shortest_budget_writes_while_an_import_runs(tmp_path, marm_home):
    """Each write below waits for the lock as a hook does (its busy timeout is the
    session-end budget, the shortest); none may give up. Without the pause between
    batches (``BATCH_PAUSE``) most waited the whole budget and some gave up (measured)."""
    source = tmp_path / "memory.jsonl"
    texts = _graph(source)
    db = config.database_path(marm_home)
    proc = subprocess.Popen([sys.executable, "-m", "marm", "import", "--from", "mcp-memory", str(source), "--json"],
                            cwd=tmp_path, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _committed(db) == 0 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    hook_texts, failures = [], []
    while proc.poll() is None and time.monotonic() < deadline:
        hook = Ctx(source="hook:session-end", cwd=tmp_path, env=dict(os.environ))
        try:
            hook.store().set_busy_timeout(BUDGET["session-end"])
            text = f"hook write {len(hook_texts)} while the import runs"
            write_memory(hook, text, project=str(tmp_path / "hooked"))
            hook_texts.append(text)
        except Exception as exc:  # noqa: BLE001 - what a hook would have failed with
            failures.append(repr(exc))
        finally:
            hook.close()
        time.sleep(0.05)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-300:]
    assert failures == []
    assert len(hook_texts) >= 3  # the import ran through several of them
    assert _added(out) == {"note": TOTAL}
    final, _ = _state(db)
    assert Counter(final) == Counter(texts + hook_texts)  # every import text once, every hook write in


def _added(out: bytes) -> dict[str, int]:
    return json.loads(out)["projects"]["(global)"]["added"]
