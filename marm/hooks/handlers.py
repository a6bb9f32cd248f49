"""One handler per event: ``handler(ctx, event) -> text to inject, or None``.

The ``Ctx`` is the hook's own (source ``hook:<event>``, the agent as platform, the
payload's ``cwd``), so every write is tagged and scoped like any other marm write.
Capture (episodes, highlights, fixes) is ``ops.capture``'s; it writes through
``write_memory`` (cleaning, ``<private>``, per-project de-duplication inside its write
transaction). Slow work (embedding, concepts, re-indexing) is only queued, and
session-end hands it to a detached drain.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from marm.context import Ctx
from marm.errors import MarmError
from marm.hooks.event import HookEvent
from marm.store.records import Memory

#: Memories considered for a prompt before the relevance gate.
RECALL_CANDIDATES = 10
#: Memories injected for a prompt at most: the best-ranked four once the gate opens.
INJECT_ITEMS = 4
#: The briefing: recent memories of each section considered, how many of each shown
#: (those capture was surest of), the longest line and the whole block.
BRIEF_POOL = 40
BRIEF_DECISIONS = 4
BRIEF_FIXES = 3
BRIEF_DOUBTED = 3
BRIEF_EPISODES = 3
BRIEF_ITEM = 180
BRIEF_CHARS = 1500


def _on(ctx: Ctx, key: str) -> bool:
    return ctx.setting(key) == "on"


def _max_chars(ctx: Ctx) -> int:
    return int(ctx.number("inject.max_chars", lenient=True))


def session_start(ctx: Ctx, ev: HookEvent) -> str | None:
    """A short briefing: active decisions and conventions, open problems, recent fixes,
    the active notebook."""
    from marm.hooks import inject
    from marm.ops.hygiene import briefing_marks
    from marm.ops.memory import recent_memories
    from marm.ops.notebook import active_entries
    from marm.ops.results import one_line
    from marm.scope import display

    if not _on(ctx, "inject"):
        return None
    project = ctx.project()

    chosen = recent_memories(ctx, project, BRIEF_POOL, kinds=("decision", "convention"))
    fixed = recent_memories(ctx, project, BRIEF_POOL, kinds=("fix", "lesson"))
    doubted = recent_memories(ctx, project, BRIEF_DOUBTED, statuses=("doubted",))
    # One look at the review queue: what a newer memory may reverse is not briefed as current.
    current, marks = briefing_marks(ctx, [*chosen, *fixed, *doubted])
    standing = {m.id for m in current}
    decisions = inject.briefed([m for m in chosen if m.id in standing], BRIEF_DECISIONS)
    fixes = inject.briefed([m for m in fixed if m.id in standing], BRIEF_FIXES)
    episodes = [] if decisions or fixes else recent_memories(ctx, project, BRIEF_EPISODES, kinds=("episode",))
    if episodes:
        marks.update(briefing_marks(ctx, episodes)[1])

    def item(m: Memory) -> str:
        return inject.item(m, limit=BRIEF_ITEM) + marks.get(m.id, "")
    sessions = dict.fromkeys(s for s in (ev.session_id, ctx.session()) if s)
    active = active_entries(ctx, sessions)
    return inject.fence(
        ev.agent,
        f"marm briefing for {display(project)}. Ids work with `marm show ID`; "
        "`marm recall QUERY` finds more.",
        [
            ("Active notebook entries:", [f"{e.name}: {one_line(e.content, 300)}" for e in active.values()]),
            ("Decisions and conventions:", [item(m) for m in decisions]),
            ("Open problems (doubted; `marm restore ID` or `marm retract ID`):", [item(m) for m in doubted]),
            ("Recent fixes and lessons:", [item(m) for m in fixes]),
            ("Recent work:", [item(m) for m in episodes]),
        ],
        min(BRIEF_CHARS, _max_chars(ctx)),
    )


def prompt(ctx: Ctx, ev: HookEvent) -> str | None:
    """Journal the prompt; inject the few stored memories relevant to it that the agent
    does not already have (nothing from this session since its last compaction)."""
    from marm.hooks import inject
    from marm.ops import capture
    from marm.ops.memory import find, prepare_meaning

    text = ev.prompt
    if not text:
        return None
    injecting = _on(ctx, "inject") and not inject.is_trivial(text)
    lane = ctx.setting("inject.recall")
    single = not any(c.isspace() for c in text.strip())
    # The embedding model reads English; other languages are matched on their words.
    mode = "exact" if single else ("lexical" if lane == "lexical" or not capture.reads_as_english(text) else "hybrid")
    if injecting and mode == "hybrid":
        prepare_meaning(ctx)  # the model loads on a thread while the prompt is journalled
    if ev.session_id and _on(ctx, "capture"):
        capture.note_prompt(ctx, ev.session_id, text, ev.transcript_path, ev.agent)
    if not injecting:
        return None
    query = text if single else " ".join(text.split()[:200])
    project = ctx.project()
    try:
        outcome = find(ctx, query, project, RECALL_CANDIDATES, mode, embed_backlog=False)
    except MarmError:
        if mode != "hybrid":
            raise
        outcome = find(ctx, query, project, RECALL_CANDIDATES, "lexical")
    hits = outcome.hits
    if ev.session_id:
        since = capture.in_context_since(ctx, ev.session_id)
        hits = [h for h in hits if h.memory.session != ev.session_id or h.memory.recorded_at <= since]
    # A question asks for what is known, and a memory that half answers it helps; a task
    # asks for work, where a memory only on its topic distracts: the gate is lower for asking.
    score, meaning = (("inject.ask_min_score", "inject.ask_min_meaning") if inject.asks(text)
                      else ("inject.min_score", "inject.min_meaning"))
    hits = inject.shown(hits, text, ctx.number(score, lenient=True), ctx.number(meaning, lenient=True),
                        INJECT_ITEMS)
    return inject.fence(
        ev.agent,
        "Memories that may bear on this prompt (check them; `marm show ID` for the full text):",
        [("", [inject.item(h.memory, query=text) for h in hits])],
        _max_chars(ctx),
    )


def post_tool(ctx: Ctx, ev: HookEvent) -> None:
    """Mark the repository of every edited file dirty for the code graph; journal the
    edit or the failure for the turn's episode (a pass after a failure is a fix)."""
    from marm.ops import capture
    from marm.ops.code import mark_dirty

    cwd = Path(ev.cwd or ".")
    files = capture.edited_files(ev.tool_name, ev.tool_input)
    repos = {}
    for name in files:
        path = cwd / Path(name).expanduser()
        top = _work_tree(path.parent)
        if top is not None:
            repos[str(top)] = ctx.project(str(top))
    for root, project in repos.items():
        mark_dirty(ctx, root, project)
    if ev.session_id and _on(ctx, "capture"):
        response = {"error": ev.error} if ev.error else ev.tool_response
        capture.note_tool(ctx, ev.session_id, ev.tool_name, ev.tool_input, response, files, ev.agent)


def _work_tree(directory: Path) -> Path | None:
    """The top of the work tree containing ``directory`` (a worktree is its own tree:
    that is what the code graph indexes), or None outside git."""
    try:
        here = directory.resolve()
    except OSError:
        return None
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def stop(ctx: Ctx, ev: HookEvent) -> None:
    """The turn becomes an episode and its highlights (all its assistant messages, from
    the transcript; the final one from the payload when the agent sends it)."""
    from marm.ops import capture

    if ev.session_id and _on(ctx, "capture"):
        capture.capture_turn(ctx, ev.session_id, ev.transcript_path, ev.assistant_message, ev.agent,
                             turn_id=ev.turn_id)


def pre_compact(ctx: Ctx, ev: HookEvent) -> None:
    """Before the agent summarises its context away: the open turn's highlights so far,
    and the mark after which this session's memories may be injected again."""
    from marm.ops import capture

    if ev.session_id and _on(ctx, "capture"):
        capture.note_compact(ctx, ev.session_id, ev.transcript_path, ev.agent)


def session_end(ctx: Ctx, ev: HookEvent) -> None:
    """Capture a turn left open, then hand queued work (embeddings, concepts, dirty
    repositories) to a detached drain, and start a detached sync if a project is shared."""
    from marm.ops import capture, sync
    from marm.ops.background import hand_off

    if ev.session_id and _on(ctx, "capture"):
        capture.close_session(ctx, ev.session_id, ev.transcript_path, ev.agent)
    hand_off(ctx)
    if sync.wants_sync(ctx):  # team memory: a detached `marm sync` when a project is shared
        sync.start_detached(ctx)


HANDLERS: dict[str, Callable[[Ctx, HookEvent], str | None]] = {
    "session-start": session_start,
    "prompt": prompt,
    "post-tool": post_tool,
    "stop": stop,
    "pre-compact": pre_compact,
    "session-end": session_end,
}
