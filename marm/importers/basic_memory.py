"""From basic-memory: the markdown notes of its projects. PATH is a folder (read
recursively) or one note; without PATH, every project basic-memory's own config lists
(``config.json`` in ``$BASIC_MEMORY_CONFIG_DIR``, ``$XDG_CONFIG_HOME/basic-memory`` or
``~/.basic-memory``: ``projects`` maps a name to its folder, as ``{"name": "/path"}``
before basic-memory 0.19 and ``{"name": {"path": "/path", "mode": "local"}}`` since; a
cloud project counts only where it has a local copy, ``local_sync_path``), else the one
folder ``$BASIC_MEMORY_HOME`` or ``~/basic-memory``.

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

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from marm.context import Ctx
from marm.errors import BadInput, NotFound
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
    notes: list[str] = []
    places: list[tuple[str | None, Path]]   # (basic-memory's project name, folder or note)
    if path:
        places = [(None, ctx.cwd / Path(path).expanduser())]
    else:
        places = configured(dict(ctx.env), home, notes)
        if not places:
            default = ctx.env.get("BASIC_MEMORY_HOME")
            places = [(None, ctx.cwd / Path(default or home / "basic-memory").expanduser())]
    found: list[tuple[str | None, Path, Path]] = []   # (project, root, file)
    seen: set[Path] = set()
    read: list[str] = []
    for name, place in places:
        if place.is_file():
            files, root = [place], place.parent
        elif place.is_dir():
            files, root = sorted(p for p in place.rglob("*.md") if p.is_file() and not any(
                part.startswith(".") for part in p.relative_to(place).parts)), place
        elif name is not None:
            notes.append(f"project {name}: no folder at {place}")
            continue
        else:
            raise NotFound(f"no basic-memory notes at {place}" + ("" if path else " (give PATH: the project's folder)"))
        read.append(str(place))
        for f in files:
            if f.resolve() not in seen:  # a project folder inside another is read once
                seen.add(f.resolve())
                found.append((name, root, f))
    if not found:
        raise NotFound("no basic-memory notes (*.md) under " + ", ".join(str(p) for _, p in places))
    records = (r for name, root, f in found for r in _records(f, str(f.relative_to(root)), name))
    return import_records(ctx, "basic-memory", records, since, dry_run, read, notes)


def config_file(env: dict[str, str], home: Path) -> Path | None:
    """basic-memory's config, where basic-memory looks for it (``resolve_data_dir``):
    ``$BASIC_MEMORY_CONFIG_DIR`` (since 0.15.1), ``$XDG_CONFIG_HOME/basic-memory`` (since
    0.21.2), ``~/.basic-memory``: the first that has a ``config.json``."""
    candidates = [Path(env["BASIC_MEMORY_CONFIG_DIR"]).expanduser()] if env.get("BASIC_MEMORY_CONFIG_DIR") else []
    if env.get("XDG_CONFIG_HOME"):
        candidates.append(Path(env["XDG_CONFIG_HOME"]).expanduser() / "basic-memory")
    candidates.append(home / ".basic-memory")
    return next((c / "config.json" for c in candidates if (c / "config.json").is_file()), None)


def configured(env: dict[str, str], home: Path, notes: list[str]) -> list[tuple[str | None, Path]]:
    """(name, folder) of every project basic-memory's config lists, in its order; none
    when there is no config or it lists none."""
    file = config_file(env, home)
    if file is None:
        return []
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot read basic-memory's config {file}: {str(exc)[:80]}") from None
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        if projects is not None or not isinstance(data, dict):
            raise BadInput(f"{file} is not basic-memory's config (no projects mapping)")
        return []
    out: list[tuple[str | None, Path]] = []
    for name, entry in projects.items():
        folder: Any = entry
        if isinstance(entry, dict):  # 0.19 and later: a ProjectEntry
            folder = entry.get("path")
            if str(entry.get("mode") or "local") == "cloud":
                folder = entry.get("local_sync_path")
                if not folder:
                    notes.append(f"project {name}: in Basic Memory Cloud with no local copy, not imported")
                    continue
        if not isinstance(folder, str) or not folder.strip():
            notes.append(f"project {name}: no folder in {file}")
            continue
        out.append((str(name), Path(folder).expanduser()))
    return out


def _records(file: Path, where: str, project: str | None = None) -> Iterator[Record]:
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
                              **({"basic_memory_project": project} if project else {}),
                              **({"permalink": str(note.meta["permalink"])} if note.meta.get("permalink") else {}),
                              **({"note_tags": _tags(note.meta.get("tags"))} if note.meta.get("tags") else {})}
    for piece in markdown.pieces(note.body):
        key = f"{project}:{where}:{piece.line}" if project else f"{where}:{piece.line}"
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
