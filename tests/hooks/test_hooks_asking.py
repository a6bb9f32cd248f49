"""A prompt that asks a question has its own relevance gate (``inject.ask_*``), lower by
default than a task's: real ``marm hook prompt`` subprocesses (the real embedding model),
each gate set out of reach in turn, over a store that ``marm log`` and ``marm drain`` lay
out in this process (``invoke_marm``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import git_init, invoke_marm
from tests.hooks.payloads import hook

FACT = ("The nightly export runs from a systemd timer on the worker host; cron was dropped "
        "because it missed runs after reboots.")
QUESTION = "how is the nightly export scheduled on the worker host?"
TASK = "schedule the nightly export on the worker host every hour"
NEVER, ALWAYS = "1.0", "0.0"


def _injected(repo: Path, prompt: str, env: dict[str, str]) -> str:
    run = hook("claude", "prompt", {"session_id": "sess-probe", "cwd": str(repo), "transcript_path": None,
                                    "hook_event_name": "UserPromptSubmit", "prompt": prompt}, env=env)
    assert run.code == 0, run.err
    return json.loads(run.out)["hookSpecificOutput"]["additionalContext"] if run.out.strip() else ""


@pytest.mark.slow
def test_a_question_and_a_task_are_each_gated_by_their_own_setting(tmp_path, marm_home):
    repo = git_init(tmp_path / "exporter")
    assert invoke_marm("log", FACT, "--kind", "decision", cwd=repo).code == 0
    drained = invoke_marm("drain", cwd=repo)  # vectors: both prompts are gated by meaning
    assert drained.code == 0 and drained.json()["kinds"]["embed"]["done"] == 1, drained.out
    asks_open = {"MARM_INJECT_MIN_SCORE": NEVER, "MARM_INJECT_MIN_MEANING": NEVER,
                 "MARM_INJECT_ASK_MIN_SCORE": ALWAYS, "MARM_INJECT_ASK_MIN_MEANING": ALWAYS}
    tasks_open = {"MARM_INJECT_MIN_SCORE": ALWAYS, "MARM_INJECT_MIN_MEANING": ALWAYS,
                  "MARM_INJECT_ASK_MIN_SCORE": NEVER, "MARM_INJECT_ASK_MIN_MEANING": NEVER}
    assert "systemd timer" in _injected(repo, QUESTION, asks_open)
    assert _injected(repo, TASK, asks_open) == ""
    assert "systemd timer" in _injected(repo, TASK, tasks_open)
    assert _injected(repo, QUESTION, tasks_open) == ""
