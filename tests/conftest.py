"""Fixtures every test shares. Each test gets its own empty MARM_HOME and HOME, never the real ones.

Under pytest-xdist (``tests/run.sh`` runs one worker per core) a test marked ``alone``
runs with no other test beside it: the ones that time many processes against a budget
would otherwise measure the other worker's load. A test that needs the machine for only
a part of its run (a real agent CLI, which would go on before marm's MCP server had
started) takes the ``alone`` fixture around that part instead, so its set-up and checks
share the machine.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO

import pytest

from marm.context import Ctx
from tests.helpers import run_marm

#: Modules run first, in this order: those with the longest single tests (10-25 s each on
#: this project's 2-core machine, busy) and the agent sessions. Under ``--dist worksteal``
#: a worker that runs out takes tests from the other's tail, which is only of help when no
#: long test is left there: one starting late stretched the whole run. A module stays in
#: one piece (its module-scoped fixtures are built once); the rest keep collection order.
FIRST = (
    "tests/e2e/test_agents_e2e.py",
    "tests/hooks/test_hooks_parallel.py",
    "tests/reliability/test_review_stateful.py",
    "tests/mcp/test_mcp_handshake.py",
    "tests/reliability/test_core_concurrency.py",
    "tests/hooks/test_hooks_asking.py",
    "tests/reliability/test_embed_kill.py",
    "tests/sync/test_sync_processes.py",
    "tests/hooks/test_hooks_stats.py",
    "tests/hooks/test_hooks_sessions.py",
    "tests/reliability/test_read_only_store.py",
    "tests/view/test_view_review.py",
    "tests/reliability/test_concepts_drain.py",
    "tests/view/test_view_browser.py",
    "tests/reliability/test_import_kill.py",
    "tests/unit/test_space.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules in ``FIRST`` to the front (a stable sort: the same order in every worker)."""
    rank = {module: i for i, module in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(FIRST)))


#: The lock files of the test running in this worker (turnstile, lock), while it holds them.
_held: tuple[IO[str], IO[str]] | None = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """A readers-writer lock across the xdist workers of this run (two ``flock`` files in
    their shared temp root): every test holds it shared, an ``alone`` test exclusive. The
    turnstile keeps new tests from starting while an ``alone`` test waits for the lock."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return (yield)
    # each worker's base temp is <the run's root>/popen-gwN: the root is shared
    root = item.config._tmp_path_factory.getbasetemp().parent  # type: ignore[attr-defined]
    alone = item.get_closest_marker("alone") is not None
    with open(root / "alone.turnstile", "a") as turn, open(root / "alone.lock", "a") as lock:
        fcntl.flock(turn, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turn, fcntl.LOCK_UN)
        global _held
        _held = (turn, lock)
        try:
            return (yield)
        finally:
            _held = None
            fcntl.flock(lock, fcntl.LOCK_UN)
            fcntl.flock(turn, fcntl.LOCK_UN)


@contextmanager
def _machine_alone() -> Iterator[None]:
    """Inside: no other test runs in another worker (the lock this test holds shared, made
    exclusive for the block; the shared hold is let go first, so two workers asking at once
    take turns instead of waiting on each other)."""
    if _held is None:  # not under xdist
        yield
        return
    turn, lock = _held
    fcntl.flock(lock, fcntl.LOCK_UN)
    fcntl.flock(turn, fcntl.LOCK_EX)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(lock, fcntl.LOCK_SH)
        fcntl.flock(turn, fcntl.LOCK_UN)


@pytest.fixture
def alone() -> Callable[[], AbstractContextManager[None]]:
    """``with alone(): ...`` runs the block with no other test beside it (see the module
    docstring); the rest of the test shares the machine."""
    return _machine_alone


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
