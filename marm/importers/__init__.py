"""Importers: bring a user's history into marm (past agent sessions, other memory tools).

Every importer writes through the one write path (``write_memory``: cleaning, redaction,
per-project de-duplication, tombstones, the outbox that queues embedding and concepts),
so an import is idempotent by content and respects retractions like any other write.
Each keeps the time the source recorded a text as the memory's ``recorded_at``, and
counts per project what it took and what it skipped, with the reason.

A tool's store is read by a module of its own that only turns the source into
``Record``s (where a text goes, when it was recorded, what kind it is, the source's own
id for it); ``import_records`` is the one pipeline that writes them (``--since``,
``--dry-run``, the counts) and is shared by every ``--from`` source. Past sessions
(``transcripts``) are the exception: they are replayed through the live capture.

One module per source; each is imported only when its source is asked for.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marm.context import Ctx

if TYPE_CHECKING:
    from marm.ops.memory import LogResult

#: ``--from`` name -> (module that reads it, what it is, for help and errors).
SOURCES = {
    "marm": ("marm.importers.marm_store", "a MARM store"),
    "claude-memory": ("marm.importers.claude_memory", "Claude Code's auto memory"),
    "mcp-memory": ("marm.importers.mcp_memory", "the MCP memory server's knowledge graph"),
    "claude-mem": ("marm.importers.claude_mem", "claude-mem's database"),
    "basic-memory": ("marm.importers.basic_memory", "basic-memory's notes"),
}


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

    def unadd(self, kind: str) -> None:
        """Take back one ``add`` (a dry run's count of what turned out to be a repeat)."""
        self.added[kind] -= 1
        if not self.added[kind]:
            del self.added[kind]


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
          metadata: dict[str, Any] | None = None) -> LogResult | None:
    """One imported memory through ``write_memory``; what became of it goes to ``tally``
    (added by kind, or skipped: already here, retracted here, nothing left once cleaned).
    The new memory's result, or None when nothing was added."""
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
    return result


def timestamp(value: Any) -> str | None:
    """A source's time (ISO text, ``YYYY-MM-DD HH:MM:SS``, or epoch seconds or
    milliseconds) in marm's stored form, or None when it cannot be read."""
    from datetime import datetime, timezone

    from marm.errors import BadInput
    from marm.text import stamp, to_timestamp

    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        seconds = value / 1000 if value > 1e11 else value
        return stamp(datetime.fromtimestamp(seconds, timezone.utc))
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return to_timestamp(value.strip().replace(" ", "T", 1) if " " in value.strip()[:11] else value)
    except BadInput:
        return None


def project_of_directory(cwd: str | None) -> str | None:
    """marm's project for a directory an agent recorded: its git repository while it
    exists (as a live hook there would decide: outside git, global), else the recorded
    path itself."""
    from marm.scope import git_project

    if not cwd:
        return None
    path = Path(cwd)
    if path.exists():
        return git_project(path)
    return cwd


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


@dataclass(frozen=True, slots=True)
class Record:
    """One text a source holds, as a reader hands it to ``import_records``.

    ``source_id`` is the source's own stable name for it (a row id, a file and its
    item's position, an entity and its observation), kept in the memory's metadata for
    provenance; a second import is recognised by content (hash in its project), so an
    edited note comes in as the new text it now is and the old one stays. ``skip`` is
    a reason the reader itself leaves it out for (counted, not written)."""

    source_id: str
    text: str
    project: str | None
    recorded_at: str | None
    kind: str | None = None
    session: str | None = None
    platform: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    skip: str | None = None


def stated(entities: Iterable[tuple[str, str | None]] = (),
           relations: Iterable[tuple[str, str, str]] = ()) -> dict[str, Any]:
    """Metadata naming the entities and relations a source states outright (a knowledge
    graph's entity, a note's ``relation [[Target]]``): the concept indexer adds them to
    what it extracts from the text (``marm.concepts.indexer``), so they are edges of the
    graph and, kept with the memory, survive every rebuild of it."""
    return {"stated": {
        "entities": [{"name": n, "type": t} for n, t in entities if n and n.strip()],
        "relations": [{"from": a, "type": p, "to": b} for a, p, b in relations if a and p and b],
    }}


#: Records written per transaction at most. An import holds the store's one write lock
#: only for a batch, then commits and lets it go (and, ``BATCH_PAUSE``, lets a waiting
#: writer in), so a hook (whose budget for the lock is 1.2 s at the least) or a ``marm
#: log`` waits for ``BATCH_SECONDS`` of lock time plus one batch at most, about half a
#: second, never the whole import (a 10,000-row source in one transaction held the lock
#: for ~20 s here). Each batch is whole or absent after a crash; the next run adds
#: exactly the rest (content de-dup).
BATCH_RECORDS = 250

#: ...or this many seconds per transaction, whichever comes first (records are ~2 ms
#: each here, more on a loaded machine or for long texts).
BATCH_SECONDS = 0.25

#: Seconds an import waits, lock released, between two transactions once it has held
#: the lock for ``BATCH_SECONDS`` since it last waited (``Pacer``). Releasing
#: the lock is not enough: a writer that found it taken sleeps in SQLite's busy handler
#: (at most 100 ms at a time) and, were the next batch to begin at once, would wake to
#: find it taken again, batch after batch (measured: hooks with a 1.2 s budget gave up
#: while an import ran). A pause longer than that longest sleep lets every writer that
#: waited for a batch in before the next one; an import takes up to ~1/2 as long again.
BATCH_PAUSE = 0.12


class Pacer:
    """How long an import has held the write lock since it last let others in: after
    ``BATCH_SECONDS`` of it, ``rest`` pauses ``BATCH_PAUSE`` between two transactions
    (``--from`` batches; past sessions, one transaction each)."""

    def __init__(self) -> None:
        self.held = 0.0
        self.start = 0.0

    @contextmanager
    def holding(self) -> Iterator[None]:
        """Count the time spent inside (call it inside the transaction)."""
        import time

        self.start = time.monotonic()
        try:
            yield
        finally:
            self.held += time.monotonic() - self.start

    def due(self) -> bool:
        """Whether the transaction under way has had its ``BATCH_SECONDS``."""
        import time

        return time.monotonic() - self.start >= BATCH_SECONDS

    def rest(self) -> None:
        """Between transactions, with more to write: let a waiting writer in."""
        import time

        if self.held and self.held >= BATCH_SECONDS:
            time.sleep(BATCH_PAUSE)
            self.held = 0.0


def import_records(ctx: Ctx, source: str, records: Iterable[Record], since: str | None, dry_run: bool,
                   read: list[str], notes: list[str] | None = None,
                   also: Callable[[Tallies], None] | None = None) -> ImportSummary:
    """Write ``records`` in batches, one transaction each (``BATCH_RECORDS``,
    ``BATCH_SECONDS``; the source is read between them, outside the lock, and a writer
    waiting for the lock is let in between them, ``BATCH_PAUSE``): each through
    ``write``, unless the reader skipped it, it is older than ``since``, or its text was
    forgotten or superseded here (which ``write_memory`` alone would store again).
    ``also`` writes what a source has besides memories (notebook entries, verdicts) in
    one last transaction.

    ``--dry-run`` runs the same batches and rolls each back after counting. What an
    earlier (rolled-back) batch would have added is remembered by content hash and
    project, so a text the source holds twice counts as added once and "already here"
    after, as the real import counts it; the sessions those writes would have made are
    made again before ``also`` (which counts sessions new here)."""
    import itertools
    from collections import deque

    from marm.store import memories, sessions, transfer
    from marm.text import clean, content_hash

    store = ctx.store()
    tallies = Tallies()
    added: set[tuple[str, str | None]] = set()       # (content hash, project) this run added
    touched: set[tuple[str, str | None]] = set()     # (session, project) those writes used
    source_records = iter(records)
    queue: deque[Record] = deque()
    total = len(records) if isinstance(records, (list, tuple)) else None

    def one(r: Record, forgotten: set[tuple[str, str | None]]) -> None:
        tally = tallies.of(r.project)
        if r.skip:
            tally.skip(r.skip)
            return
        if since and r.recorded_at and r.recorded_at < since:
            tally.skip("before --since")
            return
        digest = content_hash(clean(r.text).text.strip())
        if (digest, r.project) in forgotten:
            tally.skip("forgotten here")
            return
        here = memories.find_by_hash(store, digest, r.project)
        if here is not None and here.status == "superseded":
            tally.skip("superseded here")
            return
        if dry_run and (digest, r.project) in added:  # added by a batch rolled back since
            tally.skip("already here")
            return
        with acting(ctx, r.platform):
            result = write(scoped(ctx, r.project), tally, r.text, kind=r.kind, session=r.session,
                           recorded_at=r.recorded_at,
                           metadata={"imported": source, "source_id": r.source_id, **r.metadata})
        if result is not None:
            added.add((digest, r.project))
            if result.session:
                touched.add((result.session, r.project))

    pacer = Pacer()
    with ctx.progress(total, f"import --from {source}") as bar:
        queue.extend(itertools.islice(source_records, BATCH_RECORDS))
        while queue:
            try:
                with store.write(), pacer.holding():  # the lock is held from here
                    forgotten = transfer.forgotten_texts(store)
                    while queue:
                        one(queue.popleft(), forgotten)
                        bar.advance()
                        if pacer.due():
                            break  # the rest waits in the queue for the next batch
                    if dry_run:
                        raise DryRun
            except DryRun:
                pass
            queue.extend(itertools.islice(source_records, BATCH_RECORDS - len(queue)))  # lock released
            if queue or also is not None:
                pacer.rest()  # a writer waiting for these batches goes first (``BATCH_PAUSE``)
    if also is not None:
        try:
            with store.write():
                if dry_run:
                    for name, project in touched:
                        sessions.touch(store, name, project)
                also(tallies)
                if dry_run:
                    raise DryRun
        except DryRun:
            pass
    return ImportSummary.of(source, dry_run, read, tallies, notes)


def open_sqlite(path: Path, what: str) -> sqlite3.Connection:
    """Another tool's SQLite database, read-only (the tool may be running; nothing is
    changed), with rows readable by column name."""
    from marm.errors import BadInput, NotFound

    if not path.is_file():
        raise NotFound(f"no {what} at {path}")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.execute("SELECT 1 FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise BadInput(f"{path} is not a SQLite database ({exc})") from None
    conn.row_factory = sqlite3.Row
    return conn


def rows(conn: sqlite3.Connection, table: str) -> list[sqlite3.Row]:
    """Every row of ``table``, or none when this version of the tool has no such table."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone() is None:
        return []
    return conn.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608 - fixed table names


def column(row: sqlite3.Row | None, key: str) -> Any:
    """A column that older versions of a tool's schema may lack."""
    return row[key] if row is not None and key in row.keys() else None


def mtime(path: Path) -> str | None:
    """A file's modification time: when a tool that keeps no times last wrote it."""
    try:
        return timestamp(path.stat().st_mtime)
    except OSError:
        return None


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
