"""The one registry of operations. The CLI and the MCP server are generated from it.

An op is a plain typed function whose first parameter is the invocation context
(``Ctx``) and whose other parameters are annotated with a ``Param`` that carries the
help text::

    @op("recall", mcp="marm_smart_recall", read_only=True)
    def recall(ctx: Ctx, query: Annotated[str, Param("what to look for", argument=True)],
               limit: Annotated[int, Param("most results", short="-n")] = 5) -> RecallResult:
        "Find memories by exact text or by meaning."

The docstring is the help of both surfaces. Its first paragraphs are shared; three
optional sections, each a line of its own followed by an indented block, hold what one
surface alone says, because a CLI user and an MCP client see the same op differently
(``--force`` and exit code 5 on one side, ``force: true`` and a tool error on the other)::

    CLI:
      Text retracted here is refused with exit code 5 unless --force is given.
    MCP:
      Text retracted here is refused with an error unless `force` is true.
    Examples:
      marm log "DECISION: use idempotency keys on the payment webhook"

``Op.cli_help`` is the shared text, the CLI section and the examples (each one line,
a whole ``marm ...`` command, checked by a test to parse); ``Op.tool_help`` is the shared
text and the MCP section. The return value is a frozen dataclass: the CLI prints it as
JSON or as text (its ``text()`` method), the MCP server returns it as structured
content. Nothing here imports typer or mcp: op modules stay cheap to import.
"""

from __future__ import annotations

import inspect
import textwrap
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Param:
    """Help and CLI shape of one op parameter (the MCP side uses ``help`` as description)."""

    help: str
    argument: bool = False       # positional on the CLI
    short: str | None = None     # e.g. "-n"
    stdin: bool = False          # the CLI reads standard input when the value is "-"
    mcp_help: str | None = None  # the MCP description, where the CLI's wording does not fit
    #: a shell TAB's candidates, given the values typed before this parameter (by name);
    #: tabulated into the completion table when it is built (``marm.completion.build``), so
    #: a pure function of what is typed (never of the store) that reads at most one earlier
    #: parameter, and only one with fixed choices
    choices: Callable[[Mapping[str, Any]], Iterable[str]] | None = None

    @property
    def cli_help(self) -> str:
        """The help as ``marm CMD --help`` shows it."""
        return f"{self.help}; '-' reads standard input" if self.stdin else self.help

    @property
    def tool_help(self) -> str:
        """The description an MCP client sees: no CLI conventions. A lone ``-`` is refused
        there (``marm.mcp_server``): a client that sends it copied the CLI's placeholder."""
        text = self.mcp_help or self.help
        return f"{text}; a lone '-' is refused (it is no placeholder here)" if self.stdin else text


@dataclass(frozen=True, slots=True)
class ParamSpec:
    name: str
    annotation: Any              # the bare type (Annotated stripped)
    default: Any                 # inspect.Parameter.empty when required
    meta: Param

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


@dataclass(frozen=True, slots=True)
class Op:
    path: tuple[str, ...]        # CLI words, e.g. ("notebook",) or ("code", "index")
    func: Callable[..., Any]
    mcp: str | None              # MCP tool name, or None for CLI-only ops
    read_only: bool
    destructive: bool
    idempotent: bool
    help: str                    # the shared part of the docstring (its first line: summary)
    cli_text: str = ""           # the docstring's CLI section
    mcp_text: str = ""           # the docstring's MCP section
    examples: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return " ".join(self.path)

    @property
    def summary(self) -> str:
        return self.help.split("\n", 1)[0]

    @property
    def cli_help(self) -> str:
        """The help ``marm CMD --help`` shows. ``\\b`` keeps the formatter from rewrapping
        the examples into one paragraph."""
        parts = [self.help, self.cli_text]
        if self.examples:
            parts.append("\b\nExamples:\n" + "\n".join(f"  {e}" for e in self.examples))
        return "\n\n".join(p for p in parts if p)

    @property
    def tool_help(self) -> str:
        """The description an MCP client sees (no flags, no exit codes, no examples)."""
        return "\n\n".join(p for p in (self.help, self.mcp_text) if p)

    def params(self) -> list[ParamSpec]:
        hints = typing.get_type_hints(self.func, include_extras=True)
        specs = []
        for index, p in enumerate(inspect.signature(self.func).parameters.values()):
            if index == 0:
                continue  # the Ctx
            hint = hints[p.name]
            if typing.get_origin(hint) is not typing.Annotated:
                raise TypeError(f"op {self.name}: parameter {p.name} needs Annotated[..., Param()]")
            base, *extras = typing.get_args(hint)
            meta = next((e for e in extras if isinstance(e, Param)), None)
            if meta is None:
                raise TypeError(f"op {self.name}: parameter {p.name} has no Param()")
            specs.append(ParamSpec(p.name, base, p.default, meta))
        return specs

    def return_type(self) -> Any:
        return typing.get_type_hints(self.func)["return"]


REGISTRY: dict[tuple[str, ...], Op] = {}

#: The docstring sections one surface alone shows (see the module docstring).
SECTIONS = ("CLI:", "MCP:", "Examples:")


def split_doc(doc: str) -> dict[str, str]:
    """``doc`` cut at its section lines: ``""`` (shared) and each section present, dedented."""
    parts: dict[str, list[str]] = {"": []}
    current = ""
    for line in inspect.cleandoc(doc).splitlines():
        if line in SECTIONS:
            current = line
            if current in parts:
                raise ValueError(f"section {line} appears twice")
            parts[current] = []
        else:
            parts[current].append(line)
    return {k: textwrap.dedent("\n".join(v)).strip() for k, v in parts.items()}


def op(
    *path: str,
    mcp: str | None = None,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``func`` as the operation ``path``."""

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        if path in REGISTRY:
            raise ValueError(f"op {' '.join(path)} registered twice")
        if not func.__doc__:
            raise ValueError(f"op {' '.join(path)} needs a docstring: it is the help text")
        doc = split_doc(func.__doc__)
        examples = tuple(line.strip() for line in doc.get("Examples:", "").splitlines() if line.strip())
        REGISTRY[path] = Op(path, func, mcp, read_only, destructive, idempotent, doc[""],
                            doc.get("CLI:", ""), doc.get("MCP:", ""), examples)
        return func

    return register
