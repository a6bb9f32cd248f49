"""Capture from live sessions: what the hooks see becomes episodes, highlights and fixes.

The hooks are separate processes, so each notes what it sees in the turn journal
(``store.journal``) and the hook that ends a turn reads it back:

- prompt: the prompt is journaled; a turn still open from before (no Stop came: the
  user interrupted it) is captured first, as interrupted.
- post-tool: an edited file, or a failed command with its error line, is journaled; a
  command that passes after failing earlier in the session becomes one ``fix`` memory.
- stop: the turn becomes an ``episode`` (prompt, conclusion, files, failures) plus the
  ``highlights`` of all its assistant messages (read from the transcript).
- pre-compact: the open turn's highlights so far, and a compaction mark (what the agent
  had in context before it is no longer there, so it may be injected again).
- session-end: the open turn, as interrupted.

Everything goes through ``write_memory`` (cleaning, redaction, per-project
de-duplication), with the hook's source, agent and session. A turn is written in one
transaction with its journal marker, so a turn is captured once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from marm.capture import episode, highlights, tools
from marm.capture.sentences import is_english
from marm.capture.transcript import Turn, last_turn
from marm.errors import MarmError, Refused
from marm.context import Ctx
from marm.ops.memory import write_memory
from marm.store import journal
from marm.store.db import now

log = logging.getLogger("marm.capture")


@dataclass(frozen=True, slots=True)
class Written:
    """What became of each memory a turn yields: ``outcomes`` counts ``added``,
    ``already here`` (the same text is stored in this project) and ``retracted here`` (the
    text was retracted here) or ``refused`` (nothing left once cleaned, too long)."""

    episode: int | None = None     # the new episode's id (None: none, or stored already)
    highlights: int = 0            # new highlights
    outcomes: dict[str, int] = field(default_factory=dict)


def _put(ctx: Ctx, text: str, kind: str, session: str, metadata: dict[str, Any],
         recorded_at: str | None = None) -> tuple[int | None, str]:
    """One captured memory and what became of it; a refused or empty text is skipped,
    never fatal."""
    try:
        result = write_memory(ctx, text, kind=kind, session=session, recorded_at=recorded_at,
                              metadata={k: v for k, v in metadata.items() if v})
    except Refused as exc:
        log.info("capture skipped: %s", exc.message)
        return None, "retracted here"
    except MarmError as exc:
        log.info("capture skipped: %s", exc.message)
        return None, "refused"
    return (result.id, "added") if result.created else (None, "already here")


def write_turn(ctx: Ctx, session: str, record: episode.TurnRecord, agent: str, *, turn_id: str | None = None,
               episode_too: bool = True, recorded_at: str | None = None,
               extra: dict[str, Any] | None = None) -> Written:
    """Write one turn's highlights and episode: the step the live Stop hook and a
    transcript backfill share, so both store the same texts (and a turn captured live
    is found again by content hash instead of stored twice). No journal is read or
    written here. ``recorded_at`` back-dates the memories to when the turn happened;
    ``extra`` adds to their metadata."""
    where = {"agent": agent, "turn": turn_id, **(extra or {})}
    outcomes: dict[str, int] = {}
    with ctx.store().write():
        kept = 0
        for h in highlights.highlights(record.messages):
            memory_id, outcome = _put(ctx, h.text, h.kind, session, {
                **where, "captured": "highlight", "label": h.label, "score": round(h.score, 3)}, recorded_at)
            kept += memory_id is not None
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        episode_id = None
        if episode_too:
            body = episode.text(record, _root(ctx))
            if body:
                episode_id, outcome = _put(ctx, body, "episode", session, {
                    **where, "captured": "episode", "interrupted": record.interrupted}, recorded_at)
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return Written(episode_id, kept, outcomes)


def record_of(turn: Turn) -> episode.TurnRecord:
    """What an episode is made of, from a transcript's turn alone (no journal)."""
    return episode.TurnRecord(prompt=turn.prompt, conclusion=turn.messages[-1] if turn.messages else "",
                              messages=list(turn.messages), files=list(turn.files),
                              failures=list(turn.failures), interrupted=turn.interrupted)


def edited_files(tool_name: str | None, tool_input: dict[str, Any]) -> list[str]:
    """The files a tool call changed (the hooks mark their repositories dirty)."""
    return tools.touched_files(tool_name, tool_input)


def reads_as_english(text: str) -> bool:
    """Whether the embedding model (trained on English) can read ``text``."""
    return is_english(text)


def _root(ctx: Ctx) -> str | None:
    return str(ctx.cwd) if ctx.cwd else None


def note_prompt(ctx: Ctx, session: str, prompt: str, transcript: str | None, agent: str) -> None:
    """Journal a new prompt, first capturing a turn left open by an interruption."""
    head, _ = journal.open_turn(ctx.store(), session)
    if head is not None:
        capture_turn(ctx, session, transcript, None, agent, interrupted=True)
    journal.add(ctx.store(), session, "prompt", episode.without_injected(prompt)[:8000])


def note_tool(ctx: Ctx, session: str, tool_name: str | None, tool_input: dict[str, Any], response: Any,
              files: list[str], agent: str) -> int | None:
    """Journal what one tool call changed or how it failed; a pass after a failure of
    the same command becomes a ``fix`` memory (its id is returned)."""
    store = ctx.store()
    for name in files:
        journal.add(store, session, "edit", name)
    command = tools.shell_command(tool_name, tool_input)
    if command is None:
        return None
    failed = tools.failed_command(tool_name, tool_input, response)
    if failed is not None:
        journal.add(store, session, "fail", command, failed[1])
        return None
    earlier = journal.open_failure(store, session, command)
    if earlier is None:
        return None
    text = episode.fix_text(command, earlier.detail, journal.edits_since(store, session, earlier.id), _root(ctx))
    with store.write():
        journal.add(store, session, "pass", command)
        return _put(ctx, text, "fix", session, {"agent": agent, "captured": "fix"})[0]


def capture_turn(ctx: Ctx, session: str, transcript: str | None, final_message: str | None, agent: str,
                 *, interrupted: bool = False, turn_id: str | None = None,
                 episode_too: bool = True) -> Written:
    """Capture the session's open turn (or, with nothing journaled, the transcript's
    last turn): its episode and highlights, then mark it captured."""
    store = ctx.store()
    head, rows = journal.open_turn(store, session)
    prompt = head.subject if head is not None else None
    seen = last_turn(transcript, prompt)
    if prompt is None:  # no prompt hook saw this turn: the transcript or the payload tells it
        marker = journal.last(store, session, ("turn",))
        if seen is None and not final_message:
            return Written()
        if seen is not None and not final_message and episode_too and marker is not None \
                and marker.subject == seen.prompt[:8000]:
            return Written()  # this turn was captured already
        prompt = seen.prompt if seen is not None else ""
    messages = list(seen.messages) if seen is not None else []
    if final_message and (not messages or " ".join(messages[-1].split()) != " ".join(final_message.split())):
        messages.append(final_message.strip())
    record = episode.TurnRecord(
        prompt=prompt,
        conclusion=messages[-1] if messages else "",
        messages=messages,
        files=[r.subject for r in rows if r.kind == "edit"] + (seen.files if seen else []),
        # The hooks saw the failures as they happened; the transcript is the fallback.
        failures=[(r.subject, r.detail) for r in rows if r.kind == "fail"] or (seen.failures if seen else []),
        interrupted=interrupted or bool(seen and seen.interrupted and not final_message),
    )
    with store.write():
        done = write_turn(ctx, session, record, agent, turn_id=turn_id, episode_too=episode_too)
        if episode_too:
            journal.add(store, session, "turn", prompt[:8000])
    return done


def note_compact(ctx: Ctx, session: str, transcript: str | None, agent: str) -> Written:
    """Before a compaction: the open turn's highlights so far, then the mark after
    which this session's memories are no longer in the agent's context."""
    done = capture_turn(ctx, session, transcript, None, agent, episode_too=False)
    journal.add(ctx.store(), session, "compact")
    return done


def in_context_since(ctx: Ctx, session: str) -> str:
    """The time after which this session's memories are in the agent's context (its
    last compaction, else its start): a prompt hook does not inject them again."""
    mark = journal.last(ctx.store(), session, ("compact",))
    return mark.at if mark is not None else ""


def close_session(ctx: Ctx, session: str, transcript: str | None, agent: str) -> Written:
    """At session end: the turn left open (no Stop came), as interrupted; old journal
    rows of every session are dropped."""
    head, _ = journal.open_turn(ctx.store(), session)
    done = capture_turn(ctx, session, transcript, None, agent, interrupted=True) if head else Written()
    journal.prune(ctx.store(), now(-journal.KEEP_DAYS * 86400))
    return done
