"""The ``marm`` command, generated from the op registry (no logic of its own).

Each registered op becomes a Typer command with the op's parameters, its docstring as
help, and ``--json`` / ``--text``. JSON is the default when stdout is not a terminal,
so scripts and hooks get one object per call. Errors marm raises on purpose print one
line (``error: ...``) on stderr and exit with the error's code; anything unexpected
prints one line too (``MARM_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Annotated, Any

import typer

from marm import __version__
from marm.errors import BadInput, MarmError
from marm.ops import COMMANDS, Op, load

_HELP = (
    "marm: local-first memory for coding agents. One SQLite store on this machine; "
    "recall by exact text or by meaning."
)


def _read_stdin() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"standard input is not valid UTF-8 (byte {exc.start})") from None


def emit(result: Any, as_json: bool | None) -> None:
    """Print ``result`` as one JSON object, or as text for a person."""
    import orjson

    document = getattr(result, "document", None)
    if document is not None:
        # A result that is a document (an export) is printed as itself in either mode;
        # its summary goes to a person's terminal on stderr.
        for line in document():
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
        if sys.stderr.isatty():
            print(result.text(), file=sys.stderr)
        return
    if as_json is None:
        as_json = not sys.stdout.isatty()
    if as_json or not hasattr(result, "text"):
        sys.stdout.buffer.write(orjson.dumps(result, option=orjson.OPT_NON_STR_KEYS) + b"\n")
    else:
        sys.stdout.write(result.text() + "\n")
    sys.stdout.flush()


def invoke(o: Op, kwargs: dict[str, Any], as_json: bool | None) -> None:
    """Run one op for the CLI and print its result."""
    for spec in o.params():
        if spec.meta.stdin and kwargs.get(spec.name) == "-":
            kwargs[spec.name] = _read_stdin()
    from marm.context import Ctx  # start-up cost: `marm --help` opens no store

    ctx = Ctx(source="cli", interactive=sys.stderr.isatty())
    try:
        result = o.func(ctx, **kwargs)
    finally:
        ctx.close()
    emit(result, as_json)


def _command(o: Op) -> Any:
    """A function with ``o``'s parameters as Typer sees them, plus --json/--text."""
    params = []
    for spec in o.params():
        meta = spec.meta
        text = meta.cli_help
        if meta.argument:
            info: Any = typer.Argument(help=text, show_default=False)
        else:
            # A trailing underscore only dodges a Python keyword (`from_` is `--from`).
            decls = [f"--{spec.name.rstrip('_').replace('_', '-')}"] + ([meta.short] if meta.short else [])
            info = typer.Option(*decls, help=text)
        default = inspect.Parameter.empty if spec.required else spec.default
        params.append(inspect.Parameter(spec.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=Annotated[spec.annotation, info]))
    params.append(inspect.Parameter(
        "json_", inspect.Parameter.KEYWORD_ONLY, default=None,
        annotation=Annotated[bool | None, typer.Option(
            "--json/--text", help="one JSON object (default when stdout is not a terminal) or text",
            show_default=False)],
    ))

    def command(**kwargs: Any) -> None:
        as_json = kwargs.pop("json_")
        invoke(o, kwargs, as_json)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = o.cli_help
    command.__name__ = o.path[-1].replace("-", "_")
    return command


def _version(value: bool) -> None:
    if value:
        print(f"marm {__version__}")
        raise typer.Exit()


def _placeholder(word: str) -> Any:
    """A parameterless stand-in that only lends its name to a listing (`marm --help`)."""

    def command() -> None:
        raise RuntimeError(f"{word} was not built")  # never invoked: see build_app

    command.__name__ = word.replace("-", "_")
    return command


def command_words(argv: list[str]) -> list[str]:
    """The leading command words of ``argv`` (``marm code trace X --depth 2`` ->
    ``code, trace, X``), skipping options before the first word."""
    words: list[str] = []
    for arg in argv:
        if arg.startswith("-"):
            if words:
                break
            continue
        words.append(arg)
    return words


def selected_ops(words: list[str], ops: dict[tuple[str, ...], Op]) -> set[tuple[str, ...]]:
    """The ops an invocation can reach: the named command, or every command of the named
    group. Only these get their parameters built; the rest only lend their help."""
    for length in range(len(words), 0, -1):
        prefix = tuple(words[:length])
        reachable = {path for path in ops if path[:length] == prefix}
        if reachable:
            return reachable
    return set()


def build_app(argv: list[str] | None = None) -> typer.Typer:
    """The Typer app. With ``argv``, only the ops it can reach are built in full (a CLI
    process pays for one command, not forty, and `marm --help` imports no op module:
    it lists ``COMMANDS``); without, everything is (the completion table is read off it)."""
    app = typer.Typer(help=_HELP, no_args_is_help=True, pretty_exceptions_enable=False,
                      rich_markup_mode=None,
                      add_completion=False, context_settings={"help_option_names": ["-h", "--help"]})

    @app.callback()
    def root(
        version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                              help="print the version and exit")] = False,
    ) -> None:
        """marm: local-first memory for coding agents."""

    summaries = {word: line for table in COMMANDS.values() for word, line in table.items()}
    words = [] if argv is None else command_words(argv)
    if argv is not None and not words:
        for word, line in summaries.items():  # the root listing
            app.command(name=word, help=line, short_help=line)(_placeholder(word))
        return app
    ops = load(words[0] if words else None)
    full = set(ops) if argv is None else selected_ops(words, ops)
    groups: dict[tuple[str, ...], typer.Typer] = {(): app}
    # In `marm --help` order, whatever order the op modules happened to be imported in.
    rank = {word: index for index, word in enumerate(summaries)}
    for o in sorted(ops.values(), key=lambda o: rank[o.path[0]]):
        parent: tuple[str, ...] = ()
        for word in o.path[:-1]:
            key = (*parent, word)
            if key not in groups:
                sub = typer.Typer(no_args_is_help=True, help=summaries.get(word, ""))
                groups[parent].add_typer(sub, name=word)
                groups[key] = sub
            parent = key
        function = _command(o) if o.path in full else _placeholder(o.path[-1])
        groups[parent].command(name=o.path[-1], help=o.cli_help, short_help=o.summary)(function)
    return app


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        args = ["--help"]  # bare `marm` shows what it can do, and that is not an error
    app = build_app(args)
    try:
        app(args=args, prog_name="marm", standalone_mode=True)
    except MarmError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # noqa: BLE001 - the one place unexpected errors become one line
        if os.environ.get("MARM_DEBUG"):
            raise
        print(f"error: internal error: {type(exc).__name__}: {exc} (MARM_DEBUG=1 shows more)",
              file=sys.stderr)
        sys.exit(1)
