"""The one normalised hook event every handler receives, whatever the agent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: marm's event names, in the order a session meets them.
EVENTS = ("session-start", "prompt", "post-tool", "stop", "pre-compact", "session-end")
AGENTS = ("claude", "codex", "gemini")

#: Each agent's own name for marm's events (what ``hook_event_name`` says and what the
#: configuration is keyed on). Codex uses Claude's names.
NATIVE: dict[str, dict[str, str]] = {
    "claude": {
        "session-start": "SessionStart", "prompt": "UserPromptSubmit", "post-tool": "PostToolUse",
        "stop": "Stop", "pre-compact": "PreCompact", "session-end": "SessionEnd",
    },
    "gemini": {
        "session-start": "SessionStart", "prompt": "BeforeAgent", "post-tool": "AfterTool",
        "stop": "AfterAgent", "pre-compact": "PreCompress", "session-end": "SessionEnd",
    },
}
NATIVE["codex"] = dict(NATIVE["claude"])


@dataclass(frozen=True, slots=True)
class HookEvent:
    """What one hook invocation is about, in agent-neutral terms."""

    agent: str
    event: str                          # one of EVENTS
    session_id: str | None
    cwd: str | None
    prompt: str | None = None           # prompt
    tool_name: str | None = None        # post-tool
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_response: Any = None
    error: str | None = None            # post-tool: a failed call's error (Claude's PostToolUseFailure)
    assistant_message: str | None = None  # stop: the turn's last assistant message
    transcript_path: str | None = None
    turn_id: str | None = None
    reason: str | None = None           # session-start source, compact trigger, end reason
