"""What a turn is worth keeping, found without a model: the sentences of an assistant
message that say what was decided or fixed, the files a tool call changed, and the
error line of a failed command.

Extraction is deterministic, so the same message always yields the same text, and the
store's per-project content hash then keeps a repeated payload (or a pre-compact pass
over a turn the stop hook already captured) from being stored twice.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson

from marm.text import classify

#: Kinds of sentence a capture keeps.
KEEP = ("decision", "fix", "lesson")
MAX_SENTENCES = 6
MAX_CHARS = 1200
#: How much of a transcript's end a pre-compact pass reads.
TRANSCRIPT_TAIL_BYTES = 512 * 1024

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(*])")
_MARKUP = re.compile(r"(\*\*|__)")


def sentences(text: str) -> Iterator[str]:
    """Prose sentences of a markdown message (code blocks skipped, bullets unwrapped)."""
    for line in _FENCE.sub("\n", text).splitlines():
        line = _MARKUP.sub("", _BULLET.sub("", line)).strip()
        if line.startswith(("#", "|", ">")):
            line = line.lstrip("#|> ").strip()
        for part in _SENTENCE_END.split(line):
            part = part.strip()
            if len(part) >= 12:
                yield part


def decided(text: str) -> tuple[str, str] | None:
    """(capture text, kind) for what ``text`` decided or fixed, or None if nothing."""
    kept: list[tuple[str, str]] = []
    size = 0
    for s in dict.fromkeys(sentences(text)):
        kind = classify(s)
        if kind not in KEEP:
            continue
        if size + len(s) > MAX_CHARS and kept:
            break
        kept.append((s[:MAX_CHARS], kind))
        size += len(s) + 1
        if len(kept) == MAX_SENTENCES:
            break
    if not kept:
        return None
    kinds = Counter(k for _, k in kept)
    kind = max(KEEP, key=lambda k: (kinds[k], -KEEP.index(k)))
    return "\n".join(s for s, _ in kept), kind


# --- tool calls -------------------------------------------------------------------

_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_PATH_KEYS = ("file_path", "path", "notebook_path", "filePath", "absolute_path")
_EDIT_TOOLS = re.compile(
    r"^(?:Edit|MultiEdit|Write|NotebookEdit|apply_patch|write_file|replace|edit|edit_file|"
    r"create_file|str_replace_based_edit_tool)$"
)


def touched_files(tool_name: str | None, tool_input: dict[str, Any]) -> list[str]:
    """Paths a file-editing tool call changed, as the agent gave them."""
    if not tool_name or not _EDIT_TOOLS.match(tool_name):
        return []
    paths = [tool_input[k] for k in _PATH_KEYS if isinstance(tool_input.get(k), str)]
    for key in ("patch", "input", "command"):
        if isinstance(tool_input.get(key), str):
            paths.extend(p.strip() for p in _PATCH_FILE.findall(tool_input[key]))
    return list(dict.fromkeys(p for p in paths if p))


_SHELL_TOOLS = ("Bash", "bash", "shell", "run_shell_command", "local_shell", "exec_command")
_ERROR_LINE = re.compile(
    r"(?i)(?:error|exception)\b|\b(?:traceback|failed|fatal|not found|no such file|denied|"
    r"cannot|could not|panic|no module named)\b"
)
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "code")


def failed_command(tool_name: str | None, tool_input: dict[str, Any], response: Any) -> tuple[str, str] | None:
    """(command, error line) when a shell tool call failed, else None."""
    if tool_name not in _SHELL_TOOLS:
        return None
    command = tool_input.get("command")
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    if not isinstance(command, str) or not command.strip():
        return None
    failed, output = False, ""
    if isinstance(response, dict):
        exit_code = next((response[k] for k in _EXIT_KEYS if isinstance(response.get(k), int)), 0)
        failed = bool(exit_code) or response.get("is_error") is True or response.get("isError") is True
        error = response.get("error")
        if isinstance(error, str) and error.strip():
            failed, output = True, error
        else:
            output = "\n".join(str(response.get(k) or "") for k in ("stderr", "output", "stdout",
                                                                        "llmContent"))
    elif isinstance(response, str):
        output = response
        failed = bool(re.search(r"(?i)exit code:? *[1-9]", response))
    if not failed:
        return None
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    line = next((ln for ln in reversed(lines) if _ERROR_LINE.search(ln)), lines[-1] if lines else "")
    if not line:
        return None
    return command.strip()[:300], line[:300]


# --- transcripts ------------------------------------------------------------------

_ASSISTANT_ROLES = ("assistant", "model", "gemini")


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)
    elif isinstance(node, dict):
        if node.get("type") in ("tool_use", "tool_result", "thinking", "function_call"):
            return
        for key in ("text", "content", "message", "parts"):
            if key in node:
                yield from _strings(node[key])


def _assistant_texts(node: Any) -> Iterator[str]:
    """Texts of assistant messages anywhere in a transcript record (Claude's JSONL
    records, Codex's response items, Gemini's message list)."""
    if isinstance(node, list):
        for item in node:
            yield from _assistant_texts(item)
    elif isinstance(node, dict):
        if node.get("role") in _ASSISTANT_ROLES or node.get("type") in _ASSISTANT_ROLES:
            text = "\n".join(s for s in _strings(node) if s.strip())
            if text:
                yield text
            return
        for value in node.values():
            if isinstance(value, (dict, list)):
                yield from _assistant_texts(value)


def transcript_messages(path: str, limit: int = 30) -> list[str]:
    """The last ``limit`` assistant messages of a transcript (JSON Lines or one JSON
    document); only the file's tail is read, so a long session costs the same."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            if size > TRANSCRIPT_TAIL_BYTES:
                fh.seek(size - TRANSCRIPT_TAIL_BYTES)
                fh.readline()  # drop the partial first line
            data = fh.read()
    except OSError:
        return []
    try:
        records: list[Any] = [orjson.loads(data)]
    except orjson.JSONDecodeError:
        records = []
        for line in data.splitlines():
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
    texts = [t for r in records for t in _assistant_texts(r)]
    return texts[-limit:]
