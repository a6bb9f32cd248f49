"""Helpers tests import: run the real CLI in a subprocess, make git repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


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
