"""Markdown notes as the note tools write them: YAML front matter, then a body whose
top-level list items are the facts (Claude Code's auto memory, basic-memory).

Front matter is read by python-frontmatter (PyYAML underneath); the body is split by
markdown-it-py (which rich already brings), so a ``-`` inside a fenced code block or a
continuation line is never taken for a new item. Every piece keeps the characters of
the file: slices of the source lines, never a re-rendering, so code keeps its ``<`` and
``&``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s?")


@dataclass(frozen=True, slots=True)
class Note:
    meta: dict[str, Any]
    body: str


@dataclass(frozen=True, slots=True)
class Piece:
    """A top-level list item (marker removed) or the prose of one section."""

    text: str
    section: str | None   # the heading it sits under
    item: bool
    line: int             # 1-based line of the body where it starts


def read(path: Path) -> Note:
    """A note's front matter and body; ``ValueError`` when the front matter is not YAML
    or the file is not UTF-8."""
    import frontmatter  # start-up cost: only an import of notes reads YAML
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason})") from None
    try:
        meta, body = frontmatter.parse(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"front matter is not YAML ({str(exc).splitlines()[0]})") from None
    return Note(dict(meta) if isinstance(meta, dict) else {}, body)


def pieces(body: str) -> list[Piece]:
    """The body's top-level list items, each with its sub-items and continuation lines,
    and, per section, the prose (paragraphs, code, quotes, tables) outside any list."""
    from markdown_it import MarkdownIt

    lines = body.splitlines()
    tokens = MarkdownIt("commonmark").enable("table").parse(body)
    out: list[Piece] = []
    section: str | None = None
    prose: list[tuple[int, int]] = []

    def flush() -> None:
        if prose:
            text = "\n\n".join("\n".join(lines[a:b]).strip("\n") for a, b in prose).strip()
            if text:
                out.append(Piece(text, section, False, prose[0][0] + 1))
            prose.clear()

    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.level != 0 or t.map is None or t.type.endswith("_close"):
            i += 1
            continue
        if t.type == "heading_open":
            flush()
            section = tokens[i + 1].content.strip() or section
        elif t.type in ("bullet_list_open", "ordered_list_open"):
            flush()
            for item in tokens[i + 1:]:
                if item.level == 0:
                    break
                if item.type == "list_item_open" and item.level == 1 and item.map is not None:
                    a, b = item.map
                    out.append(Piece(_unmark(lines[a:b]), section, True, a + 1))
        elif t.type != "hr":
            prose.append((t.map[0], t.map[1]))
        i += 1
    flush()
    return [p for p in out if p.text]


def _unmark(lines: list[str]) -> str:
    """An item's lines without its list marker, its continuation lines dedented by the
    marker's width."""
    if not lines:
        return ""
    m = _MARKER.match(lines[0])
    width = m.end() if m else 0
    rest = [ln[width:] if ln[:width].strip() == "" else ln.lstrip() for ln in lines[1:]]
    return "\n".join([lines[0][width:], *rest]).strip()
