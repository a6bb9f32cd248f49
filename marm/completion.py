"""Shell completion scripts for ``completions/``.

The scripts are thin shims that call back into ``marm`` (``_MARM_COMPLETE=complete_<shell>``)
on each TAB, so they embed no command list; ``python -m marm.completion DIR`` rewrites
them and a test fails when the committed copies are stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer
import typer.main
from typer._click.shell_completion import get_completion_class
from typer._completion_classes import completion_init

SHELLS = {"bash": "marm.bash", "zsh": "marm.zsh", "fish": "marm.fish"}


def scripts() -> dict[str, str]:
    """File name -> script text, for every supported shell."""
    completion_init()
    # A shim names the program only; each TAB asks marm itself, so no command tree is needed.
    shell_app = typer.Typer(name="marm")
    shell_app.command()(lambda: None)
    command = typer.main.get_command(shell_app)
    out = {}
    for shell, filename in SHELLS.items():
        cls = get_completion_class(shell)
        assert cls is not None, shell
        out[filename] = cls(command, {}, "marm", "_MARM_COMPLETE").source().strip() + "\n"
    return out


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
