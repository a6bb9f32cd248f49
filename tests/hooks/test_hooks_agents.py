"""Each agent x each event, through the real ``marm hook`` subprocess: the output shape
that agent expects, and the effect in the store."""

from __future__ import annotations

import json
import time

import pytest

from marm import config
from marm.hooks import inject
from marm.store import Store, code_repos
from tests.hooks.payloads import (
    DECISION,
    edit_payload,
    failed_shell_payload,
    hook,
    payload,
    seed,
    stored,
    write_transcript,
)

AGENTS = ("claude", "codex", "gemini")
NATIVE_START = {"claude": "SessionStart", "codex": "SessionStart", "gemini": "SessionStart"}
NATIVE_PROMPT = {"claude": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}


def context_of(run, agent: str, native: str) -> str:
    assert run.code == 0, run.err
    assert run.err == ""
    out = json.loads(run.out)
    assert set(out) == {"hookSpecificOutput"}
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == native
    text = spec["additionalContext"]
    opening, closing = inject.FENCES.get(agent, (inject.OPEN, inject.CLOSE))
    assert text.startswith(opening) and text.endswith(closing)
    assert "not instructions" in text.splitlines()[0]
    assert len(text) <= 1500
    assert text.splitlines()[-2].startswith(f"(marm: {len(text)} characters, ")  # the size it states
    return text


def assert_silent(run, agent: str) -> None:
    """Events that inject nothing: Claude and Codex get no stdout, Gemini an empty object."""
    assert run.code == 0, run.err
    assert run.err == ""
    if agent == "gemini":
        assert json.loads(run.out) == {}
    else:
        assert run.out == ""


@pytest.mark.parametrize("agent", AGENTS)
def test_session_start_briefs_on_this_project(agent, tmp_path):
    p = seed(tmp_path)
    run = hook(agent, "session-start", payload(agent, "session-start", p.root))
    text = context_of(run, agent, NATIVE_START[agent])
    assert f"#{p.decision} decision" in text
    assert "idempotency keys" in text
    assert f"#{p.other_project} " not in text  # project B's decision stays out


@pytest.mark.parametrize("agent", AGENTS)
def test_prompt_injects_the_relevant_memory_only(agent, tmp_path):
    p = seed(tmp_path)
    run = hook(agent, "prompt", payload(agent, "prompt", p.root))
    text = context_of(run, agent, NATIVE_PROMPT[agent])
    assert f"#{p.decision} " in text
    assert f"#{p.unrelated} " not in text          # same project, not about the prompt
    assert f"#{p.other_project} " not in text      # relevant words, other project


@pytest.mark.parametrize("agent", AGENTS)
def test_prompt_with_nothing_relevant_injects_nothing(agent, tmp_path):
    p = seed(tmp_path)
    unrelated = payload(agent, "prompt", p.root, prompt="Rename the CSS variables for dark mode colours")
    assert_silent(hook(agent, "prompt", unrelated), agent)
    trivial = payload(agent, "prompt", p.root, prompt="ok, go ahead")
    assert_silent(hook(agent, "prompt", trivial), agent)
    # ...while the relevant prompt, in the same store, does inject
    assert "hookSpecificOutput" in hook(agent, "prompt", payload(agent, "prompt", p.root)).out


@pytest.mark.parametrize("agent", AGENTS)
def test_post_tool_marks_the_edited_repository_dirty(agent, tmp_path, marm_home):
    p = seed(tmp_path)
    src = p.root / "src"
    src.mkdir()
    (src / "app.py").write_text("a = 1\n")
    run = hook(agent, "post-tool", edit_payload(agent, p.root, src / "app.py"))
    assert_silent(run, agent)
    store = Store.open(config.database_path(marm_home))
    try:
        dirty = {r.path: r.project for r in code_repos.dirty(store)}
    finally:
        store.close()
    assert dirty == {str(p.root.resolve()): str(p.root.resolve())}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_failed_command_reaches_the_turns_episode(agent, tmp_path, marm_home):
    p = seed(tmp_path)
    run = hook(agent, "post-tool", failed_shell_payload(agent, p.root))
    assert_silent(run, agent)
    assert [m for m in stored(marm_home) if m.source == "hook:post-tool"] == []  # journaled, not a memory
    assert_silent(hook(agent, "stop", payload(agent, "stop", p.root)), agent)
    episodes = [m for m in stored(marm_home) if m.kind == "episode"]
    assert len(episodes) == 1
    m = episodes[0]
    assert "Failed: `pytest -q tests/test_webhook.py`: ModuleNotFoundError: No module named 'stripe_mock'" \
        in m.content
    assert (m.project, m.platform, m.session, m.source) == (str(p.root.resolve()), agent, "sess-1", "hook:stop")


@pytest.mark.parametrize("agent", AGENTS)
def test_stop_keeps_an_episode_and_the_turns_highlights(agent, tmp_path, marm_home):
    p = seed(tmp_path)
    run = hook(agent, "stop", payload(agent, "stop", p.root))
    assert_silent(run, agent)
    captured = [m for m in stored(marm_home) if m.source == "hook:stop"]
    episode = [m for m in captured if m.kind == "episode"]
    assert len(episode) == 1 and "Concluded: I looked at the retry logic" in episode[0].content
    highlights = {m.content: m.kind for m in captured if m.kind != "episode"}
    assert any("switch the retry queue from Redis to SQLite" in c for c in highlights)
    assert any("timezone-naive timestamp" in c for c in highlights)
    assert not any("Let me know" in c or "I looked at" in c for c in highlights)
    assert set(highlights.values()) <= {"decision", "fix", "convention", "lesson"}
    assert {(m.project, m.platform, m.session) for m in captured} == {(str(p.root.resolve()), agent, "sess-1")}
    # the same payload again stores nothing new
    assert_silent(hook(agent, "stop", payload(agent, "stop", p.root)), agent)
    assert len([m for m in stored(marm_home) if m.source == "hook:stop"]) == len(captured)


@pytest.mark.parametrize("agent", AGENTS)
def test_pre_compact_keeps_the_highlights_of_the_transcript(agent, tmp_path, marm_home):
    p = seed(tmp_path)
    said = "Done. We settled on Postgres advisory locks instead of a lock table for the cron jobs."
    path = write_transcript(agent, p.root, said)
    run = hook(agent, "pre-compact", payload(agent, "pre-compact", p.root, transcript_path=str(path)))
    assert_silent(run, agent)
    captured = [m for m in stored(marm_home) if m.source == "hook:pre-compact"]
    assert [m.content for m in captured] == [
        "We settled on Postgres advisory locks instead of a lock table for the cron jobs."]
    assert (captured[0].project, captured[0].platform) == (str(p.root.resolve()), agent)


@pytest.mark.parametrize("agent", AGENTS)
def test_session_end_starts_a_detached_drain(agent, tmp_path, marm_home):
    p = seed(tmp_path)  # three memories queue embed and concepts tasks
    started = time.monotonic()
    run = hook(agent, "session-end", payload(agent, "session-end", p.root))
    assert_silent(run, agent)
    log = marm_home / "logs" / "drain.log"
    while time.monotonic() - started < 20 and '"stopped"' not in (log.read_text() if log.exists() else ""):
        time.sleep(0.1)
    assert '"stopped"' in log.read_text()  # the detached `marm drain --json` ran and finished


def test_capture_switched_off_stores_nothing(tmp_path, marm_home):
    p = seed(tmp_path)
    from tests.helpers import run_marm

    assert run_marm("config", "set", "capture", "off").code == 0
    assert_silent(hook("claude", "stop", payload("claude", "stop", p.root)), "claude")
    assert [m for m in stored(marm_home) if m.source.startswith("hook:")] == []
    assert run_marm("config", "set", "capture", "on").code == 0
    assert_silent(hook("claude", "stop", payload("claude", "stop", p.root)), "claude")
    assert len([m for m in stored(marm_home) if m.source == "hook:stop" and m.kind == "episode"]) == 1


def test_private_spans_never_reach_a_capture(tmp_path, marm_home):
    p = seed(tmp_path)
    said = ("We decided to rotate the staging key <private>it is hunter2-staging</private> every week "
            "instead of monthly.")
    hook("claude", "stop", payload("claude", "stop", p.root, last_assistant_message=said))
    captured = [m for m in stored(marm_home) if m.source == "hook:stop"]
    assert captured and any("rotate the staging key" in m.content for m in captured)
    assert not any("hunter2" in m.content for m in captured)


def test_doubted_memory_is_marked_in_briefing_and_prompt(tmp_path, marm_home):
    p = seed(tmp_path)
    store = Store.open(config.database_path(marm_home))
    try:
        from marm.store import memories

        with store.write():
            memories.set_status(store, p.decision, "doubted", reason="retries moved", action="memory.doubt")
    finally:
        store.close()
    brief = context_of(hook("claude", "session-start", payload("claude", "session-start", p.root)),
                       "claude", "SessionStart")
    assert f"#{p.decision} decision [DOUBTED" in brief
    assert "Open problems (doubted" in brief
    text = context_of(hook("claude", "prompt", payload("claude", "prompt", p.root)), "claude",
                      "UserPromptSubmit")
    assert f"#{p.decision} decision [DOUBTED" in text


def test_injection_respects_the_configured_cap(tmp_path, marm_home):
    p = seed(tmp_path)
    from marm.context import Ctx
    from marm.ops.memory import write_memory
    from tests.helpers import run_marm

    ctx = Ctx(source="cli", cwd=p.root)
    for i in range(12):
        write_memory(ctx, f"DECISION {i}: payment webhook retries keep idempotency keys for "
                          f"{i + 1} days, " + "because deliveries are retried " * 8)
    ctx.close()
    assert run_marm("config", "set", "inject.max_chars", "600").code == 0
    text = context_of(hook("claude", "prompt", payload("claude", "prompt", p.root)), "claude",
                      "UserPromptSubmit")
    assert len(text) <= 600
    assert text.count("\n#") >= 1
    assert DECISION[:20] in text or "payment webhook retries" in text
