"""Shell completion: the scripts ``marm completion SHELL`` prints, and what one TAB answers.

The scripts are typer's own (its public ``typer.completion.get_completion_script``):
thin shims that call back into ``marm`` with ``_MARM_COMPLETE=complete_<shell>`` on each
TAB, so they embed no command list; ``python -m marm.completion DIR`` rewrites
``completions/`` and a test fails when the committed copies are stale.

What a TAB answers comes from three small classes of marm's, not typer's (which
``typer.completion.completion_init`` registers), because typer's classes, which no public
option configures, get the candidates wrong:

- they render every help text through rich, which wraps it at the terminal's width (fish
  then offers each wrapped tail, "(PageRank).", as a candidate of its own), reads
  ``[doubted]`` as markup and drops it, and costs rich's import on every TAB;
- for zsh they write an apostrophe as ``''`` inside a single-quoted string, which zsh
  reads as nothing unless RC_QUOTES is set.

Click's documented way to format candidates (subclass ``ShellComplete``, register it
with ``add_completion_class``) is reachable only as ``typer._click.shell_completion``
since typer vendored Click (0.26): that import is the one private path used here. The
classes keep typer's protocol (the same variables), so typer's scripts call them.

A TAB pays for little: ``marm.cli`` builds only the ops the words before the cursor
reach (``words_before_cursor``), so ``marm re<TAB>`` imports no op module at all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from typer._click.shell_completion import CompletionItem, ShellComplete, add_completion_class, split_arg_string
from typer.completion import get_completion_script

SHELLS = {"bash": "marm.bash", "zsh": "marm.zsh", "fish": "marm.fish"}
COMPLETE_VAR = "_MARM_COMPLETE"


def scripts() -> dict[str, str]:
    """File name -> script text, for every supported shell."""
    return {
        filename: get_completion_script(prog_name="marm", complete_var=COMPLETE_VAR, shell=shell) + "\n"
        for shell, filename in SHELLS.items()
    }


def completion_args(shell: str, env: Mapping[str, str]) -> tuple[list[str], str]:
    """The words typed after ``marm`` before the cursor, and the word being completed, as
    the shell's script passes them (bash: COMP_WORDS and COMP_CWORD; zsh and fish: the
    command line up to the cursor in _TYPER_COMPLETE_ARGS)."""
    if shell == "bash":
        words = split_arg_string(env.get("COMP_WORDS", ""))
        cword = int(env.get("COMP_CWORD", "0") or 0)
        return words[1:cword], words[cword] if cword < len(words) else ""
    line = env.get("_TYPER_COMPLETE_ARGS", "")
    words = split_arg_string(line)[1:]
    if words and not line.endswith(" "):
        return words[:-1], words[-1]
    return words, ""


def words_before_cursor(env: Mapping[str, str]) -> list[str]:
    """For ``marm.cli``: the arguments a completion request has already typed ([] when the
    request is for a script, ``source_<shell>``)."""
    instruction, _, shell = env.get(COMPLETE_VAR, "").partition("_")
    return completion_args(shell, env)[0] if instruction == "complete" and shell in SHELLS else []


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


class _Marm(ShellComplete):
    """typer's protocol: the script's variables named as typer's scripts name them."""

    def source_vars(self) -> dict[str, str]:
        return {"complete_func": self.func_name, "autocomplete_var": self.complete_var,
                "prog_name": self.prog_name}

    def get_completion_args(self) -> tuple[list[str], str]:
        return completion_args(self.name, os.environ)


class BashComplete(_Marm):
    """One value a line; bash shows no help."""

    name = "bash"

    def format_completion(self, item: CompletionItem) -> str:
        return str(item.value)


class ZshComplete(_Marm):
    """``_arguments '*: :(("value":"help" ...))'``, which typer's script evaluates."""

    name = "zsh"

    @staticmethod
    def _quote(text: str) -> str:
        # A double-quoted word inside a single-quoted string: escape for the double
        # quotes, a colon for _arguments, and close-escape-reopen for an apostrophe.
        for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("$", "\\$"), ("`", "\\`"), (":", "\\\\:"),
                             ("'", "'\\''")):
            text = text.replace(raw, escaped)
        return f'"{text}"'

    def format_completion(self, item: CompletionItem) -> str:
        help_text = _one_line(item.help)
        value = self._quote(str(item.value))
        return f"{value}:{self._quote(help_text)}" if help_text else value

    def complete(self) -> str:
        items = [self.format_completion(i) for i in self.get_completions(*self.get_completion_args())]
        return f"_arguments '*: :(({' '.join(items)}))'" if items else "_files"


class FishComplete(_Marm):
    """``value<TAB>help`` a line, one line each; ``is-args`` answers by exit status."""

    name = "fish"

    def format_completion(self, item: CompletionItem) -> str:
        help_text = _one_line(item.help)
        return f"{item.value}\t{help_text}" if help_text else str(item.value)

    def complete(self) -> str:
        lines = [self.format_completion(i) for i in self.get_completions(*self.get_completion_args())]
        if os.environ.get("_TYPER_COMPLETE_FISH_ACTION") == "is-args":
            sys.exit(0 if lines else 1)  # candidates of marm's own, else fish offers files
        return "\n".join(lines)


def register() -> None:
    """Make the classes above the ones a completion request uses."""
    for cls in (BashComplete, ZshComplete, FishComplete):
        add_completion_class(cls, cls.name)


def write(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, text in scripts().items():
        path = directory / filename
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for p in write(Path(sys.argv[1] if len(sys.argv) > 1 else "completions")):
        print(p)
