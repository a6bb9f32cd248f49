"""From Claude Code's auto memory: ``~/.claude/projects/<project>/memory/*.md``
(``$CLAUDE_CONFIG_DIR/projects`` in place of ``~/.claude/projects`` when it is set).

How Claude writes them, and so what becomes one memory:

- a *topic file* with front matter (``name``, ``description``, ``type``: user, feedback,
  project or reference) holds one fact with its why and how to apply: the file is one
  memory (the description, then the body), so the reason stays with the rule;
- ``MEMORY.md`` is the index Claude loads at session start: a line that links to a
  topic file is only a pointer to it and is skipped (the topic file is imported); a
  line that holds a fact itself (older memories were written straight into it) is a
  memory;
- a file without front matter is a list of facts: each top-level list item is one
  memory, and the prose of each section one more.

``feedback`` (a correction or a confirmed way of working) is a ``convention``; for the
other types, and free-form facts, the kind is guessed from the text as ``marm log``
guesses it. The time is the file's modification time (Claude records no other).

The project: Claude names the folder with a slug of the directory it ran in (every
character but letters and digits becomes ``-``: ``/home/u/src/app`` is
``-home-u-src-app``). The slug is not reversible, so the directory is found as the
directory a session transcript in that folder records, else a project marm knows with
that slug, else an existing directory whose slug it is; then, as for transcripts, its
git repository while it exists, else the directory itself (for a folder none of these
explain: the slug read with ``/`` for every ``-``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from marm.context import Ctx
from marm.errors import NotFound
from marm.importers import ImportSummary, Record, import_records, mtime, project_of_directory

INDEX = "MEMORY.md"
#: Claude's memory ``type`` -> marm's kind (the others are guessed from the text).
KINDS = {"feedback": "convention"}
_SLUG = re.compile(r"[^A-Za-z0-9]")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+\.md)\)")


def slug(directory: str) -> str:
    """Claude Code's folder name for a directory."""
    return _SLUG.sub("-", directory)


def projects_dir(env: dict[str, str], home: Path) -> Path:
    config = env.get("CLAUDE_CONFIG_DIR")
    return (Path(config).expanduser() if config else home / ".claude") / "projects"


def memory_dirs(place: Path) -> list[Path]:
    """The memory folders under ``place``: the projects folder, one project's folder,
    or a memory folder itself."""
    if (place / "memory").is_dir():
        return [place / "memory"]
    found = sorted(p for p in place.glob("*/memory") if p.is_dir())
    return found or ([place] if any(place.glob("*.md")) else [])


def run(ctx: Ctx, path: str | None, since: str | None, dry_run: bool) -> ImportSummary:
    home = Path(ctx.env.get("HOME") or Path.home())
    place = ctx.cwd / Path(path).expanduser() if path else projects_dir(dict(ctx.env), home)
    if place.is_file():
        files = [(place.parent, [place])]
    elif place.is_dir():
        files = [(d, sorted(d.glob("*.md"))) for d in memory_dirs(place)]
    else:
        raise NotFound(f"no Claude Code auto memory at {place}"
                       + ("" if path else " (set CLAUDE_CONFIG_DIR, or give PATH)"))
    if not any(found for _, found in files):
        raise NotFound(f"no Claude Code auto memory (*/memory/*.md) under {place}")
    known = _known_projects(ctx)
    records = (r for folder, found in files for r in _records(folder, found, known))
    return import_records(ctx, "claude-memory", records, since, dry_run, [str(place)])


def _known_projects(ctx: Ctx) -> dict[str, str]:
    from marm.store import backfill

    return {slug(p): p for p in backfill.known_projects(ctx.store())}


def _records(folder: Path, files: list[Path], known: dict[str, str]) -> Iterator[Record]:
    from marm.importers import markdown

    project = project_of_directory(directory_of(folder.parent, known))
    topics = {f.name for f in files}
    for file in files:
        at = mtime(file)
        where = f"{folder.parent.name}/{file.name}"
        try:
            note = markdown.read(file)
        except (OSError, ValueError) as exc:
            yield Record(where, "", project, at, skip=f"unreadable file ({str(exc)[:40]})")
            continue
        meta = {k: str(v) for k, v in note.meta.items() if k in ("name", "description", "type")}
        common = {"file": file.name, **({"claude_" + k: v for k, v in meta.items()})}
        if meta and file.name != INDEX:
            description = meta.get("description", "").strip()
            body = note.body.strip()
            text = f"{description}\n\n{body}" if description and description not in body else body
            yield Record(where, text, project, at, kind=KINDS.get(meta.get("type", "")),
                         platform="claude", metadata=common)
            continue
        for piece in markdown.pieces(note.body):
            links = _LINK.findall(piece.text)
            if file.name == INDEX and piece.item and links and all(Path(t).name in topics for t in links):
                yield Record(f"{where}:{piece.line}", piece.text, project, at,
                             skip="index line of a topic file (the file is imported)")
                continue
            yield Record(f"{where}:{piece.line}", piece.text, project, at, platform="claude",
                         metadata={**common, **({"section": piece.section} if piece.section else {})})


def directory_of(folder: Path, known: dict[str, str]) -> str:
    """The directory Claude's project folder stands for (see the module's docstring)."""
    name = folder.name
    for transcript in sorted(folder.glob("*.jsonl")):
        cwd = _recorded_cwd(transcript)
        if cwd and slug(cwd) == name:
            return cwd
    if name in known:
        return known[name]
    return _walk(Path("/"), name) or "/" + name.lstrip("-").replace("-", "/")


def _recorded_cwd(transcript: Path) -> str | None:
    """The ``cwd`` the first records of a session transcript carry."""
    import orjson

    try:
        with transcript.open("rb") as f:
            for _, line in zip(range(50), f):
                try:
                    value = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                cwd = value.get("cwd") if isinstance(value, dict) else None
                if isinstance(cwd, str) and cwd:
                    return cwd
    except OSError:
        pass
    return None


def _walk(directory: Path, rest: str) -> str | None:
    """The existing directory below ``directory`` whose slug is ``rest``, descending
    only into entries whose slug is a prefix of it."""
    if not rest:
        return str(directory)
    try:
        entries = sorted(e.name for e in os.scandir(directory) if e.is_dir(follow_symlinks=False))
    except OSError:
        return None
    for entry in entries:
        part = "-" + slug(entry)
        if rest == part or rest.startswith(part + "-"):
            found = _walk(directory / entry, rest[len(part):])
            if found:
                return found
    return None
