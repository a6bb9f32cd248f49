"""Helpers tests import: run the CLI (a real subprocess, or in-process), make git repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from marm import cli


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


def run_marm(*args: str, cwd: Path | None = None, input: str | bytes | None = None,
             env: dict[str, str] | None = None, timeout: float = 60) -> Run:
    """Run the real CLI in a subprocess (``python -m marm``); JSON output, since stdout
    is a pipe. ``MARM_HOME`` comes from the test's environment (the autouse fixture)."""
    full_env = {**os.environ, **(env or {})}
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run(
        [sys.executable, "-m", "marm", *args], cwd=cwd, input=data, capture_output=True,
        env=full_env, timeout=timeout,
    )
    return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"),
               proc.stderr.decode("utf-8", "replace"))


def git_init(path: Path) -> Path:
    """A fresh git repository at ``path`` (a project, for scope)."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


_RUNNER = CliRunner()


def invoke_marm(*args: str, cwd: Path | None = None, input: str | bytes | None = None,
                env: dict[str, str] | None = None) -> Run:
    """The CLI in this process: ``marm.cli.main`` inside typer's ``CliRunner`` isolation.

    Same parsing, output, JSON default (stdout is not a terminal) and exit codes as
    ``run_marm``, without a Python start-up (and a model or pipeline load) per call. For
    tests of what a command does; what only a real process shows (start-up imports,
    stdout purity, hooks, signals) keeps ``run_marm``.
    """
    before = Path.cwd()
    with _RUNNER.isolation(input=input, env=env) as (out, err, _):
        code = 0
        try:
            os.chdir(cwd or before)
            cli.main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            os.chdir(before)
            sys.stdout.flush()
            sys.stderr.flush()
        return Run(code, out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace"))
