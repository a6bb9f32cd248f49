"""Fixtures every test shares. Each test gets its own empty MARM_HOME and HOME, never the real ones."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from marm.context import Ctx
from tests.helpers import run_marm


@pytest.fixture(autouse=True)
def marm_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "marm-home"
    monkeypatch.setenv("MARM_HOME", str(home))
    # A scratch HOME too: no test may read or write the user's agent configs.
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    for var in ("MARM_PROJECT", "MARM_SESSION", "MARM_CAPTURE", "MARM_EMBED_MODEL",
                "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "CLAUDE_PROJECT_DIR",
                "GEMINI_PROJECT_DIR", "MEMORY_FILE_PATH", "CLAUDE_MEM_DATA_DIR", "BASIC_MEMORY_HOME",
                "BASIC_MEMORY_CONFIG_DIR", "XDG_CONFIG_HOME"):
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


@pytest.fixture
def marm():
    return run_marm
