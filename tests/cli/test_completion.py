"""Shell completion as the shells ask for it: the completion variables in a real `marm`
process (what the scripts in completions/ set), then the real bash, zsh and fish
sourcing those scripts where they are installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from marm.config import SETTINGS
from marm.ops import COMMANDS

REPO = Path(__file__).resolve().parents[2]
TOP_LEVEL = [word for table in COMMANDS.values() for word in table]


def _complete(shell: str, line: str, action: str = "get-args") -> subprocess.CompletedProcess[str]:
    """One TAB at the end of ``line``, the way the shell's script asks for it."""
    env = {**os.environ, "_MARM_COMPLETE": f"complete_{shell}"}
    if shell == "bash":
        words = line.split()
        env |= {"COMP_WORDS": line, "COMP_CWORD": str(len(words) if line.endswith(" ") else len(words) - 1)}
    else:
        env |= {"_TYPER_COMPLETE_ARGS": line, "_TYPER_COMPLETE_FISH_ACTION": action}
    return subprocess.run([sys.executable, "-m", "marm"], env=env, capture_output=True, text=True, timeout=60)


def bash(line: str) -> list[str]:
    run = _complete("bash", line)
    assert run.returncode == 0 and not run.stderr, run.stderr
    return run.stdout.split()


def test_bash_candidates_are_commands_options_and_config_keys():
    assert bash("marm re") == ["recall", "retract", "restore", "review", "remote"]
    options = bash("marm recall --")
    assert {"--limit", "--as-of", "--all-projects", "--json", "--help"} <= set(options)
    assert all(o.startswith("--") for o in options) and "--force" not in options  # log's, not recall's
    assert bash("marm config set ") == list(SETTINGS)
    assert bash("marm config set inject.r") == ["inject.recall"]
    assert bash("marm config set capture ") == ["on", "off", "default"]
    assert bash("marm config set inject.recall ") == ["auto", "lexical", "default"]
    assert bash("marm code t") == ["trace"]


def test_fish_lists_one_line_per_candidate_with_its_help():
    run = _complete("fish", "marm ")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    values = [line.split("\t", 1)[0] for line in lines]
    assert sorted(values) == sorted(TOP_LEVEL)  # no wrapped tail of a help text among them
    helps = dict(line.split("\t", 1) for line in lines)
    assert helps["doubt"] == "Mark a memory as doubted: recall still returns it, marked [doubted]."
    assert helps["backup"].endswith("while other marm processes write (mode 0600).")
    assert _complete("fish", "marm config set ", action="is-args").returncode == 0
    assert _complete("fish", "marm import ", action="is-args").returncode == 1  # a file: fish offers files


def test_zsh_answer_keeps_apostrophes_and_colons():
    run = _complete("zsh", "marm code ")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("_arguments '*: :((") and "\n" not in run.stdout.strip()
    assert "repository'\\''s code (incremental\\\\: only" in run.stdout


def _shell(name: str, script: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        pytest.skip(f"{name} is not installed")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    assert shutil.which("marm", path=env["PATH"]), "marm is not installed in this environment"
    run = subprocess.run([exe, "-c", script], env=env, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_real_bash_with_the_shipped_script():
    out = _shell("bash", "source completions/marm.bash; COMP_WORDS=(marm config set ''); COMP_CWORD=3; "
                         "_marm_completion marm; printf '%s\\n' \"${COMPREPLY[@]}\"")
    assert out.split() == list(SETTINGS)


def test_real_fish_with_the_shipped_script():
    out = _shell("fish", "source completions/marm.fish; complete -C 'marm code '")
    values = sorted(line.split("\t", 1)[0] for line in out.splitlines())
    assert values == sorted(["index", "lookup", "trace", "architecture", "impact", "projects", "forget"])
    assert "index\tIndex a repository's code (incremental: only changed files are parsed)." in out


def test_real_zsh_evaluates_the_answer_with_apostrophes_intact():
    # The shipped function, with _arguments replaced by a probe that prints its spec.
    out = _shell("zsh", "source <(sed -n '/^_marm_completion/,/^}/p' completions/marm.zsh); "
                        "_arguments() { print -rl -- \"$@\" }; words=(marm code ''); CURRENT=3; _marm_completion")
    assert out.startswith("*: :((")
    assert '"index":"Index a repository\'s code (incremental\\\\: only changed files are parsed)."' in out
    assert '"trace":' in out and "repositorys" not in out
