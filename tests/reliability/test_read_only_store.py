"""Finding 4 of issue 15: a read-only store can be read. A store whose file and folder
this user cannot write (mode 0400/0500; as root the CLI runs without the capabilities
that let root write through any mode), including one with a leftover WAL holding the
newest memory, answers recall, show, history, summary, export and status; a write exits
4 with one clear line."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers import Run, run_marm

#: Root minus the capabilities that override file modes: file modes bind it like anyone.
AS_PLAIN_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner,-linux_immutable",
                 "--inh-caps=-all"]


def _run(*args: str, home: Path, cwd: Path) -> Run:
    env = {**os.environ, "MARM_HOME": str(home), "HOME": str(cwd)}
    prefix = AS_PLAIN_USER if os.geteuid() == 0 else []
    proc = subprocess.run([*prefix, sys.executable, "-m", "marm", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=120)
    return Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def read_only_store():
    """(home, scratch dir) of a store with one checkpointed memory and one still in its WAL."""
    base = Path(tempfile.mkdtemp(prefix="marm-ro-"))
    base.chmod(0o755)
    try:
        src = base / "src"
        env = {"MARM_HOME": str(src)}
        assert run_marm("log", "DECISION: the ledger closes at midnight", env=env, cwd=base).code == 0
        holder = sqlite3.connect(src / "marm.db")  # keeps the WAL from being checkpointed away
        holder.execute("SELECT count(*) FROM memories").fetchone()
        assert run_marm("log", "FIX: the ledger export skipped refunds", env=env, cwd=base).code == 0
        home = base / "home"
        home.mkdir()
        for name in ("marm.db", "marm.db-wal", "marm.db-shm"):  # as a killed writer leaves them
            shutil.copyfile(src / name, home / name)
        holder.close()
        assert (home / "marm.db-wal").stat().st_size > 0
        if os.geteuid() == 0 and shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: no way to make a file read-only to this user")
        for p in home.iterdir():
            p.chmod(0o400)
        home.chmod(0o500)
        yield home, base
    finally:
        for p in base.rglob("*"):
            if p.is_dir():
                p.chmod(0o700)
        shutil.rmtree(base, ignore_errors=True)


def test_a_read_only_store_is_readable_and_refuses_writes(read_only_store):
    home, base = read_only_store
    before = {p.name: p.read_bytes() for p in home.iterdir()}

    def run(*args: str) -> Run:
        return _run(*args, home=home, cwd=base)

    recall = run("recall", "ledger", "--mode", "lexical")
    assert recall.code == 0, recall.err
    assert "closes at midnight" in recall.out and "skipped refunds" in recall.out  # the WAL's memory too
    hybrid = run("recall", "when does the ledger close")  # the default lane: it may not embed here
    assert hybrid.code == 0 and "closes at midnight" in hybrid.out, hybrid.err
    for args in (("show", "2"), ("history", "2"), ("summary",), ("export",), ("status",)):
        result = run(*args)
        assert result.code == 0, (args, result.err)
        assert "Traceback" not in result.err
    assert "skipped refunds" in run("export").out
    write = run("log", "a new memory")
    assert write.code == 4, (write.out, write.err)
    assert "readonly" in write.err or "read-only" in write.err
    assert len(write.err.strip().splitlines()) == 1 and "Traceback" not in write.err
    assert {p.name: p.read_bytes() for p in home.iterdir()} == before
