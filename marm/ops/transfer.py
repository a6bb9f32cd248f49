"""Export and import: the store as JSON lines, to move it, back it up, or merge it.

One JSON object per line, each with a ``type``: a ``marm-export`` header, then
``memory``, ``log``, ``notebook``, ``session``, ``notebook_active``, ``concept_alias``,
``concept_suppression``, ``concept_dismissal``, ``tombstone`` and ``event`` records.
How import keeps ids, maps taken ones and stays idempotent is described in
``marm.store.transfer``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import orjson

from marm.context import Ctx
from marm.errors import BadInput, NotFound
from marm.ops.params import AllProjects, ProjectOpt
from marm.ops.registry import Param, op
from marm.scope import display
from marm.store import review, transfer
from marm.store.db import now
from marm.store.memories import VISIBLE_STATUSES
from marm.text import clean_name, content_hash

FORMAT = "marm-export"
VERSION = 1

#: Fields each record type must carry.
FIELDS: dict[str, tuple[str, ...]] = {
    "memory": transfer.MEMORY_FIELDS,
    "log": transfer.LOG_FIELDS,
    "notebook": transfer.NOTEBOOK_FIELDS,
    "event": transfer.EVENT_FIELDS,
    **{kind: columns for kind, (_, columns, _) in transfer.SIMPLE.items()},
}
#: Keys of an event's detail that name a memory id (followed when ids are remapped).
MEMORY_REFS = ("memory_id", "superseded_by", "tombstone_of")


@dataclass(frozen=True, slots=True)
class ExportResult:
    project: str | None
    all_projects: bool
    counts: dict[str, int]
    lines: list[str] = field(repr=False)

    def document(self) -> Iterator[str]:
        """What the CLI prints: the export itself, one JSON object per line."""
        return iter(self.lines)

    def text(self) -> str:
        where = "every project" if self.all_projects else display(self.project) + " and global"
        return f"exported from {where}: " + ", ".join(f"{n} {k}" for k, n in self.counts.items())


@op("export", read_only=True, idempotent=True)
def export(ctx: Ctx, project: ProjectOpt = None, all_projects: AllProjects = False) -> ExportResult:
    """Write the store as JSON lines on standard output: `marm export > backup.jsonl`.

    Memories (with ids, times, status and provenance), log and notebook entries,
    sessions, concept verdicts, tombstones and the audit trail of the current project
    and global memories (--all-projects: everything). `marm import` reads it back.

    Examples:
      marm export > backup.jsonl
      marm export --all-projects > everything.jsonl
    """
    store = ctx.store()
    key = None if all_projects else ctx.project(project)
    header = {"type": FORMAT, "version": VERSION, "schema_version": store.schema_version(),
              "exported_at": now(), "project": key, "all_projects": all_projects}
    lines = [orjson.dumps(header).decode()]
    counts: Counter[str] = Counter()
    for record in transfer.export_records(store, key, all_projects):
        counts[record["type"]] += 1
        lines.append(orjson.dumps(record).decode())
    return ExportResult(key, all_projects, dict(counts), lines)


@dataclass(frozen=True, slots=True)
class ImportResult:
    file: str
    added: dict[str, int]
    already_here: dict[str, int]
    remapped: dict[str, int]          # exported memory id -> local id, where they differ
    not_restored: int                 # memories whose text was forgotten here
    kept_retracted: int = 0           # memories whose text is retracted here: imported retracted

    def text(self) -> str:
        added = ", ".join(f"{n} {k}" for k, n in self.added.items() if n) or "nothing new"
        lines = [f"imported {self.file}: {added}"]
        if any(self.already_here.values()):
            lines.append("already here: " + ", ".join(f"{n} {k}" for k, n in self.already_here.items() if n))
        if self.remapped:
            lines.append("ids taken here, remapped: "
                         + ", ".join(f"#{a} -> #{b}" for a, b in self.remapped.items()))
        if self.not_restored:
            lines.append(f"{self.not_restored} memories were forgotten here and stay forgotten")
        if self.kept_retracted:
            lines.append(f"{self.kept_retracted} memories are retracted here and came in retracted")
        return "\n".join(lines)


def _read(path: Path) -> list[dict[str, Any]]:
    """Parse and check the whole file before anything is written."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"no such file: {path}") from None
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    records: list[dict[str, Any]] = []
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise BadInput(f"{path.name} line {number} is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise BadInput(f"{path.name} line {number} is not a JSON object")
        if not records:
            if record.get("type") != FORMAT:
                raise BadInput(f"{path.name} is not a marm export (no {FORMAT} header on line 1)")
            if record.get("version") != VERSION:
                raise BadInput(f"{path.name} is export format version {record.get('version')};"
                               f" this marm reads version {VERSION}")
        else:
            kind = record.get("type")
            if kind not in FIELDS:
                raise BadInput(f"{path.name} line {number}: unknown record type {kind!r}")
            missing = [f for f in FIELDS[kind] if f not in record]
            if missing:
                raise BadInput(f"{path.name} line {number}: {kind} record lacks {', '.join(missing)}")
            problem = _problem(kind, record)
            if problem:
                raise BadInput(f"{path.name} line {number}: {problem}")
            record = _scrubbed(record)
        records.append(record)
    if not records:
        raise BadInput(f"{path.name} is empty")
    return records[1:]


def _scrubbed(record: dict[str, Any]) -> dict[str, Any]:
    """A record with every string in it redacted (a hand-made or foreign file may hold a
    secret marm's own write path would have removed); a memory whose text changed gets
    the hash of its new text, so identity follows what is stored."""
    out: dict[str, Any] = _scrub(record)
    if out.get("type") == "memory" and out["content"] != record["content"]:
        out["content_hash"] = content_hash(out["content"])
    return out


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return clean_name(value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _problem(kind: str, record: dict[str, Any]) -> str | None:
    """What makes a record unusable (wrong types, unknown status), or None."""
    ints = {"memory": ("id",), "log": ("id", "memory_id")}.get(kind, ())
    texts = {"memory": ("content", "content_hash", "recorded_at"), "event": ("at", "action", "entity"),
             "notebook": ("name", "content")}.get(kind, ())
    for name in ints:
        if not isinstance(record[name], int) or isinstance(record[name], bool) or record[name] < 1:
            return f"{kind} {name} must be a positive integer"
    for name in texts:
        if not isinstance(record[name], str) or not record[name]:
            return f"{kind} {name} must be a non-empty string"
    if kind == "memory" and record["status"] not in STATUSES:
        return f"unknown memory status {record['status']!r}"
    if kind == "memory" and not (record["superseded_by"] is None or isinstance(record["superseded_by"], int)):
        return "memory superseded_by must be an id or null"
    return None


#: The statuses a memory can have.
STATUSES = ("active", "doubted", "superseded", "retracted")


class _Importer:
    """One import, inside one write transaction: the id maps and the counts."""

    def __init__(self, store: Any, by_type: dict[str, list[dict[str, Any]]]) -> None:
        self.store = store
        self.ids: dict[str, dict[int, int]] = {"memory": {}, "log": {}}
        # Fresh ids go above every id the file mentions, so one taken id does not
        # push the file's other ids out of place.
        self.top = {
            "memory": max([r["id"] for r in by_type.get("memory", [])] + [
                int(e["entity_id"]) for e in by_type.get("event", [])
                if e["entity"] == "memory" and str(e["entity_id"]).isdigit()] + [0]),
            "log": max([r["id"] for r in by_type.get("log", [])] + [
                int(e["entity_id"]) for e in by_type.get("event", [])
                if e["entity"] == "log" and str(e["entity_id"]).isdigit()] + [0]),
        }
        self.added: Counter[str] = Counter()
        self.here: Counter[str] = Counter()
        self.forgotten_here = 0
        self.retracted_here = 0

    def fresh(self, entity: str) -> int:
        return transfer.reserve_id(self.store, entity, self.top[entity])

    def local(self, entity: str, exported: int) -> int:
        """The local id of an exported memory or log id that has no record in the file
        (forgotten there): where its history was imported before, else the same id if
        free, else a fresh one."""
        mapping = self.ids[entity]
        if exported not in mapping:
            taken = transfer.id_taken(self.store, entity, exported)
            mapping[exported] = self.fresh(entity) if taken else exported
        return mapping[exported]

    def memories(self, records: list[dict[str, Any]]) -> None:
        inserted = []
        forgotten = transfer.forgotten_texts(self.store)
        for r in records:
            same = transfer.same_memory(self.store, r)
            if same is not None:
                self.ids["memory"][r["id"]] = same
                self.here["memory"] += 1
            elif (r["content_hash"], r["project"]) in forgotten:
                self.forgotten_here += 1
            else:
                taken = transfer.id_taken(self.store, "memory", r["id"])
                local = self.fresh("memory") if taken else r["id"]
                grave = review.tombstone(self.store, r["content_hash"], r["project"])
                note = None
                if grave is not None and r["status"] in VISIBLE_STATUSES:
                    r = {**r, "status": "retracted", "status_reason": grave.reason or "retracted here"}
                    note = {"retracted_here": grave.memory_id}
                    self.retracted_here += 1
                transfer.insert_memory(self.store, r, local, note)
                self.ids["memory"][r["id"]] = local
                self.added["memory"] += 1
                inserted.append(r)
        for r in inserted:
            target = self.ids["memory"].get(r["superseded_by"]) if r["superseded_by"] else None
            if target is not None:
                transfer.link_superseded(self.store, self.ids["memory"][r["id"]], target)

    def logs(self, records: list[dict[str, Any]]) -> None:
        for r in records:
            memory_id = self.ids["memory"].get(r["memory_id"])
            if memory_id is None:
                continue  # its memory was forgotten here
            existing = transfer.log_of(self.store, memory_id)
            if existing is not None:
                self.ids["log"][r["id"]] = existing
                self.here["log"] += 1
                continue
            local = self.fresh("log") if transfer.id_taken(self.store, "log", r["id"]) else r["id"]
            transfer.insert_log(self.store, r, local, memory_id)
            self.ids["log"][r["id"]] = local
            self.added["log"] += 1

    def histories(self, records: list[dict[str, Any]]) -> None:
        """Map the ids of memories and log rows known only from their events (forgotten
        in the exported store), before anything refers to them."""
        for r in records:
            entity_id = str(r["entity_id"])
            if r["entity"] in self.ids and entity_id.isdigit():
                exported = int(entity_id)
                if exported not in self.ids[r["entity"]]:
                    found = transfer.entity_of_event(self.store, r)
                    if found is not None and found.isdigit():
                        self.ids[r["entity"]][exported] = int(found)
                    self.local(r["entity"], exported)

    def event(self, r: dict[str, Any]) -> None:
        entity_id = str(r["entity_id"])
        if r["entity"] in self.ids and entity_id.isdigit():
            entity_id = str(self.local(r["entity"], int(entity_id)))
        detail = dict(r["detail"] or {})
        for key in MEMORY_REFS:
            if isinstance(detail.get(key), int):
                detail[key] = self.local("memory", detail[key])
        if transfer.has_event(self.store, r, entity_id):
            self.here["event"] += 1
            return
        transfer.insert_event(self.store, r, entity_id, detail)
        self.added["event"] += 1

    def finish(self) -> None:
        for entity, mapping in self.ids.items():
            if mapping:
                transfer.advance_sequence(self.store, entity, max(mapping.values()))


@op("import", idempotent=True)
def import_(
    ctx: Ctx,
    paths: Annotated[list[str] | None, Param(
        "a file written by `marm export`; with --transcripts or --from, where to read "
        "(default: the agents' or the tool's own place)", argument=True)] = None,
    transcripts: Annotated[bool, Param("replay past Claude Code, Codex and Gemini CLI sessions "
                                       "through the live capture (episodes and highlights)")] = False,
    from_: Annotated[str | None, Param(
        "import another tool's memory: marm (a MARM store), claude-memory (Claude Code's auto "
        "memory), mcp-memory (the MCP memory server's graph), claude-mem, basic-memory")] = None,
    since: Annotated[str | None, Param("only what was recorded at or after this date or time")] = None,
    dry_run: Annotated[bool, Param("say what would be imported, per project; store nothing")] = False,
) -> ImportResult | Any:
    """Read a `marm export` file back into this store, keeping ids and times.

    Idempotent: importing the same file twice adds nothing. A memory whose id is taken
    here by a different memory gets a fresh id (listed as remapped), and its log entry,
    links and history follow it. Text forgotten here stays forgotten; text retracted
    here comes in retracted. Existing
    notebook entries are replaced only by newer ones; existing verdicts stand. Imported
    memories are queued for embedding and concepts; the import's own events have the
    source `import`.

    --transcripts [PATH...] backfills past agent sessions (default: ~/.claude/projects,
    ~/.codex/sessions, Gemini CLI's saved chats): each session goes to the project of
    the directory it ran in, with the times it recorded; a turn already captured is
    skipped. --from TOOL [PATH] imports another tool's memory from its own place, or
    PATH: marm (~/.marm/marm_memory.db), claude-memory (~/.claude/projects/*/memory/,
    or under $CLAUDE_CONFIG_DIR), mcp-memory ($MEMORY_FILE_PATH, else PATH is needed),
    claude-mem (~/.claude-mem/claude-mem.db), basic-memory (the projects in its
    ~/.basic-memory/config.json, else ~/basic-memory). All are
    idempotent, redact secrets, leave text retracted or forgotten here out, queue
    embedding and concepts, and print what they took and skipped per project.

    Examples:
      marm import backup.jsonl
      marm import --transcripts --since 2026-01-01 --dry-run
      marm import --from claude-memory
      marm import --from mcp-memory ~/mcp/memory.jsonl --json
      marm import --from claude-mem --dry-run
      marm import --from basic-memory ~/notes
    """
    if isinstance(paths, str):  # an in-process caller passing one file
        paths = [paths]
    if transcripts or from_:
        return _import_history(ctx, list(paths or []), transcripts, from_, since, dry_run)
    if not paths or len(paths) != 1:
        raise BadInput("give one file written by `marm export` (or --transcripts, or --from TOOL)")
    if since or dry_run:
        raise BadInput("--since and --dry-run go with --transcripts or --from")
    file = paths[0]
    path = ctx.cwd / Path(file).expanduser()
    records = _read(path)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_type.setdefault(r["type"], []).append(r)
    store = ctx.store()
    job = _Importer(store, by_type)
    with store.write(), transfer.acting_as(store, "import"):
        job.memories(by_type.get("memory", []))
        job.logs(by_type.get("log", []))
        job.histories(by_type.get("event", []))
        for kind in ("session", "notebook", "notebook_active", "concept_alias", "concept_suppression",
                     "concept_dismissal", "tombstone"):
            for r in by_type.get(kind, []):
                if kind == "tombstone" and r["memory_id"] is not None:
                    r = {**r, "memory_id": job.local("memory", r["memory_id"])}
                put = transfer.put_notebook(store, r) if kind == "notebook" else \
                    transfer.put_simple(store, kind, r)
                (job.added if put else job.here)[kind] += 1
        for r in by_type.get("event", []):
            job.event(r)
        job.finish()
    remapped = {str(a): b for a, b in job.ids["memory"].items() if a != b}
    return ImportResult(str(file), dict(job.added), dict(job.here), remapped, job.forgotten_here,
                        job.retracted_here)


def _import_history(ctx: Ctx, paths: list[str], transcripts: bool, source: str | None, since: str | None,
                    dry_run: bool) -> Any:
    """Past sessions or another tool's store (``marm.importers``, loaded only here)."""
    import importlib

    from marm.importers import SOURCES
    from marm.text import to_timestamp

    if transcripts and source:
        raise BadInput("--transcripts and --from are two imports; run them one after the other")
    start = to_timestamp(since) if since else None
    if transcripts:
        from marm.importers.transcripts import backfill

        return backfill(ctx, paths, start, dry_run)
    if source not in SOURCES:
        raise BadInput(f"--from takes {'; '.join(f'{k} ({what})' for k, (_, what) in SOURCES.items())}"
                       f", not {source!r}")
    if len(paths) > 1:
        raise BadInput(f"--from {source} reads one PATH")
    module = importlib.import_module(SOURCES[source][0])
    return module.run(ctx, paths[0] if paths else None, start, dry_run)
