"""CLI conventions (bare `marm`, `-V`, `marm completion`) and MCP wording per surface."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from marm import __version__
from tests.helpers import run_marm

REPO = Path(__file__).resolve().parents[2]


def test_bare_marm_prints_help_and_exits_0():
    run = run_marm()
    assert run.code == 0, run.err
    assert "Usage: marm" in run.out and "recall" in run.out and "completion" in run.out


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag):
    run = run_marm(flag)
    assert run.code == 0 and run.out.strip() == f"marm {__version__}"


@pytest.mark.parametrize("shell,name", [("bash", "marm.bash"), ("zsh", "marm.zsh"), ("fish", "marm.fish")])
def test_completion_prints_the_script_the_wheel_ships(shell, name):
    run = run_marm("completion", shell)
    assert run.code == 0, run.err
    assert run.out == (REPO / "completions" / name).read_text()
    assert "_MARM_COMPLETE" in run.out
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f"completions/{name}" in pyproject  # installed with the wheel (share/marm/completions)


def test_completion_refuses_an_unknown_shell():
    run = run_marm("completion", "tcsh")
    assert run.code == 2 and "tcsh" in run.err


def test_stdin_dash_is_cli_wording_only(tmp_path, marm_home):
    from marm.mcp_server import build

    help_text = run_marm("log", "--help").out
    assert "'-' reads standard input" in help_text
    server, served = build(tmp_path, {"MARM_HOME": str(marm_home)})
    tools = asyncio.run(server.list_tools())
    described = {t.name: str(t.input_schema) + (t.description or "") for t in tools}
    assert "marm_log_entry" in described and "YYYY-MM-DD-topic-summary" in described["marm_log_entry"]
    assert not [n for n, d in described.items() if "standard input" in d]
    served.close()
