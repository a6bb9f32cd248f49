"""The identifier pass: names a language model splits or mistags.

File names and paths, ``--flags``, dotted names (``marm.store.db``,
``WriteQueue.flush``), snake_case, UPPER_SNAKE and CamelCase words, and ``name()``
calls. Each becomes an entity whose display name is the exact, case-sensitive text, so
the code graph can match it to a symbol or a file by that text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EXT = (
    "py|pyi|js|mjs|cjs|jsx|ts|tsx|go|rs|java|kt|kts|scala|c|h|cc|cpp|cxx|hpp|hh|cs|rb|php|swift"
    "|m|mm|lua|pl|r|sql|sh|bash|zsh|fish|ps1|md|rst|txt|json|jsonl|toml|yaml|yml|ini|cfg|conf"
    "|xml|html|htm|css|scss|csv|tsv|lock|db|sqlite|env|proto|graphql|tf|vue|svelte|ipynb|dockerfile"
)

# Order matters: at one position the first alternative that matches wins.
_PATTERN = re.compile(
    rf"""
    (?P<url>\b[a-z][a-z0-9+.-]*://[^\s<>"'`)\]]+)
  | (?P<path>(?<![\w/.-])(?:~|\.{{1,2}})?/?(?:[\w.-]+/)+[\w.-]*\w)
  | (?P<file>(?<![\w.-])[\w-]*[A-Za-z0-9_][\w-]*\.(?:{_EXT})(?![\w-]))
  | (?P<flag>(?<![\w-])--[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*)
  | (?P<dotted>(?<![\w.])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(\))?(?![\w]))
  | (?P<upper>(?<![\w.])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w]))
  | (?P<snake>(?<![\w.])_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?:\(\))?(?![\w]))
  | (?P<camel>(?<![\w.])(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+)(?:\(\))?(?![\w]))
  | (?P<call>(?<![\w.])[A-Za-z_][A-Za-z0-9_]*\(\))
    """,
    re.VERBOSE,
)

#: Which entity type each kind of identifier gets.
TYPES = {
    "url": "url",
    "path": "file",
    "file": "file",
    "flag": "flag",
    "dotted": "symbol",
    "upper": "symbol",
    "snake": "symbol",
    "camel": "symbol",
    "call": "symbol",
}


@dataclass(frozen=True, slots=True)
class Identifier:
    start: int  # character offsets into the text
    end: int
    text: str  # exact text, trailing ``()`` and punctuation removed
    type: str  # file | symbol | flag | url


def find(text: str) -> list[Identifier]:
    """Every identifier in ``text``, left to right, never overlapping."""
    out: list[Identifier] = []
    for match in _PATTERN.finditer(text):
        kind = match.lastgroup or ""
        value = match.group()
        if kind == "dotted" and _prose_abbreviation(value):
            continue
        if kind == "path" and not _path_like(value):
            continue
        value = value.removesuffix("()").rstrip(".-")
        if len(value) < 2:
            continue
        out.append(Identifier(match.start(), match.start() + len(value), value, TYPES[kind]))
    return out


def _path_like(value: str) -> bool:
    """``src/marm/db.py``, ``./run``, ``~/x`` are paths; ``read/write`` and ``A/B`` are prose."""
    if value.startswith(("/", "./", "../", "~/")):
        return "/" in value.strip("/")
    return value.count("/") >= 2 or "." in value.rsplit("/", 1)[-1]


def _prose_abbreviation(value: str) -> bool:
    """``e.g``, ``i.e`` and ``U.S`` are not names (``os.Exit`` and ``fmt.Println`` are)."""
    return all(len(p) <= 1 for p in value.removesuffix("()").split("."))
