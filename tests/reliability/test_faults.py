"""Item 11 of issue 15, the fault half: a full disk on a real tiny filesystem, and
``kill -9`` at random moments of an import and of a code index, each followed by a
check that nothing is lost or doubled. (kill -9 of a drain: test_embed_kill.py; many
concurrent writers: test_core_concurrency.py.)"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from marm.text import content_hash
from tests.helpers import git_init, run_marm


def _count(db: Path, sql: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def tiny_fs(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny filesystem needs root: not allowed here")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"mounting a tiny filesystem is not allowed here: {made.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_exits_4_with_sqlite_s_message_and_keeps_everything_written(tiny_fs):
    env = {"MARM_HOME": str(tiny_fs / "home")}
    stored = []
    for i in range(3):
        assert run_marm("log", f"NOTE: before the disk filled {i}", env=env).code == 0
        stored.append(i)
    filler = tiny_fs / "filler"
    with open(filler, "wb", buffering=0) as f:  # unbuffered: tell() is what reached the disk
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
        f.truncate(max(0, f.tell() - 160 * 1024))  # room to open the store, not to store the text
    big = "NOTE: this one does not fit " + " ".join(f"word{i}" for i in range(5000))
    failed = run_marm("log", "-", input=big, env=env)
    assert failed.code == 4, (failed.out, failed.err)
    assert "database or disk is full" in failed.err, failed.err  # SQLite's own message
    assert failed.err.count("\n") == 1 and "Traceback" not in failed.err
    filler.unlink()
    recall = run_marm("recall", "before the disk filled", "--mode", "lexical", "--limit", "10", env=env)
    assert recall.code == 0 and len(recall.json()["results"]) == 3
    assert "does not fit" not in recall.out
    db = tiny_fs / "home" / "marm.db"
    assert _count(db, "SELECT count(*) FROM memories") == 3
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    assert run_marm("log", "NOTE: after space came back", env=env).code == 0


def _kill_at_random(args: list[str], env: dict[str, str], cwd: Path, seed: int) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "marm", *args], env={**os.environ, **env}, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(random.Random(seed).uniform(0.3, 1.5))
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.mark.parametrize("seed", [1, 2])
def test_kill_9_during_an_import_then_import_again_loses_and_doubles_nothing(tmp_path, marm_home, seed):
    source = {"MARM_HOME": str(tmp_path / "source")}
    texts = [f"NOTE: imported memory number {i} about ledgers" for i in range(600)]
    assert run_marm("log", texts[0], env=source).code == 0
    export = run_marm("export", env=source).out.splitlines()
    header, first = json.loads(export[0]), json.loads(export[1])
    lines = [json.dumps(header)]
    for i, text in enumerate(texts, start=1):
        lines.append(json.dumps({**first, "id": i, "content": text, "content_hash": content_hash(text)}))
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    _kill_at_random(["import", str(path)], {}, tmp_path, seed)
    again = run_marm("import", str(path), timeout=300)
    assert again.code == 0, again.err
    db = marm_home / "marm.db"
    assert _count(db, "SELECT count(*) FROM memories") == len(texts)
    assert _count(db, "SELECT count(DISTINCT content_hash) FROM memories") == len(texts)
    assert run_marm("import", str(path)).code == 0
    assert _count(db, "SELECT count(*) FROM memories") == len(texts)


@pytest.mark.parametrize("seed", [3, 4])
def test_kill_9_during_a_code_index_then_index_again_matches_a_clean_index(tmp_path, marm_home, seed):
    repo = git_init(tmp_path / "repo")
    for i in range(150):
        (repo / f"mod_{i}.py").write_text(
            f"def handler_{i}(x):\n    return helper_{i}(x) + 1\n\n\ndef helper_{i}(x):\n    return x * {i}\n")
    _kill_at_random(["code", "index", str(repo)], {}, tmp_path, seed)
    again = run_marm("code", "index", str(repo), timeout=300)
    assert again.code == 0, again.err
    clean_home = tmp_path / "clean"
    assert run_marm("code", "index", str(repo), env={"MARM_HOME": str(clean_home)}, timeout=300).code == 0
    tables = [r[0] for r in sqlite3.connect(clean_home / "derived.db").execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'code_%' AND name NOT LIKE '%fts%'")]
    assert tables
    for table in tables:
        n = _count(clean_home / "derived.db", f"SELECT count(*) FROM {table}")
        assert _count(marm_home / "derived.db", f"SELECT count(*) FROM {table}") == n, table
    assert _count(marm_home / "derived.db", "SELECT count(*) FROM code_symbols WHERE name LIKE 'handler_%'") == 150
