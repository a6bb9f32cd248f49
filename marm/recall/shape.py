"""Is a query syntax-shaped? Such queries go to the exact lane and are never reranked.

Syntax-shaped: a quoted or back-ticked string; a single token that is an UPPER_SNAKE
key, a snake_case name, a path or file name, a ``--flag``, a dotted name or a call
``name(``; or any text with code operators (``a < b && c``, ``x == 1``, ``->``, ``{``).
A natural-language question that merely mentions an identifier is not: it goes to the
word (and meaning) lanes, where the identifier still counts as a word.
"""

from __future__ import annotations

import re

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
    if _OPERATORS.search(stripped):
        return stripped
    return None
