"""What a tool call tells about a turn: the files it changed, and whether a shell
command failed and why.

Each agent reports a failed command its own way: Claude Code sends
``PostToolUseFailure`` with an ``error`` text (``Exit code 1`` and the output), Codex
sends the output as one string (``Exit code: 1`` / ``Process exited with code 1``),
Gemini CLI writes ``Exit Code: 1`` into the tool's text. All three end up as (command,
the line that explains the error). Exits that only answer a question (a ``grep`` with
no match, ``test``, ``diff``) are not failures.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import orjson

_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_PATH_KEYS = ("file_path", "path", "notebook_path", "filePath", "absolute_path")
_EDIT_TOOLS = re.compile(
    r"^(?:Edit|MultiEdit|Write|NotebookEdit|apply_patch|write_file|replace|edit|edit_file|"
    r"create_file|str_replace_based_edit_tool)$"
)
SHELL_TOOLS = ("Bash", "bash", "shell", "run_shell_command", "local_shell", "exec_command", "shell_command")


def touched_files(tool_name: str | None, tool_input: Any) -> list[str]:
    """Paths a file-editing tool call changed, as the agent gave them."""
    if not tool_name or not _EDIT_TOOLS.match(tool_name):
        return []
    if isinstance(tool_input, str):
        tool_input = {"patch": tool_input}
    if not isinstance(tool_input, dict):
        return []
    paths = [tool_input[k] for k in _PATH_KEYS if isinstance(tool_input.get(k), str)]
    for key in ("patch", "input", "command"):
        if isinstance(tool_input.get(key), str):
            paths.extend(p.strip() for p in _PATCH_FILE.findall(tool_input[key]))
    return list(dict.fromkeys(p for p in paths if p))


def shell_command(tool_name: str | None, tool_input: dict[str, Any]) -> str | None:
    """The command line of a shell tool call, whitespace-normalised, or None."""
    if tool_name not in SHELL_TOOLS:
        return None
    command = tool_input.get("command") or tool_input.get("cmd")
    if isinstance(command, list):
        command = command[-1] if len(command) >= 3 and command[-2] in ("-lc", "-c") else " ".join(map(str, command))
    if not isinstance(command, str) or not command.strip():
        return None
    return " ".join(command.split())[:500]


_EXIT = re.compile(r"(?im)^\W*(?:exit code|exit status|process exited with code|command exited with code)"
                   r"\W{0,3}(-?\d+)")
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code")
#: Programs whose exit status 1 answers a question rather than reports an error.
_ANSWERS = {"grep", "egrep", "fgrep", "rg", "ag", "ack", "test", "[", "[[", "diff", "cmp", "pgrep",
            "which", "type", "false", "git-diff", "comm"}
_WRAPPERS = {"sudo", "env", "time", "command", "nice", "timeout", "xargs", "exec"}
#: Lines that say only that a command failed, or frame its output.
_FRAMING = re.compile(
    r"(?i)^\W*(?:exit code|exit status|process exited|command exited|wall time|output:|command:|directory:|"
    r"stdout:|stderr:\s*\(empty\)|signal:|background pids:|process group pgid:|script (?:completed|running)|"
    r"chunk id:|original token count)"
)
_ERROR_WORD = re.compile(
    r"(?i)(?:error|exception|traceback)\b|\b(?:failed|failure|fatal|not found|no such file|denied|"
    r"cannot|can't|could not|couldn't|panic(?:ked)?|no module named|undefined|unresolved|refused|"
    r"missing|invalid|unexpected|expected)\b"
)
#: A line that states an error: an exception with its message, or a compiler's ``error:``.
_STATED = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b:|(?i:^\W*(?:error|fatal|panic)\b(?:\[\w+\])?:)")
_PY_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b:?")


def exit_status(response: Any) -> tuple[int | None, str]:
    """(exit code if the response says one, the response's text)."""
    if isinstance(response, dict):
        code = next((response[k] for k in _EXIT_KEYS if isinstance(response.get(k), int)), None)
        parts = [response.get(k) for k in ("error", "stderr", "output", "stdout", "llmContent", "returnDisplay")]
        text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
        if code is None and (response.get("is_error") is True or response.get("isError") is True
                             or isinstance(response.get("error"), str) and response["error"].strip()):
            code = _code_in(text) or 1
        return (code if code is not None else _code_in(text)), text
    if isinstance(response, list):
        text = "\n".join(str(x.get("text") or "") for x in response if isinstance(x, dict))
        return _code_in(text), text
    if isinstance(response, str):
        return _code_in(response), response
    return None, ""


def _code_in(text: str) -> int | None:
    m = _EXIT.search(text[:4000])
    return int(m.group(1)) if m else None


def answers_only(command: str, code: int) -> bool:
    """A non-zero exit that is an answer, not an error: status 1 of a grep, test or diff
    (the last command of a pipeline or chain decides)."""
    if code != 1:
        return False
    last = re.split(r"\|\||&&|[|;]", command)[-1]
    try:
        words = shlex.split(last)
    except ValueError:
        words = last.split()
    while words and (words[0] in _WRAPPERS or "=" in words[0] and not words[0].startswith("-")):
        words.pop(0)
    if not words:
        return False
    program = words[0].rsplit("/", 1)[-1]
    if program == "git" and len(words) > 1 and words[1] in ("diff", "grep"):
        return True
    return program in _ANSWERS


def error_line(text: str) -> str:
    """The line of a command's output that says what went wrong ('' if none does)."""
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not _FRAMING.match(ln)]
    if not lines:
        return ""
    # A Python traceback ends with the exception: the most telling line.
    if any(ln.startswith("Traceback (most recent call last)") for ln in lines):
        last = next((ln for ln in reversed(lines) if _PY_EXCEPTION.match(ln)), None)
        if last:
            return last[:300]
    lines = [re.sub(r"^E\s{2,}", "", ln) for ln in lines]  # pytest marks its error lines "E   "
    strong = [ln for ln in lines if _STATED.search(ln)]
    telling = [ln for ln in lines if _ERROR_WORD.search(ln) and not re.fullmatch(r"(?i)\W*error\W*", ln)]
    line = (strong or telling or lines[-1:])[0]
    return re.sub(r"(?i)^(?:(?:stderr|error):\s*)+(?=\S)", "", line)[:300]


def failed_command(tool_name: str | None, tool_input: dict[str, Any], response: Any) -> tuple[str, str] | None:
    """(command, error line) when a shell tool call failed, else None."""
    command = shell_command(tool_name, tool_input if isinstance(tool_input, dict) else {})
    if command is None:
        return None
    code, text = exit_status(response)
    if not code or answers_only(command, code):
        return None
    return command, error_line(text)


# --- Codex rollouts -------------------------------------------------------------------

_EXEC_CALL = re.compile(r"tools\.exec_command\(\s*(\{.*?\})\s*\)", re.DOTALL)
_PATCH_CALL = re.compile(r"tools\.apply_patch\(\s*(\"(?:[^\"\\]|\\.)*\")\s*\)", re.DOTALL)


def codex_calls(call: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(tool name as Codex's hooks name it, tool input) for one rollout tool call; a
    code-mode ``exec`` cell may hold several."""
    name = call.get("name") or call.get("type")
    if name in ("exec_command", "shell", "shell_command", "local_shell_call", "local_shell"):
        args = _json(call.get("arguments"))
        args = args if isinstance(args, dict) else {}
        if str(name).startswith("local_shell"):
            args = {**(call.get("action") or {}), **args}
        cmd = args.get("cmd") or args.get("command")
        return [("Bash", {"command": cmd})] if cmd else []
    if name == "apply_patch":
        args = _json(call.get("arguments"))
        patch = call.get("input") or (args.get("input") if isinstance(args, dict) else None)
        return [("apply_patch", {"patch": patch})] if isinstance(patch, str) else []
    if name == "exec":
        source = str(call.get("input") or "")
        found: list[tuple[str, dict[str, Any]]] = []
        for m in _EXEC_CALL.finditer(source):
            args = _json(m.group(1))
            cmd = args.get("cmd") if isinstance(args, dict) else None
            if cmd:
                found.append(("Bash", {"command": cmd}))
        for m in _PATCH_CALL.finditer(source):
            patch = _json(m.group(1))
            if isinstance(patch, str):
                found.append(("apply_patch", {"patch": patch}))
        return found
    return []


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value
