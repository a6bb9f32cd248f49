"""Memory ops: log, recall, show, delete, summary, log-show."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal

from marm import recall as recall_lanes
from marm.context import Ctx
from marm.errors import BadInput, NotFound, Refused
from marm.hygiene.flags import flags_for
from marm.ops.params import AllProjects, ProjectOpt, SessionOpt
from marm.ops.registry import Param, op
from marm.ops.results import MemoryView, one_line
from marm.recall import dates
from marm.scope import display
from marm.store import events, logs, memories, notebook, review, sessions
from marm.store.memories import Filter
from marm.store.records import LogEntry, Memory
from marm.text import check_content, classify, clean, clean_name, content_hash, to_timestamp

_LOG_FORM = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})-([A-Za-z0-9_.]+)-\s*(.+)$", re.DOTALL)

Detail = Literal[1, 2, 3]
Mode = Literal["auto", "exact", "lexical", "hybrid", "semantic"]



@dataclass(frozen=True, slots=True)
class LogResult:
    id: int
    created: bool                  # False when the same text was already stored here
    kind: str
    project: str | None
    session: str | None
    log_id: int | None
    redacted: dict[str, int] = field(default_factory=dict)
    private_spans_dropped: int = 0
    content: str = ""

    def text(self) -> str:
        what = "stored" if self.created else "already stored"
        lines = [f"{what} memory #{self.id} ({self.kind}) in {display(self.project)}"]
        if self.log_id:
            lines[0] += f", log entry {self.log_id}"
        if self.redacted:
            lines.append("redacted: " + ", ".join(f"{k} x{n}" for k, n in self.redacted.items()))
        if self.private_spans_dropped:
            lines.append(f"dropped {self.private_spans_dropped} <private> span(s)")
        return "\n".join(lines)


def write_memory(
    ctx: Ctx,
    text: str,
    *,
    session: str | None = None,
    project: str | None = None,
    kind: str | None = None,
    valid_from: str | None = None,
    valid_to: str | None = None,
    metadata: dict | None = None,
    force: bool = False,
    recorded_at: str | None = None,
) -> LogResult:
    """The one write path every surface takes (CLI, MCP, hooks, benchmarks).

    Cleans the text (``<private>`` spans, secrets), parses the log form, and writes the
    memory, its log row, its outbox tasks and its events in one transaction. The same
    text already active in the same project is not stored twice. Text retracted in the
    same scope (a tombstone) is refused with ``Refused`` unless ``force``; a forced
    write says so in its event. ``recorded_at`` (an importer's) keeps the time the source
    recorded the text instead of now.
    """
    check_content(text)
    cleaned = clean(text)
    body = cleaned.text.strip()
    if not body:
        raise BadInput("nothing is left to store once <private> spans and secrets are removed")
    project_key = ctx.project(project)
    session_name = ctx.session(session)
    parsed = _LOG_FORM.match(body)
    start = to_timestamp(valid_from) if valid_from else _entry_date(parsed)
    end = to_timestamp(valid_to) if valid_to else None
    if start and end and end <= start:
        raise BadInput("--valid-to must be later than --valid-from")
    guessed = classify(parsed.group(3) if parsed else body)
    memory_kind = kind or (guessed if guessed != "note" or not parsed else "log")
    digest = content_hash(body)
    store = ctx.store()
    with store.write():
        grave = review.tombstone(store, digest, project_key)
        if grave is not None and not force:
            raise Refused(
                f"this text was retracted in {display(project_key)} (memory #{grave.memory_id}"
                + (f": {grave.reason}" if grave.reason else "")
                + "); pass --force to store it anyway"
            )
        existing = memories.find_by_hash(store, digest, project_key)
        if existing is not None and existing.status in memories.VISIBLE_STATUSES:
            log_row = logs.for_memory(store, existing.id)
            return LogResult(
                existing.id, False, existing.kind, existing.project, existing.session,
                log_row.id if log_row else None, cleaned.redacted, cleaned.private_spans, existing.content,
            )
        sessions.touch(store, session_name, project_key)
        memory = memories.insert(
            store, content=body, content_hash=digest, kind=memory_kind, session=session_name,
            project=project_key, valid_from=start, valid_to=end, recorded_at=recorded_at,
            named_dates=dates.named_stamps(body, start or recorded_at),
            metadata={**_clean_metadata(metadata or {}), **({"redacted": cleaned.redacted} if cleaned.redacted else {})},
            detail={"forced": True, "tombstone_of": grave.memory_id} if grave is not None else None,
        )
        log_id = None
        if parsed:
            entry = logs.insert(store, memory, parsed.group(1), parsed.group(2), parsed.group(3).strip())
            log_id = entry.id
    return LogResult(
        memory.id, True, memory.kind, memory.project, memory.session, log_id,
        cleaned.redacted, cleaned.private_spans, memory.content,
    )


def _entry_date(parsed: re.Match[str] | None) -> str | None:
    """When a dated log entry (``2026-11-30-topic-...``) became true: its date. A date
    that is no date (``2026-13-45``) leaves the validity open rather than refuse the text
    (a hook's capture must not fail on it)."""
    if parsed is None:
        return None
    try:
        return to_timestamp(parsed.group(1))
    except BadInput:
        return None


def _clean_metadata(value: Any) -> Any:
    """Metadata with every string in it redacted: a hook's captured command, error or
    file list is stored beside the text and may hold a secret as well."""
    if isinstance(value, str):
        return clean_name(value)
    if isinstance(value, dict):
        return {k: _clean_metadata(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_metadata(v) for v in value]
    return value


@op("log", mcp="marm_log_entry")
def log(
    ctx: Ctx,
    text: Annotated[str, Param("the entry: `YYYY-MM-DD-topic-summary` for a log entry, or any "
                               "text", argument=True, stdin=True)],
    session: SessionOpt = None,
    project: ProjectOpt = None,
    kind: Annotated[str | None, Param("decision, fix, note, ... (default: guessed from the text)",
                                      short="-k")] = None,
    valid_from: Annotated[str | None, Param("when this became true (YYYY-MM-DD or ISO time)")] = None,
    valid_to: Annotated[str | None, Param("when this stopped being true")] = None,
    force: Annotated[bool, Param("store it even though the same text was retracted here "
                                 "(the event records that it was forced)")] = False,
) -> LogResult:
    """Store a memory (a decision, fix, note, or a dated log entry).

    Secrets are redacted and <private>...</private> spans dropped before anything is
    stored. The memory is found by exact text at once and by meaning once embedded.
    A dated entry (`2026-11-30-auth-switched to JWT`) is valid from that date.

    CLI:
      Text retracted in this project (`marm retract`) is refused with exit code 5
      unless --force is given.
    MCP:
      Text retracted in this project (marm_retract) is refused with a tool error
      unless `force` is true.
    Examples:
      marm log "DECISION: use idempotency keys on the payment webhook"
      marm log "FIX: set MAX_RETRIES=5 for the upload client" --kind fix
      marm log "2026-11-30-auth-switched sessions to signed JWT cookies"
      marm log "NOTE: staging runs Postgres 16" --valid-from 2026-01-01 --project api
    """
    return write_memory(
        ctx, text, session=session, project=project, kind=kind, valid_from=valid_from,
        valid_to=valid_to, force=force,
    )


@dataclass(frozen=True, slots=True)
class RecallResult:
    query: str
    mode: str
    project: str | None
    results: list[MemoryView]
    note: str | None = None
    graph_context: Any = None      # with --graph: the concept graph around the results (GraphContext)

    def text(self) -> str:
        if not self.results:
            return f"no memories match ({self.mode}) in {display(self.project)}"
        lines = [r.line() for r in self.results]
        if self.graph_context and self.graph_context.relations:
            lines.append("graph: " + "; ".join(r.line() for r in self.graph_context.relations[:6]))
        if self.note:
            lines.append(f"({self.note})")
        return "\n".join(lines)


def memory_filter(
    ctx: Ctx,
    *,
    project: str | None,
    all_projects: bool,
    session: str | None = None,
    kind: str | None = None,
    as_of: str | None = None,
    include: str | None = None,
) -> Filter:
    """The read filter of an op's scope flags. ``include`` widens the statuses
    (``retracted,superseded``); ``as_of`` also admits memories superseded later, since
    they were valid at that time."""
    statuses = list(memories.VISIBLE_STATUSES)
    for word in (include or "").replace(" ", "").split(","):
        if word and word not in INCLUDABLE:
            raise BadInput(f"--include takes {', '.join(INCLUDABLE)} (comma-separated), not {word!r}")
        if word and word not in statuses:
            statuses.append(word)
    if as_of and "superseded" not in statuses:
        statuses.append("superseded")
    return Filter(
        project=None if all_projects else ctx.project(project),
        all_projects=all_projects,
        session=session,
        kind=kind,
        statuses=tuple(statuses),
        as_of=to_timestamp(as_of) if as_of else None,
    )


#: Statuses a read leaves out unless asked for with ``--include``.
INCLUDABLE = ("retracted", "superseded")


def recent_memories(ctx: Ctx, project: str | None, limit: int, kinds: tuple[str, ...] | None = None,
                    statuses: tuple[str, ...] | None = None) -> list[Memory]:
    """The newest memories of ``project`` (plus global ones), for a briefing."""
    flt = Filter(project=project) if statuses is None else Filter(project=project, statuses=statuses)
    return memories.recent(ctx.store(), flt, limit=limit, kinds=kinds)


def find(ctx: Ctx, query: str, project: str | None, limit: int, mode: str,
         embed_backlog: bool = True) -> recall_lanes.Outcome:
    """One recall lane's hits in ``project`` (plus global memories), as records with scores
    (``embed_backlog=False``: no embedding of pending memories first, for a hook)."""
    return recall_lanes.run(ctx.store(), query, Filter(project=project), limit, mode, embed_backlog=embed_backlog)


def prepare_meaning(ctx: Ctx) -> None:
    """Start loading the embedding model on a thread for a recall by meaning to come (a
    prompt hook journals the prompt meanwhile); the recall waits for it."""
    from marm.embed.drain import start_encoder  # start-up cost: only a recall by meaning needs it

    start_encoder(ctx.store(), ctx.home, dict(ctx.env))


@op("recall", mcp="marm_smart_recall", read_only=True, idempotent=True)
def recall(
    ctx: Ctx,
    query: Annotated[str, Param("what to look for: words, a question, or exact text "
                                "(a key, path, --flag or code is matched literally)", argument=True,
                                mcp_help="what to look for: words, a question, or exact text "
                                         "(a key, path, command-line flag or code is matched literally)")],
    limit: Annotated[int, Param("most results to return", short="-n")] = 5,
    mode: Annotated[Mode, Param("lane: auto picks exact for syntax-shaped queries, else hybrid",
                                short="-m")] = "auto",
    session: Annotated[str | None, Param("only this session", short="-s")] = None,
    project: ProjectOpt = None,
    all_projects: AllProjects = False,
    kind: Annotated[str | None, Param("only memories of this kind", short="-k")] = None,
    as_of: Annotated[str | None, Param("what was valid at this date/time (YYYY-MM-DD or ISO): "
                                       "includes memories superseded since")] = None,
    include: Annotated[str | None, Param("also return these statuses: retracted, superseded "
                                         "(comma-separated)")] = None,
    detail: Annotated[Detail, Param("content length: 1 short, 2 medium, 3 full")] = 2,
    graph: Annotated[bool, Param("attach the concept graph around the results (read-only)")] = False,
) -> RecallResult:
    """Find memories by exact text or by meaning.

    Defaults to the current project plus global memories, across sessions; retracted
    and superseded memories are left out, doubted ones come back marked.

    CLI:
      --include widens to retracted or superseded memories; --as-of answers with what
      was valid at that time.
    MCP:
      `include` widens to retracted or superseded memories; `as_of` answers with what
      was valid at that time.
    Examples:
      marm recall "why did uploads fail"
      marm recall MAX_RETRIES
      marm recall "payment webhook" --limit 3 --detail 3
      marm recall "session cookies" --as-of 2026-06-01 --all-projects
    """
    if limit < 1:
        raise BadInput("--limit must be at least 1")
    flt = memory_filter(ctx, project=project, all_projects=all_projects, session=session,
                        kind=kind, as_of=as_of, include=include)
    outcome = recall_lanes.run(ctx.store(), query, flt, limit, mode)
    flagged = flags_for(ctx.store(), [h.memory.id for h in outcome.hits])
    views = [replace(MemoryView.of(h.memory, detail, h.score, h.retrieval_mode), flags=flagged.get(h.memory.id, []))
             for h in outcome.hits]
    context = None
    if graph:
        from marm.concepts import walk  # start-up cost: only --graph reads the concept graph

        context = walk.graph_context(ctx.home, ctx.store(), [v.id for v in views], flt.project, all_projects)
    return RecallResult(query, outcome.mode, flt.project, views, outcome.note, context)


@dataclass(frozen=True, slots=True)
class ShowResult:
    memory: MemoryView
    log_id: int | None
    events: int

    def text(self) -> str:
        m = self.memory
        head = [
            f"memory #{m.id}  kind={m.kind}  status={m.status}",
            f"project={display(m.project)}  session={m.session}  source={m.source}"
            f"  platform={m.platform or '-'}",
            f"recorded_at={m.recorded_at}  valid_from={m.valid_from or '-'}  valid_to={m.valid_to or '-'}",
        ]
        if m.status_reason:
            head.append(f"reason: {m.status_reason}")
        if m.superseded_by:
            head.append(f"superseded by #{m.superseded_by}")
        return "\n".join(head) + "\n\n" + m.content


@op("show", mcp="marm_show", read_only=True, idempotent=True)
def show(ctx: Ctx, id: Annotated[int, Param("memory id", argument=True)]) -> ShowResult:
    """Show one memory in full, with its provenance.

    Examples:
      marm show 42
      marm show 42 --json
    """
    store = ctx.store()
    memory = memories.get(store, id)
    if memory is None:
        raise NotFound(f"no memory with id {id}")
    log_row = logs.for_memory(store, id)
    return ShowResult(MemoryView.of(memory), log_row.id if log_row else None,
                      len(events.for_entity(store, "memory", id)))


@dataclass(frozen=True, slots=True)
class DeleteResult:
    type: str
    target: str
    deleted: bool
    memories_deleted: int

    def text(self) -> str:
        extra = f" ({self.memories_deleted} memories)" if self.type == "session" else ""
        return f"deleted {self.type} {self.target}{extra}"


def _int_id(target: str, what: str) -> int:
    try:
        return int(target)
    except ValueError:
        raise BadInput(f"{what} ids are numbers, not {target!r}") from None


@op("delete", mcp="marm_delete", destructive=True)
def delete(
    ctx: Ctx,
    type: Annotated[Literal["memory", "log", "notebook", "session"],
                    Param("what to delete", argument=True)],
    target: Annotated[str, Param("its id (memory, log) or name (notebook, session)", argument=True)],
    reason: Annotated[str | None, Param("why, kept in the audit trail")] = None,
    yes: Annotated[bool, Param("confirm deleting a whole session with its memories")] = False,
) -> DeleteResult:
    """Delete a memory, a log entry (with its memory), a notebook entry, or a session.

    Every deletion is recorded in the audit trail.

    Examples:
      marm delete memory 42 --reason "duplicate of #40"
      marm delete notebook style-guide
      marm delete session spike-2026 --yes
    """
    store = ctx.store()
    if type == "memory":
        memory_id = _int_id(target, "memory")
        if memories.delete(store, memory_id, reason) is None:
            raise NotFound(f"no memory with id {memory_id}")
        return DeleteResult(type, target, True, 1)
    if type == "log":
        log_id = _int_id(target, "log")
        entry = logs.get(store, log_id)
        if entry is None:
            raise NotFound(f"no log entry with id {log_id}")
        memories.delete(store, entry.memory_id, reason, action="memory.delete")
        return DeleteResult(type, target, True, 1)
    if type == "notebook":
        if notebook.delete(store, target) is None:
            raise NotFound(f"no notebook entry named {target!r}")
        return DeleteResult(type, target, True, 0)
    found = sessions.get(store, target)
    if found is None:
        raise NotFound(f"no session named {target!r}")
    if not yes:
        raise BadInput(
            f"deleting session {target!r} deletes its {found.memories} memories; pass --yes to confirm"
        )
    return DeleteResult(type, target, True, sessions.delete(store, target))


@dataclass(frozen=True, slots=True)
class SummaryLine:
    id: int
    recorded_at: str
    text: str
    valid_from: str | None = None

    def date(self) -> str:
        """The day it was recorded, and the day it became true when that is another day."""
        day = self.recorded_at[:10]
        if self.valid_from and self.valid_from[:10] != day:
            return f"{day} (valid from {self.valid_from[:10]})"
        return day


@dataclass(frozen=True, slots=True)
class SummaryGroup:
    kind: str
    count: int
    items: list[SummaryLine]


@dataclass(frozen=True, slots=True)
class SummaryResult:
    project: str | None
    session: str | None
    total: int
    groups: list[SummaryGroup]

    def text(self) -> str:
        where = display(self.project) + (f", session {self.session}" if self.session else "")
        if not self.groups:
            return f"nothing stored yet in {where}"
        out = [f"{self.total} memories in {where}"]
        for g in self.groups:
            out.append(f"\n{g.kind} ({g.count})")
            out.extend(f"  #{i.id} {i.date()} {i.text}" for i in g.items)
        return "\n".join(out)


#: Order of kinds in a summary: what a returning reader needs first.
_SUMMARY_ORDER = ("decision", "fix", "todo", "plan", "lesson", "config", "research", "log", "note")


@op("summary", mcp="marm_summary", read_only=True, idempotent=True)
def summary(
    ctx: Ctx,
    session: Annotated[str | None, Param("only this session", short="-s")] = None,
    project: ProjectOpt = None,
    all_projects: AllProjects = False,
    per_kind: Annotated[int, Param("most memories listed per kind")] = 10,
) -> SummaryResult:
    """A deterministic digest of what is stored: grouped by kind, newest first.

    Examples:
      marm summary
      marm summary --all-projects --per-kind 3
    """
    flt = memory_filter(ctx, project=project, all_projects=all_projects, session=session)
    rows = memories.recent(ctx.store(), flt, limit=100_000)
    by_kind: dict[str, list] = {}
    for m in rows:
        by_kind.setdefault(m.kind, []).append(m)
    order = sorted(by_kind, key=lambda k: (_SUMMARY_ORDER.index(k) if k in _SUMMARY_ORDER else 99, k))
    groups = [
        SummaryGroup(k, len(by_kind[k]),
                     [SummaryLine(m.id, m.recorded_at, one_line(m.content, 120), m.valid_from)
                      for m in by_kind[k][:per_kind]])
        for k in order
    ]
    return SummaryResult(flt.project, session, len(rows), groups)


@dataclass(frozen=True, slots=True)
class LogShowResult:
    project: str | None
    session: str | None
    entries: list[LogEntry]

    def text(self) -> str:
        if not self.entries:
            return f"no log entries in {display(self.project)}"
        return "\n".join(
            f"[{e.id}] {e.entry_date or e.recorded_at[:10]} {e.topic or '-'}: {one_line(e.summary)}"
            f"  (memory #{e.memory_id}, {e.session})"
            for e in self.entries
        )


@op("log-show", mcp="marm_log_show", read_only=True, idempotent=True)
def log_show(
    ctx: Ctx,
    session: Annotated[str | None, Param("only this session", short="-s")] = None,
    project: ProjectOpt = None,
    all_projects: AllProjects = False,
    limit: Annotated[int, Param("most entries", short="-n")] = 50,
) -> LogShowResult:
    """List log entries, newest first (entries of retracted memories are left out).

    Examples:
      marm log-show
      marm log-show --limit 10 --session release
    """
    project_key = None if all_projects else ctx.project(project)
    rows = logs.listing(ctx.store(), project_key, all_projects, session, limit)
    return LogShowResult(project_key, session, rows)
