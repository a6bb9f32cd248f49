"""Import path aliases of a JavaScript/TypeScript repository: ``compilerOptions.paths``
(with ``baseUrl``) of the ``tsconfig.json`` or ``jsconfig.json`` at its root.

``import { add } from "@/lib/math"`` names ``src/lib/math.ts`` when the config maps
``"@/*"`` to ``["src/*"]``; without the map the import would resolve by name only.
Only the root config is read (no ``extends``), and a pattern's first target is used.
The files are JSON with comments and trailing commas, as TypeScript accepts them; a
config that cannot be read means no aliases, never a failed index.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import NamedTuple

CONFIGS = ("tsconfig.json", "jsconfig.json")


class Alias(NamedTuple):
    """One ``paths`` entry: the pattern before its ``*``, whether it had one, and the
    target before its ``*`` (root-relative)."""

    prefix: str
    wildcard: bool
    target: str


_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def load(root: Path) -> tuple[Alias, ...]:
    """The aliases the root config declares, longest pattern first (TypeScript picks the
    longest matching prefix)."""
    for name in CONFIGS:
        try:
            text = (root / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        try:
            options = json.loads(_TRAILING_COMMA.sub(r"\1", _without_comments(text))).get("compilerOptions") or {}
            base = str(options.get("baseUrl") or ".")
            out = []
            for pattern, targets in (options.get("paths") or {}).items():
                if not isinstance(targets, list) or not targets or not isinstance(targets[0], str):
                    continue
                target = posixpath.normpath(posixpath.join(base, targets[0]))
                out.append(Alias(pattern.split("*")[0], "*" in pattern, target.split("*")[0]))
        except (ValueError, AttributeError, TypeError):
            return ()
        return tuple(sorted(out, key=lambda a: -len(a.prefix)))
    return ()


def rewrite(source: str, aliases: tuple[Alias, ...]) -> str | None:
    """The root-relative path an aliased import ``source`` names, or None."""
    for prefix, wildcard, target in aliases:
        if wildcard and source.startswith(prefix):
            return posixpath.normpath(target + source[len(prefix) :])
        if not wildcard and source == prefix:
            return posixpath.normpath(target)
    return None


def stamp(aliases: tuple[Alias, ...]) -> str:
    """A stable text of ``aliases``: when it changes, every import may mean another file."""
    return json.dumps(aliases)


def _without_comments(text: str) -> str:
    """``text`` without ``//`` and ``/* */`` comments outside strings."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)
