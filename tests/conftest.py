"""Fixtures every test shares. Each test gets its own empty MARM_HOME, never the real one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from marm.ops.context import Ctx

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def marm_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "marm-home"
    monkeypatch.setenv("MARM_HOME", str(home))
    for var in ("MARM_PROJECT", "MARM_SESSION", "MARM_CAPTURE", "MARM_EMBED_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def ctx(marm_home: Path, tmp_path: Path) -> Iterator[Ctx]:
    """An in-process context rooted in a scratch directory outside any git repository."""
    work = tmp_path / "work"
    work.mkdir()
    c = Ctx(source="cli", cwd=work, env=dict(os.environ))
    yield c
    c.close()


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


def run_marm(*args: str, cwd: Path | None = None, input: str | bytes | None = None,
             env: dict[str, str] | None = None, timeout: float = 60) -> Run:
    """Run the real ``marm`` in a subprocess (``python -m marm``), JSON output by default."""
    full_env = {**os.environ, **(env or {})}
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run(
        [sys.executable, "-m", "marm", *args], cwd=cwd, input=data, capture_output=True,
        env=full_env, timeout=timeout,
    )
    return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


@pytest.fixture
def marm():
    return run_marm


def git_init(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path
