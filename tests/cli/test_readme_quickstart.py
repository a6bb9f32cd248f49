"""README's quick start, run as written: its command lines, parsed out of README.md
between the quickstart markers, each a real `marm` process, in order, on a fresh store
and a fresh HOME; each is checked for what its comment promises. A line added to the
quick start without a check here fails the test, so the README stays true."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import Run, git_init, run_marm

README = Path(__file__).resolve().parents[2] / "README.md"
#: What the first block runs before marm exists; the test's environment has it installed.
INSTALL = [["python3", "-m", "venv", ".venv"], [".", ".venv/bin/activate"], ["pip", "install", "-e", "."]]


def quickstart_blocks() -> list[list[list[str]]]:
    """Each ``sh`` block between the markers: its commands, one word list each (a line
    chained with ``&&`` is several commands; comments are dropped)."""
    text = README.read_text(encoding="utf-8")
    section = text.split("<!-- quickstart", 1)[1].split("<!-- /quickstart -->", 1)[0]
    blocks = []
    for body in re.findall(r"```sh\n(.*?)```", section, re.DOTALL):
        commands: list[list[str]] = []
        for line in body.splitlines():
            words = shlex.split(line, comments=True)
            while words:
                cut = words.index("&&") if "&&" in words else len(words)
                commands.append(words[:cut])
                words = words[cut + 1:]
        blocks.append(commands)
    return blocks


class Session:
    """The quick start's state: what ran so far, so a check can refer to earlier results."""

    def __init__(self, tmp_path: Path) -> None:
        self.env = {"HOME": str(tmp_path / "home"), "MARM_HOME": str(tmp_path / "marm-home")}
        (tmp_path / "home").mkdir()
        self.clone = git_init(tmp_path / "marm-clone")   # the first block runs in the clone
        self.repo = git_init(tmp_path / "any-repo")       # "Then, in any repository"
        self.ids: dict[str, int] = {}

    def marm(self, args: list[str], cwd: Path) -> Run:
        run = run_marm(*args, cwd=cwd, env=self.env)
        assert run.code == 0, (args, run.err)
        return run


def _logged(name: str, kind: str) -> Callable[[Session, Run, Path], None]:
    def check(s: Session, run: Run, cwd: Path) -> None:
        result = run.json()
        assert result["created"] is True and result["kind"] == kind, result
        s.ids[name] = result["id"]
    return check


def _dated(s: Session, run: Run, cwd: Path) -> None:
    _logged("dated", "log")(s, run, cwd)
    assert run.json()["log_id"] is not None
    shown = s.marm(["show", str(s.ids["dated"])], cwd).json()["memory"]
    assert shown["valid_from"].startswith("2026-11-30T00:00:00"), shown
    assert "valid_from=2026-11-30T00:00:00" in s.marm(["show", str(s.ids["dated"]), "--text"], cwd).out


def _recall_first(name: str) -> Callable[[Session, Run, Path], None]:
    def check(s: Session, run: Run, cwd: Path) -> None:
        ids = [r["id"] for r in run.json()["results"]]
        assert ids and ids[0] == s.ids[name], (name, run.json())
    return check


def _exact_only_fix(s: Session, run: Run, cwd: Path) -> None:
    results = run.json()["results"]
    assert [r["id"] for r in results] == [s.ids["fix"]], results  # the dated entry is in the store too
    assert results[0]["retrieval_mode"].startswith("exact")


def _summary(s: Session, run: Run, cwd: Path) -> None:
    digest = run.json()
    kinds = {g["kind"]: [i["id"] for i in g["items"]] for g in digest["groups"]}
    assert kinds == {"fix": [s.ids["fix"]], "log": [s.ids["dated"]]}, kinds  # this repository's only
    text = s.marm(["summary", "--text"], cwd).out
    assert f"#{s.ids['dated']} " in text and "(valid from 2026-11-30)" in text, text


def _status(s: Session, run: Run, cwd: Path) -> None:
    status = run.json()
    assert status["memories"]["total"] == 3, status["memories"]
    assert "outbox" in status


CHECKS: dict[str, Callable[[Session, Run, Path], None]] = {
    'log "DECISION: use idempotency keys on the payment webhook"': _logged("decision", "decision"),
    'recall "payment webhook"': _recall_first("decision"),
    'log "FIX: flaky upload test; the root cause was a shared tmp dir, MAX_RETRIES=5 hid it"': _logged("fix", "fix"),
    'log "2026-11-30-auth-switched sessions to signed JWT cookies"': _dated,
    'recall "why did uploads fail"': _recall_first("fix"),
    "recall MAX_RETRIES": _exact_only_fix,
    "summary": _summary,
    "status": _status,
}


def test_the_quickstart_is_parsed_from_the_readme():
    blocks = quickstart_blocks()
    assert len(blocks) == 2
    assert blocks[0][:3] == INSTALL
    assert all(c[0] == "marm" for c in blocks[0][3:] + blocks[1])
    assert [shlex.join(c[1:]) for c in blocks[0][3:] + blocks[1]] == [
        shlex.join(shlex.split(k)) for k in CHECKS]  # every line checked, in order


@pytest.mark.slow
def test_the_quickstart_does_what_it_says(tmp_path):
    s = Session(tmp_path)
    first, then = quickstart_blocks()
    for cwd, commands in ((s.clone, first[len(INSTALL):]), (s.repo, then)):
        for command in commands:
            key = next(k for k in CHECKS if shlex.split(k) == command[1:])
            CHECKS[key](s, s.marm(command[1:], cwd), cwd)
    assert set(s.ids) == {"decision", "fix", "dated"}
