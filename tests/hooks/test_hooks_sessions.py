"""Whole sessions replayed through real ``marm hook`` subprocesses, per agent: each turn
becomes an episode, its decision a highlight, a failure then a pass of the same command
one fix; a grep with no match is no failure; what this session wrote is not injected
back into it while a previous session's memory is; a turn in another language is kept
as an episode and never highlighted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from marm.hooks.event import NATIVE
from tests.hooks.payloads import hook, stored
from tests.helpers import git_init

PROMPT = "the upload test is flaky, can you find out why and fix it?"
FINAL = ("Let me summarise. The flaky upload test shared one temp directory across workers, so files from one "
         "test leaked into the next; each test now gets its own `tmp_path`. We decided to keep the uploads "
         "bucket name in `config/storage.yml` instead of an environment variable.")
MIDDLE = "Let me look at the upload fixtures first."
FAILING = "pytest tests/test_upload.py"
ERROR = "E   FileExistsError: [Errno 17] File exists: '/tmp/uploads/a.png'"


def base(agent: str, event: str, repo: Path, session: str, transcript: Path | None) -> dict:
    data = {"session_id": session, "cwd": str(repo), "hook_event_name": NATIVE[agent][event],
            "transcript_path": str(transcript) if transcript else None}
    if agent == "codex":
        data.update(model="gpt-5-codex", turn_id="turn-1")
    return data


def transcript(agent: str, repo: Path, prompt: str, messages: list[str]) -> Path:
    """A transcript in the agent's own format holding one turn."""
    if agent == "claude":
        path = repo / ".claude-session.jsonl"
        rows = [{"type": "user", "message": {"role": "user", "content": prompt}}]
        rows += [{"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": m}]}}
                 for m in messages]
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    elif agent == "codex":
        path = repo / ".codex-rollout.jsonl"
        rows = [{"type": "session_meta", "payload": {"id": "s", "cwd": str(repo)}},
                {"type": "event_msg", "payload": {"type": "user_message", "message": prompt}}]
        rows += [{"type": "event_msg", "payload": {"type": "agent_message", "message": m}} for m in messages]
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    else:
        path = repo / ".gemini-chat.json"
        msgs = [{"type": "user", "content": prompt}] + [{"type": "gemini", "content": m} for m in messages]
        path.write_text(json.dumps({"sessionId": "s", "messages": msgs}))
    return path


def shell(agent: str, command: str, failed: bool, output: str) -> dict:
    """The post-tool payload fields of one shell call, as each agent sends them."""
    if agent == "claude":
        if failed:  # Claude Code: PostToolUseFailure with an error text
            return {"tool_name": "Bash", "tool_input": {"command": command}, "error": f"Exit code 1\n{output}",
                    "hook_event_name": "PostToolUseFailure"}
        return {"tool_name": "Bash", "tool_input": {"command": command},
                "tool_response": {"stdout": output, "stderr": "", "interrupted": False}}
    if agent == "codex":
        return {"tool_name": "Bash", "tool_input": {"command": command},
                "tool_response": f"Exit code: {1 if failed else 0}\nWall time: 0.4 seconds\nOutput:\n{output}"}
    text = f"Command: {command}\nStdout: {output}\nExit Code: {1 if failed else 0}"
    return {"tool_name": "run_shell_command", "tool_input": {"command": command},
            "tool_response": {"llmContent": text, "returnDisplay": output}}


def edit(agent: str, repo: Path, name: str) -> dict:
    if agent == "codex":
        return {"tool_name": "apply_patch", "tool_input": {"command": f"*** Begin Patch\n*** Update File: {name}\n"
                                                                      "@@\n-a\n+b\n*** End Patch\n"}}
    tool = "Edit" if agent == "claude" else "replace"
    return {"tool_name": tool, "tool_input": {"file_path": str(repo / name), "old_string": "a", "new_string": "b"}}


def session(agent: str, repo: Path, sid: str, prompt: str, messages: list[str], tools: list[dict]) -> None:
    """One session of one turn: start, prompt, tool calls, stop, end."""
    path = transcript(agent, repo, prompt, messages)
    calls = [("session-start", {"source": "startup"}), ("prompt", {"prompt": prompt})]
    calls += [("post-tool", t) for t in tools]
    last = {"prompt_response": messages[-1]} if agent == "gemini" else {"last_assistant_message": messages[-1]}
    calls += [("stop", {"stop_hook_active": False, **last}), ("session-end", {"reason": "exit"})]
    for event, extra in calls:
        run = hook(agent, event, {**base(agent, event, repo, sid, path), **extra})
        assert run.code == 0 and run.err == "", (event, run.err)


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_session_yields_its_episode_highlight_and_fix(agent, tmp_path, marm_home):
    repo = git_init(tmp_path / "shop")
    tools = [shell(agent, "grep -rn TODO src", False, ""),
             shell(agent, FAILING, True, ERROR),
             edit(agent, repo, "tests/conftest.py"),
             shell(agent, FAILING, False, "3 passed in 0.21s")]
    tools[0] = shell(agent, "grep -rn TODO src", True, "")  # a grep with no match: exit 1, no failure
    session(agent, repo, "sess-a", PROMPT, [MIDDLE, FINAL], tools)
    mine = [m for m in stored(marm_home) if m.session == "sess-a"]
    assert {(m.project, m.platform) for m in mine} == {(str(repo.resolve()), agent)}

    episodes = [m for m in mine if m.kind == "episode"]
    assert len(episodes) == 1 and episodes[0].source == "hook:stop"
    text = episodes[0].content
    assert text.startswith(f"Asked: {PROMPT}\nConcluded: Let me summarise.")
    assert "Changed: tests/conftest.py" in text
    assert "Failed: `pytest tests/test_upload.py`: FileExistsError" in text
    assert "grep" not in text  # the grep that found nothing is no failure

    highlights = [m for m in mine if m.kind in ("decision", "fix", "convention", "lesson")
                  and m.metadata.get("captured") == "highlight"]
    said = " ".join(m.content for m in highlights)
    assert "keep the uploads bucket name in `config/storage.yml`" in said
    assert "Let me look at the upload fixtures" not in said
    assert all(m.source == "hook:stop" for m in highlights)

    fixes = [m for m in mine if m.metadata.get("captured") == "fix"]
    assert len(fixes) == 1 and fixes[0].source == "hook:post-tool" and fixes[0].kind == "fix"
    assert fixes[0].content == ("FIX: `pytest tests/test_upload.py` failed with: FileExistsError: [Errno 17] File "
                                "exists: '/tmp/uploads/a.png'; it passed again after changes to tests/conftest.py.")


@pytest.mark.slow
def test_this_sessions_memories_are_not_injected_back_but_an_earlier_sessions_are(tmp_path, marm_home):
    repo = git_init(tmp_path / "shop")
    earlier = ("We decided the invoice PDF renderer runs in a separate worker queue, because rendering "
               "blocked the checkout request for seconds.")
    session("claude", repo, "sess-old", "make invoices faster", ["Looking at the renderer.", earlier], [])
    now = ("We decided the invoice emails are sent from the same worker queue as the invoice PDF renderer, "
           "so a failed render never sends an empty invoice.")
    path = transcript("claude", repo, "and the invoice emails?", ["Checking the mailer.", now])
    for event, extra in (("session-start", {"source": "startup"}), ("prompt", {"prompt": "and the invoice emails?"}),
                         ("stop", {"stop_hook_active": False, "last_assistant_message": now})):
        assert hook("claude", event, {**base("claude", event, repo, "sess-new", path), **extra}).code == 0
    assert {m.session for m in stored(marm_home) if "invoice" in m.content} == {"sess-old", "sess-new"}

    ask = "where do the invoice PDF renderer and the invoice emails run, on which worker queue?"
    for sid, wanted, unwanted in (("sess-new", "separate worker queue", "same worker queue"),
                                  ("sess-other", "same worker queue", None)):
        run = hook("claude", "prompt", {**base("claude", "prompt", repo, sid, None), "prompt": ask})
        injected = json.loads(run.out)["hookSpecificOutput"]["additionalContext"]
        assert wanted in injected
        if unwanted:  # sess-new wrote it: the agent has it in context already
            assert unwanted not in injected


@pytest.mark.slow
def test_a_turn_in_another_language_is_an_episode_without_highlights(tmp_path, marm_home):
    repo = git_init(tmp_path / "shop")
    final = ("Wir haben entschieden, die Sitzungen in signierten Cookies zu speichern, weil der Redis-Server "
             "zu oft ausgefallen ist. Die Tests laufen jetzt alle durch.")
    session("claude", repo, "sess-de", "Warum werden die Benutzer ständig abgemeldet?", [final], [])
    mine = [m for m in stored(marm_home) if m.session == "sess-de"]
    assert [m.kind for m in mine] == ["episode"]
    assert "signierten Cookies" in mine[0].content
    # and it is found again by its words
    run = hook("claude", "prompt", {**base("claude", "prompt", repo, "sess-x", None),
                                    "prompt": "Wo speichern wir die Sitzungen, in Cookies oder Redis?"})
    assert "signierten Cookies" in json.loads(run.out)["hookSpecificOutput"]["additionalContext"]
