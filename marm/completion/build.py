"""Write ``table.json``, what a TAB reads, from the CLI typer builds out of the ops registry.

The table is read off typer's own command objects (``marm.cli.build_app()``, every op
built), so it holds exactly what the CLI parses: each command's subcommands with their
one-line help, its options as Click names them (``-h/--help``, ``--json/--text``
included) with their help, and its positional arguments, each with its choices. A
``Literal`` type gives fixed choices; a ``Param(choices=...)`` of the registry gives
them as a function of the values typed before it, which is tabulated here: the function
is called once with nothing typed, which shows the one earlier parameter it reads, and
once per choice of that parameter (``config set KEY VALUE``: each key's values). A
function that reads a parameter without fixed choices, or more than one, cannot be
tabulated and stops the build, as does anything else the table does not model (hidden
or counted options, a path's file completion): completion would otherwise answer wrong
without a sign.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from marm.cli import build_app
from marm.completion import TABLE, scripts
from marm.ops import Op, load


class _Reads(Mapping[str, Any]):
    """The values typed before a parameter, as a choices function sees them: it records
    which names the function asks for."""

    def __init__(self, typed: Mapping[str, Any]) -> None:
        self.typed = typed
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        self.read.add(name)
        return self.typed[name]

    def __iter__(self) -> Iterator[str]:
        raise TypeError("a choices function that iterates the typed values cannot be tabulated")

    def __len__(self) -> int:
        return len(self.typed)


def _tabulate(where: str, choices: Callable[[Mapping[str, Any]], Iterable[str]],
              earlier: Mapping[str, Any]) -> Any:
    """``choices`` as data: a list, or one list per value of the parameter it reads."""
    reads = _Reads({})
    without = list(choices(reads))
    if not reads.read:
        return without
    if len(reads.read) > 1:
        raise ValueError(f"{where}: choices read {sorted(reads.read)}; the table holds one")
    (by,) = reads.read
    fixed = earlier.get(by)
    if not isinstance(fixed, list):
        raise ValueError(f"{where}: choices read {by}, which has no fixed choices")
    return {"by": by, "cases": {value: list(choices({by: value})) for value in fixed}, "else": without}


def _param(p: Any, ctx: Any, o: Op | None, earlier: dict[str, Any], where: str) -> dict[str, Any]:
    where = f"{where} {p.name}"
    if getattr(p, "hidden", False) or getattr(p, "count", False) or (p.nargs != 1 and p.param_type_name == "option"):
        raise ValueError(f"{where}: hidden, counted or multi-value options are not in the table")
    entry: dict[str, Any] = {"name": p.name}
    if p.param_type_name == "option":
        # Click builds the help option's names from a set: keep the order the CLI gives them.
        names = ctx.help_option_names
        entry["opts"] = sorted(p.opts, key=names.index) if set(p.opts) <= set(names) else list(p.opts)
        if p.secondary_opts:
            entry["secondary"] = list(p.secondary_opts)
        for key, value in (("flag", p.is_flag), ("multiple", p.multiple)):
            if value:
                entry[key] = True
        if p.help:
            entry["help"] = p.help
    else:
        if p.nargs not in (1, -1):
            raise ValueError(f"{where}: an argument of {p.nargs} values is not in the table")
        entry["argument"] = True
        if p.nargs == -1:
            entry["nargs"] = -1
    spec = next((s for s in o.params() if s.name == p.name), None) if o else None
    if spec is not None and spec.meta.choices is not None:
        entry["choices"] = _tabulate(where, spec.meta.choices, earlier)
    elif not entry.get("flag"):
        items = p.type.shell_complete(ctx, p, "")
        if any(item.type != "plain" for item in items):
            raise ValueError(f"{where}: {p.type.name} completes {items[0].type}s; the table has no files")
        if items:
            entry["choices"] = [str(item.value) for item in items]
    if "choices" in entry:
        earlier[p.name] = entry["choices"]
    return entry


def _node(command: Any, ctx: Any, path: tuple[str, ...], ops: Mapping[tuple[str, ...], Op]) -> dict[str, Any]:
    where = " ".join(("marm", *path))
    earlier: dict[str, Any] = {}
    params = [_param(p, ctx, ops.get(path), earlier, where) for p in command.get_params(ctx)]
    arguments = [p for p in params if p.get("argument")]
    if any(p.get("nargs") == -1 for p in arguments[:-1]):
        raise ValueError(f"{where}: only the last argument may take the rest")
    node: dict[str, Any] = {"help": command.get_short_help_str(), "params": params}
    if isinstance(command, TyperGroup):
        node["commands"] = {}
        for name, sub in command.commands.items():  # in the order they were added, as listed
            if sub.hidden:
                raise ValueError(f"{where} {name}: hidden commands are not in the table")
            sub_ctx = sub.make_context(name, [], parent=ctx, resilient_parsing=True)
            node["commands"][name] = _node(sub, sub_ctx, (*path, name), ops)
    return node


def table() -> str:
    """The text of ``table.json`` for the CLI as it is now."""
    ops = load()
    root = typer.main.get_command(build_app())
    ctx = root.make_context("marm", [], resilient_parsing=True)
    return json.dumps(_node(root, ctx, (), ops), indent=1, ensure_ascii=False) + "\n"


def write(directory: Path) -> list[Path]:
    """Rewrite the shell scripts in ``directory`` and the package's ``table.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, text in scripts().items():
        path = directory / filename
        path.write_text(text, encoding="utf-8")
        written.append(path)
    path = Path(TABLE)
    path.write_text(table(), encoding="utf-8")
    return [*written, path]

