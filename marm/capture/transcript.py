"""An agent's transcript read back as turns: the prompt, every assistant message, the
files its tools changed and the commands that failed.

Three formats, one result: Claude Code's JSON Lines (``user``/``assistant`` records with
content blocks), Codex CLI's rollout (``event_msg`` and ``response_item`` records) and
Gemini CLI's saved chat (one JSON document with a ``messages`` list). Only the file's
tail is read, so a long session costs a hook the same as a short one; a turn that began
before the tail is returned without its start.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from marm.capture import tools
from marm.capture.episode import without_injected

#: How much of a transcript's end is read.
TAIL_BYTES = 1024 * 1024

#: User records that are not typed prompts (slash commands, hook and IDE noise).
_META_PREFIX = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
                "<local-command-stderr>", "<local-command-caveat>", "Caveat: The messages below",
                "<task-notification>", "<environment_context>", "<user_instructions>", "<turn_aborted>")
_IDE_BLOCK = re.compile(r"^\s*<(ide_opened_file|ide_selection|ide_diagnostics)>.*</\1>\s*$", re.DOTALL)
_INTERRUPT = "[Request interrupted by user"


@dataclass(slots=True)
class Turn:
    """One user prompt and what the agent did with it."""

    prompt: str
    messages: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (command, error line)
    interrupted: bool = False
    started_at: str | None = None   # the transcript's time of the prompt, as recorded
    ended_at: str | None = None     # and of the turn's last record (when a Stop hook would run)


@dataclass(frozen=True, slots=True)
class Session:
    """Where and by whom a transcript was recorded (what a backfill scopes it by)."""

    agent: str                      # claude | codex | gemini
    session_id: str | None
    cwd: str | None
    project_hash: str | None = None  # Gemini records a hash of its project root, not the path


def read_records(path: str, tail: int | None = None) -> list[Any]:
    """The transcript's records (the tail's whole lines, or the whole JSON document)."""
    tail = TAIL_BYTES if tail is None else tail
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            if size > tail:
                fh.seek(size - tail)
                fh.readline()  # drop the partial first line
            data = fh.read()
    except OSError:
        return []
    try:
        whole = orjson.loads(data)
    except orjson.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
        return [whole]
    records = []
    for line in data.splitlines():
        try:
            records.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return [r for r in records if isinstance(r, dict)]


def turns(path: str, tail: int | None = None) -> list[Turn]:
    """Every turn in the transcript's tail (``tail`` bytes; a backfill passes the file's
    size), oldest first."""
    return turns_of(read_records(path, tail))


def _format(records: list[Any]) -> str:
    if isinstance(records[0].get("messages"), list):
        return "gemini"
    if any(r.get("type") in ("session_meta", "response_item", "event_msg", "turn_context") for r in records[:200]):
        return "codex"
    return "claude"


def turns_of(records: list[Any]) -> list[Turn]:
    """The turns of records ``read_records`` returned."""
    if not records:
        return []
    agent = _format(records)
    if agent == "gemini":
        return list(_gemini(records[0]["messages"]))
    return list(_codex(records) if agent == "codex" else _claude(records))


def session_of(records: list[Any]) -> Session | None:
    """Which agent wrote the transcript, its session id and the directory it ran in."""
    if not records:
        return None
    agent = _format(records)
    if agent == "gemini":
        doc = records[0]
        return Session("gemini", _str(doc.get("sessionId")), _str(doc.get("cwd")), _str(doc.get("projectHash")))
    session_id = cwd = None
    for r in records[:400]:
        if agent == "codex":
            p = r.get("payload") or {}
            if r.get("type") == "session_meta":
                session_id = session_id or _str(p.get("id"))
            if r.get("type") in ("session_meta", "turn_context"):
                cwd = cwd or _str(p.get("cwd"))
        else:
            session_id = session_id or _str(r.get("sessionId"))
            cwd = cwd or _str(r.get("cwd"))
        if session_id and cwd:
            break
    return Session(agent, session_id, cwd)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _stamp(turn: Turn | None, value: Any) -> None:
    """Note a record's time on the turn: its first as the start, every one as the end."""
    if turn is None or not isinstance(value, str) or not value:
        return
    if turn.started_at is None:
        turn.started_at = value
    turn.ended_at = value


def _texts(content: Any) -> str:
    """The text blocks of a message, without the IDE's context blocks (an opened file,
    a selection), which are not what the person typed."""
    if isinstance(content, str):
        return content
    parts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(p for p in parts if p.strip() and not _IDE_BLOCK.match(p))


def _typed(text: str) -> str | None:
    """The prompt a person typed, or None for a record that only looks like one."""
    s = without_injected(text).strip()
    if not s or s.startswith(_META_PREFIX):
        return None
    return s


def _api_error(record: dict, text: str) -> bool:
    """Whether a Claude Code assistant record is the harness reporting a failed request
    (a server error, a usage limit): Claude Code marks it ``isApiErrorMessage`` (older
    versions only as the ``<synthetic>`` model's "API Error" text). The turn ended there,
    without an answer, and Claude Code sends no Stop for it."""
    return bool(record.get("isApiErrorMessage")) or (
        (record.get("message") or {}).get("model") == "<synthetic>" and text.lstrip().startswith("API Error"))


def _claude(records: list[dict]) -> Iterator[Turn]:
    turn: Turn | None = None
    uses: dict[str, dict] = {}
    for r in records:
        if r.get("isSidechain") or r.get("isMeta") or r.get("isCompactSummary"):
            continue
        message = r.get("message") or {}
        content = message.get("content")
        if r.get("type") == "assistant" and turn is not None:
            _stamp(turn, r.get("timestamp"))
            text = _texts(content)
            if _api_error(r, text):  # the harness's error ("API Error: 500 ...", a usage limit): no answer
                turn.interrupted = True
                continue
            if text.strip():
                turn.messages.append(text.strip())
            for b in content or []:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    uses[str(b.get("id"))] = b
                    turn.files.extend(tools.touched_files(b.get("name"), b.get("input") or {}))
        elif r.get("type") == "user":
            results = [b for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_result"] \
                if isinstance(content, list) else []
            if results:
                _stamp(turn, r.get("timestamp"))
                for b in results:
                    use = uses.get(str(b.get("tool_use_id")))
                    if turn is None or use is None or b.get("is_error") is not True:
                        continue
                    failed = tools.failed_command(use.get("name"), use.get("input") or {},
                                                  {"error": _texts(b.get("content"))})
                    if failed:
                        turn.failures.append(failed)
                continue
            text = _texts(content)
            if text.strip().startswith(_INTERRUPT):
                if turn is not None:
                    turn.interrupted = True
                continue
            prompt = _typed(text)
            if prompt is not None:
                if turn is not None:
                    yield turn
                turn = Turn(prompt)
                _stamp(turn, r.get("timestamp"))
    if turn is not None:
        yield turn


def _codex(records: list[dict]) -> Iterator[Turn]:
    turn: Turn | None = None
    calls: dict[str, dict] = {}
    said: set[str] = set()
    # Prompts come as user_message events; older rollouts have only the user message item.
    events = any(r.get("type") == "event_msg" and (r.get("payload") or {}).get("type") == "user_message"
                 for r in records)
    for r in records:
        kind, p = r.get("type"), r.get("payload") or {}
        what = p.get("type")
        if not events and kind == "response_item" and what == "message" and p.get("role") == "user":
            p = {"message": "\n".join(str(c.get("text") or "") for c in p.get("content") or []
                                      if isinstance(c, dict))}
            kind, what = "event_msg", "user_message"
        if kind == "event_msg" and what == "user_message":
            prompt = _typed(str(p.get("message") or ""))
            if prompt is not None:
                if turn is not None:
                    yield turn
                turn, said = Turn(prompt), set()
            _stamp(turn, r.get("timestamp"))
            continue
        if turn is None:
            continue
        _stamp(turn, r.get("timestamp"))
        if kind == "event_msg" and what == "agent_message" or (
                kind == "response_item" and what == "message" and p.get("role") == "assistant"):
            text = str(p.get("message") or "") if kind == "event_msg" else "\n".join(
                str(c.get("text") or "") for c in p.get("content") or [] if isinstance(c, dict))
            text = text.strip()
            if text and text not in said:  # the same message comes as an event and an item
                said.add(text)
                turn.messages.append(text)
        elif kind == "event_msg" and what == "turn_aborted":
            turn.interrupted = True
        elif kind == "response_item" and what in ("function_call", "custom_tool_call", "local_shell_call"):
            calls[str(p.get("call_id") or p.get("id"))] = p
            for name, tool_input in tools.codex_calls(p):
                turn.files.extend(tools.touched_files(name, tool_input))
        elif kind == "response_item" and what in ("function_call_output", "custom_tool_call_output"):
            call = calls.get(str(p.get("call_id")))
            output = p.get("output")
            if isinstance(output, dict):
                output = output.get("content")
            if call is None or not isinstance(output, str):
                continue
            for name, tool_input in tools.codex_calls(call):
                failed = tools.failed_command(name, tool_input, output)
                if failed:
                    turn.failures.append(failed)
    if turn is not None:
        yield turn


def _gemini(messages: list[Any]) -> Iterator[Turn]:
    turn: Turn | None = None
    for m in messages:
        if not isinstance(m, dict):
            continue
        role = m.get("type") or m.get("role")
        content = m.get("content")
        if content is None and isinstance(m.get("parts"), list):
            content = "\n".join(str(x.get("text") or "") for x in m["parts"] if isinstance(x, dict))
        text = content if isinstance(content, str) else _texts(content)
        if role == "user":
            prompt = _typed(text)
            if prompt is not None:
                if turn is not None:
                    yield turn
                turn = Turn(prompt)
            _stamp(turn, m.get("timestamp"))
        elif role in ("gemini", "model", "assistant") and turn is not None:
            _stamp(turn, m.get("timestamp"))
            if text.strip():
                turn.messages.append(text.strip())
            for call in m.get("toolCalls") or []:
                if isinstance(call, dict):
                    turn.files.extend(tools.touched_files(call.get("name"), call.get("args") or {}))
    if turn is not None:
        yield turn


def last_turn(path: str | None, prompt: str | None = None) -> Turn | None:
    """The turn that answers ``prompt`` (the newest with that prompt), else the newest."""
    if not path:
        return None
    found = turns(path)
    if not prompt:
        return found[-1] if found else None
    want = _key(prompt)
    return next((turn for turn in reversed(found) if _key(turn.prompt) == want), None)


def _key(prompt: str) -> str:
    """What a prompt is matched on: its first words, however an agent wrapped them."""
    return " ".join(prompt.split())[:200]
