"""Realistic hook payloads, shaped as each agent sends them, and a seeded project."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from marm import config
from marm.context import Ctx
from marm.hooks.event import NATIVE
from marm.ops.memory import write_memory
from marm.store import Store, memories
from marm.store.memories import Filter
from tests.helpers import git_init, run_marm

DECISION = ("DECISION: the payment webhook uses idempotency keys so that retried deliveries "
            "never double charge a customer")
UNRELATED = "DECISION: the documentation site is built with mkdocs and deployed from main"
OTHER_PROJECT = "DECISION: payment webhook retries are handled by the queue worker in project B"
PROMPT = "Why does the payment webhook need idempotency keys when deliveries are retried?"
ANSWER = ("I looked at the retry logic in the worker.\n\n"
          "- We decided to switch the retry queue from Redis to SQLite instead of keeping two stores.\n"
          "- Fixed the flaky checkout test: the root cause was a timezone-naive timestamp.\n\n"
          "Let me know if you want the migration script too.")


@dataclass
class Project:
    root: Path
    other: Path
    decision: int
    unrelated: int
    other_project: int


def seed(tmp_path: Path) -> Project:
    """Project A with a relevant and an unrelated decision; project B with a memory that
    would match the prompt if scope leaked."""
    root = git_init(tmp_path / "shop")
    other = git_init(tmp_path / "other")
    ids = []
    for cwd, text in ((root, DECISION), (root, UNRELATED), (other, OTHER_PROJECT)):
        ctx = Ctx(source="cli", cwd=cwd, env=dict(os.environ))
        try:
            ids.append(write_memory(ctx, text).id)
        finally:
            ctx.close()
    return Project(root, other, *ids)


def base(agent: str, event: str, cwd: Path, session: str = "sess-1") -> dict:
    native = NATIVE[agent][event]
    if agent == "claude":
        return {"session_id": session, "transcript_path": str(cwd / ".transcript.jsonl"),
                "cwd": str(cwd), "permission_mode": "default", "hook_event_name": native}
    if agent == "codex":
        return {"session_id": session, "transcript_path": None, "cwd": str(cwd),
                "hook_event_name": native, "model": "gpt-5-codex", "turn_id": "turn-7"}
    return {"session_id": session, "transcript_path": str(cwd / ".gemini-chat.json"),
            "cwd": str(cwd), "hook_event_name": native, "timestamp": "2026-12-01T10:00:00.000Z"}


def payload(agent: str, event: str, cwd: Path, **extra) -> dict:
    p = base(agent, event, cwd)
    if event == "session-start":
        p["source"] = "startup"
    elif event == "prompt":
        p["prompt"] = PROMPT
    elif event == "stop":
        if agent == "gemini":
            p.update(prompt="fix the retry queue", prompt_response=ANSWER, stop_hook_active=False)
        else:
            p.update(stop_hook_active=False, last_assistant_message=ANSWER)
    elif event == "pre-compact":
        p["trigger"] = "auto"
        if agent == "claude":
            p["custom_instructions"] = ""
    elif event == "session-end":
        p["reason"] = "prompt_input_exit" if agent != "gemini" else "exit"
    p.update(extra)
    return p


def edit_payload(agent: str, cwd: Path, file: Path) -> dict:
    p = base(agent, "post-tool", cwd)
    if agent == "claude":
        p.update(tool_name="Edit", tool_input={"file_path": str(file), "old_string": "a = 1",
                                               "new_string": "a = 2", "replace_all": False},
                 tool_response={"filePath": str(file), "success": True})
    elif agent == "codex":
        rel = file.relative_to(cwd)
        patch = f"*** Begin Patch\n*** Update File: {rel}\n@@\n-a = 1\n+a = 2\n*** End Patch\n"
        p.update(tool_name="apply_patch", tool_input={"command": patch},
                 tool_response="Success. Updated the following files:\nM " + str(rel))
    else:
        p.update(tool_name="write_file", tool_input={"file_path": str(file), "content": "a = 2\n"},
                 tool_response={"llmContent": f"Successfully wrote to {file}", "returnDisplay": "ok",
                                "error": None})
    return p


def failed_shell_payload(agent: str, cwd: Path) -> dict:
    p = base(agent, "post-tool", cwd)
    error = "E   ModuleNotFoundError: No module named 'stripe_mock'"
    if agent == "claude":
        p.update(tool_name="Bash", tool_input={"command": "pytest -q tests/test_webhook.py"},
                 tool_response={"stdout": "collected 0 items / 1 error\n" + error,
                                "stderr": "", "interrupted": False, "exit_code": 1})
    elif agent == "codex":
        p.update(tool_name="Bash", tool_input={"command": "pytest -q tests/test_webhook.py"},
                 tool_response="Exit code: 1\nOutput:\n" + error)
    else:
        p.update(tool_name="run_shell_command", tool_input={"command": "pytest -q tests/test_webhook.py"},
                 tool_response={"llmContent": error, "returnDisplay": error,
                                "error": "Command exited with code 1: " + error})
    return p


def write_transcript(agent: str, cwd: Path, text: str) -> Path:
    """A transcript in the agent's own format whose last assistant message is ``text``."""
    if agent == "claude":
        path = cwd / ".transcript.jsonl"
        lines = [
            {"type": "user", "message": {"role": "user", "content": "fix the retry queue"}},
            {"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]}},
            {"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": text}]}},
        ]
        path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    elif agent == "codex":
        path = cwd / ".codex-rollout.jsonl"
        lines = [
            {"type": "session_meta", "payload": {"id": "sess-1", "cwd": str(cwd)}},
            {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                  "content": [{"type": "input_text", "text": "go"}]}},
            {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                  "content": [{"type": "output_text", "text": text}]}},
        ]
        path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    else:
        path = cwd / ".gemini-chat.json"
        path.write_text(json.dumps({"sessionId": "sess-1", "messages": [
            {"id": "1", "type": "user", "content": "fix the retry queue"},
            {"id": "2", "type": "gemini", "content": text},
        ]}))
    return path


def hook(agent: str, event: str, data: dict | str | bytes, cwd: Path | None = None, env=None):
    raw = data if isinstance(data, (str, bytes)) else json.dumps(data)
    return run_marm("hook", event, "--agent", agent, input=raw, cwd=cwd, env=env)


def stored(home: Path) -> list:
    store = Store.open(config.database_path(home))
    try:
        return memories.recent(store, Filter(all_projects=True), limit=10_000)
    finally:
        store.close()
