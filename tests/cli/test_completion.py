"""Shell completion as the shells ask for it: the completion variables in a real `marm`
process (what the scripts in completions/ set), then the real bash, zsh and fish
sourcing those scripts where they are installed; then the table a TAB reads: current,
answering what typer would, and read without importing typer or any op."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from marm.cli import build_app
from marm.completion import load_table
from marm.completion.build import _tabulate, table
from marm.completion.candidates import candidates
from marm.config import SETTINGS
from marm.ops import COMMANDS, load

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


# -- the table a TAB reads ----------------------------------------------------------------

_PROBE = """
import json, os, sys
os.environ.update(json.loads(sys.argv[1]))
from marm.__main__ import main
try:
    main()
except SystemExit as exit:
    code = exit.code
sys.stdout.flush()
sys.stderr.write("MODULES=" + json.dumps(sorted(sys.modules)) + "\\n")
sys.exit(code)
"""


@pytest.mark.parametrize("line", ["marm code t", "marm config set capture ", "marm recall --"])
def test_a_tab_imports_no_typer_click_rich_or_op_module(tmp_path, line):
    words = line.split()
    env = {"_MARM_COMPLETE": "complete_bash", "COMP_WORDS": line,
           "COMP_CWORD": str(len(words) if line.endswith(" ") else len(words) - 1)}
    run = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(env)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == bash(line)  # the same answer as `marm` itself gives
    assert run.stdout.split()[:1] in (["trace"], ["on"], ["--limit"])
    modules = json.loads(run.stderr.split("MODULES=", 1)[1])
    assert {m for m in modules if m.split(".")[0] == "marm"} == {
        "marm", "marm.__main__", "marm.completion", "marm.completion.candidates"}
    assert not {m.split(".")[0] for m in modules} & {"typer", "click", "rich"}, modules


def test_the_table_is_current_and_in_the_wheel():
    assert (REPO / "marm" / "completion" / "table.json").read_text(encoding="utf-8") == table(), (
        "regenerate with: python -m marm.completion completions")
    assert '"completion/table.json"' in (REPO / "pyproject.toml").read_text()  # package data


def _typer_reference():
    """typer's own answer for the whole CLI, the registry's choices attached to the
    parameters they belong to (marm's CLI no longer asks typer for candidates)."""
    from typer._click.shell_completion import CompletionItem, ShellComplete

    class Reference(ShellComplete):
        """Only ``get_completions`` (Click's resolution) is used; the shell side is marm's."""

        source_vars = get_completion_args = format_completion = None

    root = typer.main.get_command(build_app())
    for o in load().values():
        command = root
        for word in o.path:
            command = command.commands[word]
        for spec in o.params():
            if spec.meta.choices:
                param = next(p for p in command.params if p.name == spec.name)
                param.shell_complete = (lambda choices: lambda ctx, incomplete: [
                    CompletionItem(c) for c in choices(ctx.params) if c.startswith(incomplete)])(spec.meta.choices)
    return root, Reference(root, {}, "marm", "_MARM_COMPLETE")


def _lines(command, path):
    """Words before the cursor and the word at it, for ``command`` at ``path``: bare,
    after each option, its value, its ``=`` form, positional words, and ``--``."""
    yield from ((path, w) for w in ("", "-", "--", "--h", "-h", "=", "x"))
    yield from ((path + extra, w) for extra in (["--"], ["bogus"], ["--bogus"], ["-Z"]) for w in ("", "--"))
    for p in command.params:
        for name in (*p.opts, *p.secondary_opts):
            yield from ((path + [name], w) for w in ("", "-", "--"))
            yield from ((path + [name, "x"], w) for w in ("", "--"))
            yield path, name + "="
            if len(name) == 2:
                yield path + [name + "5"], "--"
        for choice in getattr(p.type, "choices", None) or []:
            yield path + [str(choice)], ""
    arguments = sum(p.param_type_name == "argument" for p in command.params)
    for n in range(arguments + 2):
        typed = [f"v{i}" for i in range(n)]
        yield from ((path + typed, w) for w in ("", "--", "v"))
        yield path + ["--json"] + typed, ""
        yield path + ["--"] + typed, "--x"
    for name, sub in getattr(command, "commands", {}).items():
        yield path, name[:1]
        yield from _lines(sub, path + [name])


def test_the_table_answers_what_typer_answers():
    root, reference = _typer_reference()
    lines = list(_lines(root, []))
    lines += [(["config", "set", *pre, key], w) for key in SETTINGS for pre in ([], ["-p", "."]) for w in ("", "o")]
    lines += [(["config", "set", "nope"], ""), (["config", "set", "capture", "--global"], "")]
    lines = [(args, w) for args, w in lines if not {"-V", "--version"} & set(args[:1])]  # typer prints it
    help_option = {"-h", "--help"}  # typer lists these two in a random order (from a set)
    known = load_table()
    wrong = []
    for args, incomplete in lines:
        expected = [(str(i.value), i.help or "") for i in reference.get_completions(list(args), incomplete)]
        got = candidates(known, list(args), incomplete)
        if (sorted(got) != sorted(expected)
                or [g for g in got if g[0] not in help_option] != [e for e in expected if e[0] not in help_option]):
            wrong.append((args, incomplete, got, expected))
    assert len(lines) > 2000 and not wrong[:5], f"{len(wrong)} of {len(lines)} differ"
    assert ("on", "") in candidates(known, ["config", "set", "capture"], "")  # the corpus reaches choices


def test_a_choices_function_the_table_cannot_hold_stops_the_build():
    def by_text(given):
        return [given.get("text") or ""]

    def by_key(given):
        return ["a"] if given.get("key") == "k1" else []

    assert _tabulate("marm x", lambda given: ["a", "b"], {}) == ["a", "b"]
    assert _tabulate("marm x", by_key, {"key": ["k1", "k2"]}) == {"by": "key", "cases": {"k1": ["a"], "k2": []},
                                                                  "else": []}
    with pytest.raises(ValueError, match="text, which has no fixed choices"):
        _tabulate("marm x", by_text, {"key": ["k1"]})


def test_source_and_bad_instructions_answer_as_typer_does():
    env = {**os.environ, "_MARM_COMPLETE": "source_zsh"}
    run = subprocess.run([sys.executable, "-m", "marm"], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout == (REPO / "completions" / "marm.zsh").read_text()
    for value, message in (("complete_tcsh", "Shell tcsh not supported."),
                           ("garbage", "Invalid completion instruction."),
                           ("explain_bash", 'Completion instruction "explain" not supported.')):
        run = subprocess.run([sys.executable, "-m", "marm"], env={**os.environ, "_MARM_COMPLETE": value},
                             capture_output=True, text=True, timeout=60)
        assert (run.returncode, run.stdout, run.stderr.strip()) == (1, "", message)
