"""One handler per event: ``handler(ctx, event) -> text to inject, or None``.

The ``Ctx`` is the hook's own (source ``hook:<event>``, the agent as platform, the
payload's ``cwd``), so every write is tagged and scoped like any other marm write.
Captures go through ``write_memory`` (cleaning, ``<private>``, per-project de-duplication
inside its write transaction); slow work (embedding, concepts, re-indexing) is only
queued, and session-end hands it to a detached drain.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from marm.context import Ctx
from marm.errors import MarmError
from marm.hooks.event import HookEvent

#: Memories considered for a prompt before the relevance gate.
RECALL_CANDIDATES = 8
#: Memories injected for a prompt at most.
INJECT_ITEMS = 5
BRIEF_RECENT = 5
BRIEF_DOUBTED = 3


def _on(ctx: Ctx, key: str) -> bool:
    return ctx.setting(key) == "on"


def _number(ctx: Ctx, key: str) -> float:
    """A numeric setting; an unreadable saved value falls back to the default."""
    from marm.config import SETTINGS

    try:
        return float(ctx.setting(key))
    except ValueError:
        return float(SETTINGS[key].default)


def _max_chars(ctx: Ctx) -> int:
    return max(200, int(_number(ctx, "inject.max_chars")))


def session_start(ctx: Ctx, ev: HookEvent) -> str | None:
    """A short briefing: latest decisions and fixes, active notebook, what needs review."""
    from marm.hooks import inject
    from marm.ops.memory import recent_memories
    from marm.ops.notebook import active_entries
    from marm.ops.results import one_line
    from marm.scope import display

    if not _on(ctx, "inject"):
        return None
    project = ctx.project()
    recent = recent_memories(ctx, project, BRIEF_RECENT, kinds=("decision", "fix"))
    doubted = recent_memories(ctx, project, BRIEF_DOUBTED, statuses=("doubted",))
    sessions = dict.fromkeys(s for s in (ev.session_id, ctx.session()) if s)
    active = active_entries(ctx, sessions)
    return inject.fence(
        f"marm briefing for {display(project)}. Ids work with `marm show ID`; "
        "`marm recall QUERY` finds more.",
        [
            ("Latest decisions and fixes:", [inject.item(m) for m in recent]),
            ("Active notebook entries:", [f"{e.name}: {one_line(e.content, 300)}"
                                          for e in active.values()]),
            ("Doubted, needs review (`marm restore ID` or `marm retract ID`):",
             [inject.item(m) for m in doubted]),
        ],
        _max_chars(ctx),
    )


def prompt(ctx: Ctx, ev: HookEvent) -> str | None:
    """The few stored memories relevant to the prompt, with ids; nothing otherwise."""
    from marm.hooks import inject
    from marm.ops.memory import find

    text = ev.prompt
    if not text or not _on(ctx, "inject") or inject.is_trivial(text):
        return None
    lane = ctx.setting("inject.recall")
    single = not any(c.isspace() for c in text.strip())
    mode = "exact" if single else ("lexical" if lane == "lexical" else "hybrid")
    query = text if single else " ".join(text.split()[:200])
    project = ctx.project()
    try:
        outcome = find(ctx, query, project, RECALL_CANDIDATES, mode)
    except MarmError:
        if mode != "hybrid":
            raise
        outcome = find(ctx, query, project, RECALL_CANDIDATES, "lexical")
    hits = inject.relevant(outcome.hits, text, _number(ctx, "inject.min_score"))
    return inject.fence(
        "Memories that may bear on this prompt (check them; `marm show ID` for the full text):",
        [("", [inject.item(h.memory) for h in hits[:INJECT_ITEMS]])],
        _max_chars(ctx),
    )


def post_tool(ctx: Ctx, ev: HookEvent) -> None:
    """Mark the repository of every edited file dirty for the code graph, and keep the
    error line of a failed shell command."""
    from marm.hooks import capture
    from marm.ops.code import mark_dirty

    cwd = Path(ev.cwd or ".")
    repos = {}
    for name in capture.touched_files(ev.tool_name, ev.tool_input):
        path = cwd / Path(name).expanduser()
        top = _work_tree(path.parent)
        if top is not None:
            repos[str(top)] = ctx.project(str(top))
    for root, project in repos.items():
        mark_dirty(ctx, root, project)
    failed = capture.failed_command(ev.tool_name, ev.tool_input, ev.tool_response)
    if failed and _on(ctx, "capture"):
        from marm.ops.memory import write_memory

        command, line = failed
        write_memory(ctx, f"Command failed: {command}\n{line}", kind="capture",
                     session=ev.session_id, metadata={"tool": ev.tool_name, "agent": ev.agent})


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


def _capture(ctx: Ctx, ev: HookEvent, texts: list[str]) -> None:
    from marm.hooks import capture
    from marm.ops.memory import write_memory

    if not _on(ctx, "capture"):
        return
    for text in texts:
        found = capture.decided(text)
        if found is None:
            continue
        body, kind = found
        where = {"agent": ev.agent, "turn": ev.turn_id, "trigger": ev.reason}
        try:
            write_memory(ctx, body, kind=kind, session=ev.session_id,
                         metadata={k: v for k, v in where.items() if v})
        except MarmError as exc:  # refused (retracted text) or nothing left after cleaning
            print(f"marm hook: capture skipped: {exc.message}", file=sys.stderr)


def stop(ctx: Ctx, ev: HookEvent) -> None:
    """Keep what the turn decided or fixed, from the turn's last assistant message (or,
    when the agent does not send it, the transcript's last one)."""
    from marm.hooks import capture

    if ev.assistant_message:
        texts = [ev.assistant_message]
    elif ev.transcript_path:
        texts = capture.transcript_messages(ev.transcript_path, limit=1)
    else:
        texts = []
    _capture(ctx, ev, texts)


def pre_compact(ctx: Ctx, ev: HookEvent) -> None:
    """Before the agent summarises its context away: capture what recent turns decided
    or fixed (turns the stop hook already kept are the same text, so not stored twice)."""
    from marm.hooks import capture

    if ev.transcript_path:
        _capture(ctx, ev, capture.transcript_messages(ev.transcript_path))


def session_end(ctx: Ctx, ev: HookEvent) -> None:
    """Hand queued work (embeddings, concepts, dirty repositories) to a detached drain."""
    from marm.ops.background import hand_off

    hand_off(ctx)


HANDLERS: dict[str, Callable[[Ctx, HookEvent], str | None]] = {
    "session-start": session_start,
    "prompt": prompt,
    "post-tool": post_tool,
    "stop": stop,
    "pre-compact": pre_compact,
    "session-end": session_end,
}
