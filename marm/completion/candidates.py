"""What a TAB offers, found the way Click finds it, over ``table.json`` instead of
typer's command objects.

Click (``shell_completion.get_completions``) parses the words before the cursor
leniently, command by command, then asks one object for candidates: the option whose
value is being typed, else the first positional argument still open, else the command
itself (its subcommands, and its options when the word starts like one). The steps
below are Click's, in its order and with its quirks (an unknown word leaves the group
offering every subcommand; an option given once is not offered again), so a TAB answers
what typer answered; a test compares the two over every command.

A node of the table is a command: ``params`` (Click's order, help option included) and,
for a group, ``commands``. A parameter is an option (``opts``, ``secondary``, ``flag``,
``multiple``, ``help``) or an ``argument`` (``nargs`` -1 takes the rest), with
``choices``: a list, or ``{"by": NAME, "cases": {VALUE: [...]}, "else": [...]}`` when
they depend on the value typed for an earlier parameter (a setting's values on its key).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's import is 3 ms of a TAB; only the type checker needs it
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    Node: TypeAlias = dict[str, Any]

#: A candidate: the word, and the help a shell may show beside it ("" for none).
Item = tuple[str, str]


class _Stop(Exception):
    """Parsing stops here, keeping what it read (Click's lenient parsing on a usage error)."""


def _is_option(word: str) -> bool:
    return word[:1] == "-"


def _parse(node: Node, args: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The values ``args`` give ``node``'s parameters (a name is present when the command
    line set it), and the words left over: for a group, the subcommand and its words.
    Click's parser: a group stops at its first positional word, a command takes options
    anywhere; ``--`` ends options; ``--opt=value``, ``-n5`` and ``-ab`` as usual."""
    params = node["params"]
    long: dict[str, Any] = {}
    short: dict[str, Any] = {}
    for p in params:
        for opt in (*p.get("opts", ()), *p.get("secondary", ())):
            (short if len(opt) == 2 and opt[1] != "-" else long)[opt] = p
    given: dict[str, Any] = {}
    rargs, largs = list(args), []

    def store(p: Node, opt: str, value: str | None) -> None:
        if p.get("flag"):
            given[p["name"]] = opt in p["opts"]  # a secondary name (--text) sets False
        elif p.get("multiple"):
            given.setdefault(p["name"], []).append(value)
        else:
            given[p["name"]] = value

    def take(p: Node) -> str | None:
        if p.get("flag"):
            return None
        if not rargs:
            raise _Stop
        return rargs.pop(0)

    def short_opts(arg: str) -> None:
        for i, ch in enumerate(arg[1:], start=2):
            p = short.get(arg[0] + ch)
            if p is None:
                raise _Stop
            if not p.get("flag") and i < len(arg):  # -n5: the rest of the word is the value
                rargs.insert(0, arg[i:])
                store(p, arg[0] + ch, take(p))
                return
            store(p, arg[0] + ch, take(p))

    try:
        while rargs:
            arg = rargs.pop(0)
            if arg == "--":
                break
            if _is_option(arg) and len(arg) > 1:
                name, eq, value = arg.partition("=")
                p = long.get(name)
                if p is None:
                    if arg[:2] == "--":
                        raise _Stop
                    short_opts(arg)
                    continue
                if eq and p.get("flag"):
                    raise _Stop
                if eq:
                    rargs.insert(0, value)
                store(p, name, take(p))
            elif "commands" not in node:
                largs.append(arg)
            else:
                rargs.insert(0, arg)
                break
        words = largs + rargs
        for p in (p for p in params if p.get("argument")):
            if p.get("nargs") == -1:
                if words:
                    given[p["name"]], words = words, []
            elif words:
                given[p["name"]] = words.pop(0)
        largs = words
    except _Stop:
        pass
    return given, largs


def _context(root: Node, args: list[str]) -> tuple[Node, dict[str, Any]]:
    """The command the words reach, and what they give its parameters."""
    node = root
    given, rest = _parse(node, args)
    while rest and "commands" in node:
        sub = node["commands"].get(rest[0])
        if sub is None:
            break  # an unknown subcommand: the group answers
        node = sub
        given, rest = _parse(node, rest[1:])
    return node, given


def _choices(p: Node, given: dict[str, Any], incomplete: str) -> list[Item]:
    choices = p.get("choices") or []
    if isinstance(choices, dict):
        typed = given.get(choices["by"])
        choices = choices["cases"].get(typed, choices["else"]) if isinstance(typed, str) else choices["else"]
    return [(c, "") for c in choices if c.startswith(incomplete)]


def candidates(table: Node, args: list[str], incomplete: str) -> list[Item]:
    """The candidates for ``incomplete``, the word at the cursor, after the words ``args``
    (what follows ``marm``)."""
    node, given = _context(table, args)
    args = list(args)
    if incomplete == "=":
        incomplete = ""
    elif "=" in incomplete and _is_option(incomplete):
        name, _, incomplete = incomplete.partition("=")
        args.append(name)
    params = node["params"]
    if "--" in args or not _is_option(incomplete):
        last = args[-1] if args else ""
        for p in params:  # the value of an option named last
            if "opts" in p and not p.get("flag") and _is_option(last) and last in p["opts"]:
                return _choices(p, given, incomplete)
        for p in params:  # the first argument still open
            if p.get("argument") and (p.get("nargs") == -1 or p["name"] not in given):
                return _choices(p, given, incomplete)
    items = [(name, sub["help"]) for name, sub in node.get("commands", {}).items() if name.startswith(incomplete)]
    if incomplete and not incomplete[0].isalnum():
        for p in params:
            if "opts" in p and (p.get("multiple") or p["name"] not in given):
                names = (*p["opts"], *p.get("secondary", ()))
                items += [(o, p.get("help", "")) for o in names if o.startswith(incomplete)]
    return items
