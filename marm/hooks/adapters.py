"""Per-agent adapters: the agent's hook JSON in, a ``HookEvent`` out, and back again.

Claude Code and Codex CLI share one envelope; Gemini CLI renames the events and some
fields (``prompt_response`` for the last answer, ``trigger`` for the start/compact
reason). Fields an agent did not send are None: handlers cope with a sparse event.
"""

from __future__ import annotations

from typing import Any

import orjson

from marm.errors import BadInput
from marm.hooks.event import NATIVE, HookEvent

#: Events whose answer can put text in front of the model (``additionalContext``).
CONTEXT_EVENTS = ("session-start", "prompt")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def parse(agent: str, event: str, raw: str) -> HookEvent:
    """Normalise one payload; raises ``BadInput`` when it is not a JSON object."""
    if not raw.strip():
        raise BadInput("no hook payload on standard input")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"the hook payload is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BadInput("the hook payload is not a JSON object")
    tool_input = data.get("tool_input")
    if isinstance(tool_input, str):  # Codex apply_patch sends the patch itself
        tool_input = {"patch": tool_input}
    last = data.get("prompt_response") if agent == "gemini" else data.get("last_assistant_message")
    reason = data.get("source") or data.get("trigger") or data.get("reason")
    return HookEvent(
        agent=agent,
        event=event,
        session_id=_text(data.get("session_id")),
        cwd=_text(data.get("cwd")),
        prompt=_text(data.get("prompt")),
        tool_name=_text(data.get("tool_name")),
        tool_input=tool_input if isinstance(tool_input, dict) else {},
        tool_response=data.get("tool_response"),
        error=_text(data.get("error")),
        assistant_message=_text(last),
        transcript_path=_text(data.get("transcript_path")),
        turn_id=_text(data.get("turn_id")),
        reason=_text(reason),
    )


def render(agent: str, event: str, context: str | None) -> dict[str, Any] | None:
    """The agent's answer, or None for no output at all.

    Only SessionStart and the prompt event may carry ``additionalContext``; Claude Code
    rejects ``hookSpecificOutput`` on Stop and PreCompact, so other events print
    nothing. Gemini reads stdout as JSON on every exit 0, so it always gets an object.
    """
    if context and event in CONTEXT_EVENTS:
        return {"hookSpecificOutput": {"hookEventName": NATIVE[agent][event],
                                       "additionalContext": context}}
    return {} if agent == "gemini" else None
