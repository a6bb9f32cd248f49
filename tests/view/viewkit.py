"""A populated store for the view tests, and a real headless Chromium to look at it.

The store is built once per module through the CLI in this process (``invoke_marm``: the
tests then look at it through real processes and the browser): two projects (git
repositories), a global note, hostile memories, a retracted and a doubted one, and a
concept graph drained from them. The browser is Debian's ``chromium`` driven by
Playwright for Python through ``executable_path`` (never a downloaded browser); when
either is missing the browser tests skip and say why.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers import git_init, invoke_marm, run_marm

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

HOSTILE = [
    "HOSTILE-1 <script>window.__pwned = 1; alert('x')</script> stays text",
    "HOSTILE-2 <img src=x onerror=\"window.__pwned = 2; alert('y')\"> stays text",
    "HOSTILE-3 </textarea></script><script>window.__pwned = 3</script> stays text",
]
ALPHA = [
    "DECISION: the payment webhook uses idempotency keys stored in Redis",
    "FIX: the flaky upload test shared a tmp dir; each test now gets its own",
    "The indexer depends on the task queue and uses SQLite WAL mode.",
    "Fixed the WAL lock contention by moving writes to one queue worker in write_queue.py",
]
RETRACTED = "WRONG: the nightly backup runs at 03:00 UTC"
DOUBTED = "the staging database is probably on port 5544"
BETA = "BETA-ONLY: the beta project deploys with helm on Fridays"
GLOBAL = "GLOBAL: prefer ruff over flake8 everywhere"


@dataclass
class Populated:
    root: Path
    env: dict[str, str]
    alpha: Path
    beta: Path
    ids: dict[str, int] = field(default_factory=dict)

    def marm(self, *args: str, cwd: Path | None = None, timeout: float = 120):
        return run_marm(*args, cwd=cwd or self.alpha, env=self.env, timeout=timeout)

    def ok(self, *args: str, cwd: Path | None = None):
        run = self.marm(*args, cwd=cwd)
        assert run.code == 0, (args, run.err)
        return run.json()

    def build(self, *args: str, cwd: Path | None = None):
        """``ok`` in this process: for laying out the store, where a process adds nothing."""
        run = invoke_marm(*args, cwd=cwd or self.alpha, env=self.env)
        assert run.code == 0, (args, run.err)
        return run.json()


@pytest.fixture(scope="module")
def populated(tmp_path_factory) -> Populated:
    root = tmp_path_factory.mktemp("view")
    user_home = root / "user-home"
    user_home.mkdir()
    env = {"MARM_HOME": str(root / "marm-home"), "HOME": str(user_home)}
    p = Populated(root, env, git_init(root / "alpha"), git_init(root / "beta"))
    for text in ALPHA + HOSTILE + [RETRACTED, DOUBTED]:
        p.ids[text] = p.build("log", text)["id"]
    p.ids[BETA] = p.build("log", BETA, cwd=p.beta)["id"]
    p.ids[GLOBAL] = p.build("log", GLOBAL, cwd=root)["id"]
    p.build("retract", str(p.ids[RETRACTED]), "-r", "it runs at 02:00")
    p.build("doubt", str(p.ids[DOUBTED]), "-r", "nobody checked")
    p.build("drain", "--kind", "concepts")
    return p


def page_for(p: Populated, *args: str, cwd: Path | None = None) -> Path:
    out = p.ok("view", *args, cwd=cwd)
    path = Path(out["path"])
    assert path.is_file()
    return path


# -- the browser ---------------------------------------------------------------------


def chromium_path() -> str | None:
    for name in (os.environ.get("MARM_TEST_CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        pytest.skip(f"playwright is not installed ({exc}); pip install -e '.[test]'")
    exe = chromium_path()
    if exe is None:
        pytest.skip("no chromium on PATH: apt-get install -y chromium (.ci/run does it)")
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as pw:
        try:
            b = pw.chromium.launch(executable_path=exe, args=args)
        except Exception as exc:  # noqa: BLE001 - reported as the skip reason
            pytest.skip(f"chromium at {exe} does not start under Playwright: {exc}")
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh page that records dialogs, requests and script errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    pg.dialogs, pg.requests, pg.errors = [], [], []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    pg.on("request", lambda r: pg.requests.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    context.close()


def shot(pg, name: str) -> Path:
    """Save a screenshot as a test artifact (tests/artifacts/, git-ignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(path))
    print(f"screenshot: {path}")
    return path


# -- serve mode ----------------------------------------------------------------------

_URL = re.compile(r"serving on (http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_\-]+))")


@dataclass
class Server:
    proc: subprocess.Popen
    url: str
    port: int
    token: str

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(2)  # SIGINT: what Ctrl-C sends
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.stdout.read().decode() if self.proc.stdout else ""


def _in_the_foreground() -> None:
    """Ctrl-C reaches the server as it does a terminal's foreground job: a test run
    started in the background by a shell without job control (``bash -c '... &'``)
    ignores SIGINT, its children inherit that, and Python then leaves SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_server(p: Populated, *args: str) -> Server:
    proc = subprocess.Popen(
        [sys.executable, "-m", "marm", "view", "--serve", *args], cwd=p.alpha,
        env={**os.environ, **p.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=_in_the_foreground,
    )
    deadline = time.monotonic() + 30
    line = b""
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        found = _URL.search(line.decode())
        if found:
            return Server(proc, found.group(1), int(found.group(2)), found.group(3))
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"marm view --serve printed no URL: {line!r} {proc.stderr.read()!r}")
