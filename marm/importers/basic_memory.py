"""From basic-memory: the markdown notes of one of its projects (``~/basic-memory``, or
``$BASIC_MEMORY_HOME``, or PATH: a folder, read recursively, or one note).

A note is YAML front matter (``title``, ``type``, ``permalink``, ``tags``) and a body in
which basic-memory's parser finds, anywhere, list items of two shapes
(``NOTE-FORMAT.md``):

- an observation, ``- [category] content #tag (context)``: one memory, ``Title:
  content`` (the note's title, else its file name, is what the fact is about). The
  category gives the kind where marm has one (decision, fix, lesson, idea, ...), else
  ``note``; the tags and the category go to the metadata. A task box (``- [ ]``,
  ``- [x]``) is not an observation.
- a relation, ``- relation_type [[Target]] (context)``: one memory stating it
  (``Title implements Target``), with the edge kept in its metadata for the concept
  graph, as for the MCP memory server (``marm.importers.mcp_memory``).

The rest of the body (each other list item, and each section's prose) is a ``note``
memory with the same title in front, so a note written as prose is imported too.
basic-memory's projects are knowledge bases, not repositories: everything is global.
The time is the file's modification time (basic-memory's own times live in its
database, which its files are the source of).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from marm.context import Ctx
from marm.errors import NotFound
from marm.importers import ImportSummary, Record, import_records, mtime, stated

#: A category -> marm's kind, where one fits.
KINDS = {
    "decision": "decision", "fix": "fix", "bugfix": "fix", "bug": "fix", "solution": "fix",
    "lesson": "lesson", "learning": "lesson", "insight": "lesson", "idea": "idea", "question": "question",
    "todo": "todo", "task": "todo", "plan": "plan", "research": "research", "config": "config",
    "convention": "convention", "rule": "convention", "standard": "convention", "practice": "convention",
}
_OBSERVATION = re.compile(r"^\[([^\[\]]+)\]\s+(\S.*)$", re.DOTALL)
_TASK = re.compile(r"^\[[ xX-]\]")
_RELATION = re.compile(r"^(?:([^\[\]]+?)\s+)?\[\[([^\]]+)\]\]\s*(?:\((.*)\))?$", re.DOTALL)
_TAG = re.compile(r"(?<![\w&#])#([\w/-]+)")


def run(ctx: Ctx, path: str | None, since: str | None, dry_run: bool) -> ImportSummary:
    home = Path(ctx.env.get("HOME") or Path.home())
    default = ctx.env.get("BASIC_MEMORY_HOME")
    place = ctx.cwd / Path(path or default or home / "basic-memory").expanduser()
    if place.is_file():
        files = [place]
    elif place.is_dir():
        files = sorted(p for p in place.rglob("*.md")
                       if p.is_file() and not any(part.startswith(".") for part in p.relative_to(place).parts))
    else:
        raise NotFound(f"no basic-memory notes at {place}" + ("" if path else " (give PATH: the project's folder)"))
    if not files:
        raise NotFound(f"no basic-memory notes (*.md) under {place}")
    root = place.parent if place.is_file() else place
    records = (r for f in files for r in _records(f, str(f.relative_to(root))))
    return import_records(ctx, "basic-memory", records, since, dry_run, [str(place)])


def _records(file: Path, where: str) -> Iterator[Record]:
    from marm.importers import markdown

    at = mtime(file)
    try:
        note = markdown.read(file)
    except (OSError, ValueError) as exc:
        yield Record(where, "", None, at, skip=f"unreadable note ({str(exc)[:40]})")
        return
    title = str(note.meta.get("title") or file.stem).strip()
    kind_of_note = str(note.meta.get("type") or "note")
    common: dict[str, Any] = {"note": title, "file": where, "note_type": kind_of_note,
                              **({"permalink": str(note.meta["permalink"])} if note.meta.get("permalink") else {}),
                              **({"note_tags": _tags(note.meta.get("tags"))} if note.meta.get("tags") else {})}
    for piece in markdown.pieces(note.body):
        key = f"{where}:{piece.line}"
        first = piece.text.split("\n", 1)[0]
        observation = _OBSERVATION.match(piece.text) if piece.item and not _TASK.match(piece.text) else None
        relation = _RELATION.match(first) if piece.item and "\n" not in piece.text else None
        if observation:
            category, content = observation.group(1).strip(), observation.group(2).strip()
            yield Record(key, f"{title}: {content}", None, at, kind=KINDS.get(category.lower(), "note"),
                         metadata={**common, "category": category, "tags": _TAG.findall(content),
                                   **stated([(title, kind_of_note)])})
        elif relation:
            predicate = (relation.group(1) or "relates_to").strip()
            target = relation.group(2).split("|", 1)[0].strip()
            context = f" ({relation.group(3).strip()})" if relation.group(3) else ""
            yield Record(key, f"{title} {predicate.replace('_', ' ')} {target}{context}", None, at, kind="note",
                         metadata={**common, **stated([(title, kind_of_note), (target, None)],
                                                      [(title, predicate, target)])})
        else:
            yield Record(key, f"{title}: {piece.text}", None, at, kind="note",
                         metadata={**common, **({"section": piece.section} if piece.section else {})})


def _tags(value: Any) -> list[str]:
    """Front-matter tags: a YAML list or a comma-separated string."""
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(t).strip() for t in items if str(t).strip()]
