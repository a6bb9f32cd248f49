"""An episode: one completed turn kept nearly verbatim, as a memory.

It answers "what did we do about X": the prompt, the conclusion the agent reached (its
final message, trimmed, never paraphrased), the files the turn changed and the commands
that failed with the line that says why. Tool output and file contents are never part
of it. Long code blocks in the conclusion are cut to their first lines: the prose around
them says what they are for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PROMPT_CHARS = 700
CONCLUSION_CHARS = 2500
FILES = 12
FAILURES = 4
#: Lines of a fenced code block an episode keeps.
CODE_LINES = 6

_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
#: What hooks put into a prompt (marm's own fenced blocks, an agent's hook context
#: wrapper): never captured back, or memory would feed on itself.
_INJECTED = re.compile(
    r"<hook_context>.*?(?:</hook_context>|\Z)|<marm-memory\b.*?(?:</marm-memory>|\Z)"
    r"|\[marm-memory\b.*?(?:\[/marm-memory\]|\Z)", re.DOTALL | re.IGNORECASE)


def without_injected(text: str) -> str:
    """``text`` without the blocks hooks injected into it."""
    return _INJECTED.sub("", text).strip() if "marm-memory" in text or "<hook_context>" in text else text


@dataclass(slots=True)
class TurnRecord:
    """What capture knows of one turn, from the hooks' journal and the transcript."""

    prompt: str
    conclusion: str = ""
    messages: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    interrupted: bool = False


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind("\n"), cut.rfind(". "))
    return (cut[: end + 1] if end > limit * 0.6 else cut).rstrip() + " …"


def _short_code(text: str) -> str:
    def shorten(m: re.Match[str]) -> str:
        lines = m.group(1).splitlines()
        if len(lines) <= CODE_LINES:
            return m.group(0)
        head = m.group(0).split("\n", 1)[0]
        return f"{head}\n" + "\n".join(lines[:CODE_LINES]) + f"\n… ({len(lines) - CODE_LINES} more lines)\n```"

    return _FENCE.sub(shorten, text)


def relative(path: str, root: str | None) -> str:
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1:]
    return path


def text(turn: TurnRecord, root: str | None = None) -> str | None:
    """The episode's text, or None when the turn left nothing to say."""
    parts = [f"Asked: {_cut(turn.prompt, PROMPT_CHARS)}"] if turn.prompt.strip() else []
    if turn.conclusion.strip():
        label = "Stopped at" if turn.interrupted else "Concluded"
        parts.append(f"{label}: {_cut(_short_code(turn.conclusion), CONCLUSION_CHARS)}")
    elif turn.interrupted:
        parts.append("(interrupted before an answer)")
    files = list(dict.fromkeys(relative(f, root) for f in turn.files))
    if files:
        more = f" and {len(files) - FILES} more" if len(files) > FILES else ""
        parts.append("Changed: " + ", ".join(files[:FILES]) + more)
    for command, line in list(dict.fromkeys(turn.failures))[:FAILURES]:
        parts.append(f"Failed: `{command[:200]}`" + (f": {line}" if line else ""))
    if not turn.conclusion.strip() and not files and not turn.failures and not turn.interrupted:
        return None  # a prompt alone, with no sign of what became of it, is no episode
    return "\n".join(parts) or None


def question_and_answer(content: str) -> tuple[str, str]:
    """An episode's text cut where the prompt it restates ends: ("Asked: ...", the
    rest), or ("", content) when it does not start with a prompt."""
    if not content.startswith("Asked: "):
        return "", content
    for label in ("\nConcluded: ", "\nStopped at: ", "\n(interrupted", "\nChanged: ", "\nFailed: "):
        at = content.find(label)
        if at > 0:
            return content[:at], content[at + 1:]
    return content, ""


def fix_text(command: str, error: str, files: list[str], root: str | None = None) -> str:
    """The memory of a command that failed and then passed."""
    changed = list(dict.fromkeys(relative(f, root) for f in files))
    between = f" after changes to {', '.join(changed[:FILES])}" if changed else ""
    why = f" with: {error}" if error else ""
    return f"FIX: `{command[:200]}` failed{why}; it passed again{between}."
