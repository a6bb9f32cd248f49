"""Importers: bring a user's history into marm (past agent sessions, other memory tools).

Every importer writes through the one write path (``write_memory``: cleaning, redaction,
per-project de-duplication, tombstones, the outbox that queues embedding and concepts),
so an import is idempotent by content and respects retractions like any other write.
Each keeps the time the source recorded a text as the memory's ``recorded_at``, and
counts per project what it took and what it skipped, with the reason.

One module per source; each is imported only when its source is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from marm.context import Ctx

#: ``--from`` name -> module that reads it.
SOURCES = {
    "marm": "marm.importers.marm_store",
}
#: Sources issue 21 asks for that have no importer yet: named so the refusal says so.
PLANNED = ("claude-memory", "mcp-memory", "claude-mem", "basic-memory")


@dataclass
class Tally:
    """What one import did in one project."""

    sessions: int = 0
    turns: int = 0
    added: dict[str, int] = field(default_factory=dict)      # kind -> memories (or rows) added
    skipped: dict[str, int] = field(default_factory=dict)    # reason -> count

    def add(self, kind: str, n: int = 1) -> None:
        self.added[kind] = self.added.get(kind, 0) + n

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n


class Tallies(dict):
    """Project key -> its ``Tally`` (``None`` is global)."""

    def of(self, project: str | None) -> Tally:
        if project not in self:
            self[project] = Tally()
        return self[project]


@dataclass
class ImportCtx(Ctx):
    """The context an importer writes through: the project is the one the importer
    decided from the source (a session's recorded directory, a tool's project name),
    never the importing shell's; the store is the importing process's own."""

    fixed_project: str | None = None

    def project(self, explicit: str | None = None) -> str | None:
        return self.fixed_project

    def close(self) -> None:  # the store belongs to the importing Ctx
        pass


def scoped(ctx: Ctx, project: str | None, cwd: Any = None) -> ImportCtx:
    return ImportCtx(source="import", platform=ctx.platform, cwd=cwd or ctx.cwd, env=ctx.env,
                     interactive=ctx.interactive, _store=ctx.store(), fixed_project=project)


@contextmanager
def acting(ctx: Ctx, platform: str | None) -> Iterator[None]:
    """Tag what is written meanwhile with source ``import`` and the agent or tool the
    source belonged to."""
    store = ctx.store()
    before = store.actor
    store.actor = replace(before, source="import", platform=platform)
    try:
        yield
    finally:
        store.actor = before


def write(ctx: Ctx, tally: Tally, text: str, *, kind: str | None = None,
          session: str | None = None, recorded_at: str | None = None,
          metadata: dict[str, Any] | None = None) -> int | None:
    """One imported memory through ``write_memory``; what became of it goes to ``tally``
    (added by kind, or skipped: already here, retracted here, nothing left once cleaned)."""
    from marm.errors import MarmError, Refused
    from marm.ops.memory import write_memory

    if not text or not text.strip():
        tally.skip("empty")
        return None
    try:
        result = write_memory(ctx, text, kind=kind,
                              session=session, recorded_at=recorded_at, metadata=metadata)
    except Refused:
        tally.skip("retracted here")
        return None
    except MarmError as exc:
        tally.skip(f"refused: {exc.message[:60]}")
        return None
    if not result.created:
        tally.skip("already here")
        return None
    tally.add(result.kind)
    return result.id


def timestamp(value: Any) -> str | None:
    """A source's time (ISO text, ``YYYY-MM-DD HH:MM:SS``, or epoch seconds or
    milliseconds) in marm's stored form, or None when it cannot be read."""
    from datetime import datetime, timezone

    from marm.errors import BadInput
    from marm.text import to_timestamp

    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        seconds = value / 1000 if value > 1e11 else value
        return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return to_timestamp(value.strip().replace(" ", "T", 1) if " " in value.strip()[:11] else value)
    except BadInput:
        return None


def project_for_name(store: Any, name: str | None, also: Iterable[str | None] = ()) -> str | None:
    """marm's project for a tool that names projects by their directory's name (MARM,
    claude-mem): the one project marm knows (or of ``also``: the importing directory's)
    whose directory has that name, else the name itself. No name is global."""
    from marm.store import backfill

    if not name or not name.strip():
        return None
    known = {*backfill.known_projects(store), *(p for p in also if p)}
    matches = [p for p in known if p.rstrip("/").rsplit("/", 1)[-1] == name]
    return matches[0] if len(matches) == 1 else name


class DryRun(Exception):
    """Raised inside an import's transaction to roll back what a dry run wrote: the
    counts are those of the real import, nothing stays."""


@dataclass(frozen=True, slots=True)
class ImportSummary:
    source: str                                  # transcripts, marm, claude-memory, ...
    dry_run: bool
    read: list[str]                              # where it read (files or directories)
    projects: dict[str, dict[str, Any]]          # project (display key) -> counts
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, source: str, dry_run: bool, read: list[str], tallies: Tallies,
           notes: list[str] | None = None) -> ImportSummary:
        projects = {
            (key if key is not None else "(global)"): {
                "sessions": t.sessions, "turns": t.turns, "added": dict(t.added), "skipped": dict(t.skipped)}
            for key, t in sorted(tallies.items(), key=lambda kv: kv[0] or "")
        }
        return cls(source, dry_run, read, projects, notes or [])

    def text(self) -> str:
        from marm.scope import display

        verb = "would import" if self.dry_run else "imported"
        lines = [f"{verb} from {self.source}" + (f" ({len(self.read)} read)" if self.read else "")]
        if not self.projects:
            lines.append("  nothing found")
        for key, c in self.projects.items():
            added = ", ".join(f"{n} {k}" for k, n in sorted(c["added"].items())) or "nothing new"
            head = f"  {display(None if key == '(global)' else key)}: "
            if c["sessions"] or c["turns"]:
                head += f"{c['sessions']} sessions, {c['turns']} turns; "
            lines.append(head + added)
            if c["skipped"]:
                lines.append("    skipped: " + ", ".join(f"{n} {why}" for why, n in sorted(c["skipped"].items())))
        lines.extend(f"  {n}" for n in self.notes)
        if not self.dry_run and any(c["added"] for c in self.projects.values()):
            lines.append("  embedding and concepts are queued: `marm drain` works through them")
        return "\n".join(lines)
