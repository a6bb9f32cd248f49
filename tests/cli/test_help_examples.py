"""Every command's --help ends with examples, and every example is a command line marm
parses (through typer's own parser: nothing is run, so no example writes anything)."""

from __future__ import annotations

import functools
import json
import shlex
import subprocess
import sys

import pytest
import typer.main

from marm.cli import build_app
from marm.ops import load
from tests.helpers import run_marm

#: Shell operators an example may use around its marm command (a pipe, a redirection).
_OPERATORS = {"|", ">", "<", "&&", ";"}


def marm_words(example: str) -> list[str]:
    """The arguments of the marm command in one example line (``echo x | marm hook ...``,
    ``MARM_DEBUG=1 marm mcp`` and ``marm export > FILE`` each hold one)."""
    lexer = shlex.shlex(example, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    segments: list[list[str]] = [[]]
    for token in lexer:
        if token in _OPERATORS:
            segments.append([])
        else:
            segments[-1].append(token)
    for segment in segments:
        while segment and "=" in segment[0] and not segment[0].startswith("-"):
            segment = segment[1:]  # an environment assignment before the command
        if segment[:1] == ["marm"]:
            return segment[1:]
    raise AssertionError(f"no marm command in the example {example!r}")


@functools.cache
def _cli() -> typer.core.TyperGroup:
    """The CLI's click command tree, built once (building it per example took seconds)."""
    return typer.main.get_command(build_app())  # type: ignore[return-value]


def _parse(words: list[str]) -> tuple[str, ...]:
    """Parse ``marm WORDS`` with the CLI's own parser; the path of the command it names."""
    ops = load()
    path = max((p for p in ops if tuple(words[:len(p)]) == p), key=len, default=None)
    assert path is not None, f"no command named in {words}"
    command = _cli()
    for word in path:
        command = command.commands[word]  # type: ignore[attr-defined]
    with command.make_context(" ".join(("marm", *path)), words[len(path):]):
        pass  # parses and converts every argument and option; runs nothing
    return path


def test_examples_parse_as_the_command_they_document():
    ops = load()
    assert len(ops) > 40
    for o in ops.values():
        assert o.examples, f"marm {o.name} has no examples"
        for example in o.examples:
            assert _parse(marm_words(example)) == o.path, example


def test_a_wrong_example_would_fail_to_parse():
    """The parser check has teeth: a misspelt option or a bad value is caught."""
    with pytest.raises(Exception, match="--limt"):
        _parse(marm_words("marm recall x --limt 3"))
    with pytest.raises(Exception, match="'many'"):
        _parse(marm_words("marm recall x --limit many"))
    assert _parse(marm_words("echo '{}' | marm hook prompt --agent codex")) == ("hook",)


#: Prints every command's --help as ``python -m marm PATH --help`` does, in one process.
_ALL_HELPS = """
import contextlib, io, json, sys
from marm import cli
helps = {}
for path in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            cli.main([*path, "--help"])
        except SystemExit as exc:
            assert exc.code in (0, None), (path, exc.code)
    helps[" ".join(path)] = out.getvalue()
sys.stdout.write(json.dumps(helps))
"""


@pytest.mark.slow
def test_every_command_help_has_an_examples_section():
    """The helps come from one real process (a process per command took half a minute);
    one command's is checked against ``marm ... --help`` run as a process of its own."""
    ops = list(load().values())
    proc = subprocess.run([sys.executable, "-c", _ALL_HELPS, json.dumps([o.path for o in ops])],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    helps = {tuple(k.split(" ")): v for k, v in json.loads(proc.stdout).items()}
    assert len(helps) == len(ops)
    alone = run_marm(*ops[0].path, "--help")
    assert alone.code == 0 and alone.out == helps[ops[0].path], alone.err
    for o in ops:
        lines = [line.strip() for line in helps[o.path].splitlines()]
        assert "Examples:" in lines, o.name
        section = lines[lines.index("Examples:") + 1:]
        shown = section[:section.index("")] if "" in section else section
        assert shown == list(o.examples), o.name  # one per line, not rewrapped
        assert any(line.startswith("marm ") for line in shown), o.name
