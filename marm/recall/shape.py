"""Is a query syntax-shaped? Such queries go to the exact lane and are never reranked.

Syntax-shaped: a quoted or back-ticked string; a single token that is an UPPER_SNAKE
key, a snake_case name, a path or file name, a ``--flag``, a dotted name or a call
``name(``; a command line with options (``git rebase -i --autosquash``: a program, its
arguments and at least one flag, and no sentence around them); or text with code
operators (``a < b && c``, ``x == 1``, ``->``, ``{``) that is not a sentence.

A natural-language question that merely contains a literal ("why does
``src/routes/[id]/+page.ts`` load twice?", "where do we set ``retries: 3;``?") is not
literal: the exact lane would look for the whole question and find nothing. It goes to
the word and meaning lanes, and ``literals_in`` names the pieces a result must hold.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Sequence

from marm.recall.lexical import STOPWORDS

_QUOTED = re.compile(r'^\s*(["\'`])(.+)\1\s*$', re.DOTALL)
_TOKEN_SHAPES = (
    re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$"),            # UPPER_SNAKE
    re.compile(r"^[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+$"),           # snake_case
    re.compile(r"^--?[A-Za-z][\w-]*(?:=\S*)?$"),               # --flag, -f, --key=value
    re.compile(r"^[\w.~-]*/[\w./~-]*$"),                        # path/with/slashes
    re.compile(r"^[\w-]+\.[A-Za-z0-9]{1,6}$"),                  # file.ext
    re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(?\)?$"),     # dotted.name
    re.compile(r"^[A-Za-z_][\w.]*\("),                          # call(
    re.compile(r"^[A-Za-z_]\w*=\S+$"),                          # KEY=value
)
_OPERATORS = re.compile(
    r"&&|\|\||==|!=|<=|>=|=>|->|::|[{};]|\w\s*[<>]\s*\w|\w\(|^\s*[$#]\s*\w|\[\w*\]"
)
#: A piece of a sentence that is code: a back-ticked or quoted span, or a token holding
#: a path separator with brackets or a plus (``src/routes/[id]/+page.ts``), braces,
#: brackets, a ``;`` or an operator.
_SPAN = re.compile(r"`([^`]+)`|(\{[^{}]*\})|\"([^\"]+)\"")
_CODE_CHARS = re.compile(r"[{}\[\];=<>|&$]|::|->")
_FLAG = re.compile(r"^--?[A-Za-z0-9][\w-]*(?:=\S*)?$")
_PROGRAM = re.compile(r"^[a-z][\w.+-]*$")
_ARGUMENT = re.compile(r"^[\w./:@=+,~%^-]+$|^(['\"]).*\1$", re.DOTALL)
_WORD = re.compile(r"[A-Za-z]{2,}")
#: A command line this long is a paste of something else.
COMMAND_TOKENS = 12


def _edge(token: str) -> str:
    """A token without the sentence punctuation around it ("`x`?" -> "x")."""
    return token.strip("?!,.()'\"`")


def literals_in(query: str) -> list[str]:
    """The literal pieces of a sentence: back-ticked spans, brace groups, and tokens
    shaped like code (a key, a path, a flag, a call, text with braces or operators).
    A double-quoted span counts only when it is code-shaped too: in prose, quotes mark a
    title or someone's words ('what did Ana think of "Becoming Nicole"?'), which a
    memory may well write without them or in other case."""
    found = [tick or brace or quoted for tick, brace, quoted in _SPAN.findall(query)
             if tick or brace or _is_code(quoted)]
    rest = _SPAN.sub(" ", query)
    for raw in rest.split():
        token = raw.rstrip("?!,")
        token = token[:-1] if token.endswith(".") else token  # the sentence's full stop
        if len(token) < 2:
            continue
        if any(shape.search(token) for shape in _TOKEN_SHAPES) or _CODE_CHARS.search(token):
            found.append(token)
    return list(dict.fromkeys(found))


def _is_code(text: str) -> bool:
    return any(shape.search(t) for t in text.split() for shape in _TOKEN_SHAPES) or bool(_CODE_CHARS.search(text))


#: A literal piece of a sentence held by this many memories says little and is not boosted.
COMMON_LITERAL = 200


def holding(held: Sequence[Collection[int]]) -> set[int] | None:
    """The memories holding every literal piece of a sentence (``held``: per piece, the
    memories in scope holding it, up to ``COMMON_LITERAL``), or None when no memory does
    (the question is then answered without them). A piece held by ``COMMON_LITERAL``
    memories or more says little and is left out."""
    found: set[int] | None = None
    for ids in held:
        if len(ids) >= COMMON_LITERAL:
            continue
        found = set(ids) if found is None else found & set(ids)
    return found or None


def is_sentence(query: str) -> bool:
    """Does ``query`` read as a sentence once its literal pieces are taken out (at least
    three words, two of them function words: "why does ... load twice")?"""
    rest = query
    for piece in literals_in(query):
        rest = rest.replace(piece, " ")
    words = [w.lower() for w in _WORD.findall(rest)]
    return len(words) >= 3 and sum(1 for w in words if w in STOPWORDS) >= 2


def is_command(query: str) -> bool:
    """Is ``query`` a command line with options (``git rebase -i --autosquash``): a
    program, then arguments, at least one of them a flag, and not a sentence (no "?",
    at most one function word)?"""
    try:
        tokens = shlex.split(query, posix=False)  # a quoted argument is one token
    except ValueError:
        return False
    if not 2 <= len(tokens) <= COMMAND_TOKENS or not _PROGRAM.match(tokens[0]) or query.endswith("?"):
        return False
    if not any(_FLAG.match(t) for t in tokens[1:]):
        return False
    plain = [t for t in tokens if not _FLAG.match(t) and t[0] not in "'\""]
    # One function word may be a subcommand ("docker compose up -d"); more make a sentence.
    return all(_ARGUMENT.match(t) for t in tokens) and sum(
        1 for t in plain if t.lower() in STOPWORDS and len(t) > 1) <= 1


def literal_of(query: str) -> str | None:
    """The literal text to look for when ``query`` is syntax-shaped, else None."""
    quoted = _QUOTED.match(query)
    if quoted:
        return quoted.group(2)
    stripped = query.strip()
    if not stripped:
        return None
    if not any(c.isspace() for c in stripped):
        if any(shape.search(stripped) for shape in _TOKEN_SHAPES):
            return stripped
    if is_command(stripped):
        return stripped
    if _OPERATORS.search(stripped) and not is_sentence(stripped):
        return stripped
    return None
