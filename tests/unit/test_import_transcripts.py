"""`marm import --transcripts`: past sessions replayed through the live capture, on
transcripts written here in each agent's format, into a real store."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from marm import config
from marm.importers.transcripts import backfill
from marm.context import Ctx
from marm.ops.memory import write_memory
from marm.store import Store, memories
from marm.store.memories import Filter
from tests.helpers import git_init, run_marm

ANSWER = ("I read the worker.\n\n- We decided to switch the retry queue from Redis to SQLite "
          "instead of keeping two stores.\n\nCheck `if (a < b && c)` in retry.py too.")
HIGHLIGHT = "We decided to switch the retry queue from Redis to SQLite instead of keeping two stores."


def _claude(home: Path, cwd: Path, session: str = "c-1") -> Path:
    folder = home / ".claude" / "projects" / str(cwd).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {"type": "user", "sessionId": session, "cwd": str(cwd), "timestamp": "2025-03-01T10:00:00.000Z",
         "message": {"role": "user", "content": "Should the retry queue keep Redis?"}},
        {"type": "assistant", "sessionId": session, "cwd": str(cwd), "timestamp": "2025-03-01T10:00:04.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": str(cwd / "retry.py")}}]}},
        {"type": "assistant", "sessionId": session, "cwd": str(cwd), "timestamp": "2025-03-01T10:01:30.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]}},
    ]
    path = folder / f"{session}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _codex(home: Path, cwd: Path) -> Path:
    folder = home / ".codex" / "sessions" / "2025" / "04" / "02"
    folder.mkdir(parents=True)
    rows = [
        {"timestamp": "2025-04-02T08:00:00.000Z", "type": "session_meta", "payload": {"id": "x-1", "cwd": str(cwd)}},
        {"timestamp": "2025-04-02T08:00:01.000Z", "type": "event_msg",
         "payload": {"type": "user_message", "message": "why is the nightly build slow"}},
        {"timestamp": "2025-04-02T08:03:00.000Z", "type": "event_msg",
         "payload": {"type": "agent_message", "message": "The nightly build was slow because the cache key "
                                                         "included the date; it is keyed on the lock file now."}},
    ]
    path = folder / "rollout-2025-04-02T08-00-00-x-1.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _gemini(home: Path, cwd: Path) -> Path:
    folder = home / ".gemini" / "tmp" / "h1" / "chats"
    folder.mkdir(parents=True)
    path = folder / "session-2025-05-03.json"
    path.write_text(json.dumps({
        "sessionId": "g-1", "projectHash": hashlib.sha256(str(cwd).encode()).hexdigest(),
        "messages": [
            {"id": "1", "type": "user", "timestamp": "2025-05-03T09:00:00.000Z", "content": "what port does dev use"},
            {"id": "2", "type": "gemini", "timestamp": "2025-05-03T09:00:09.000Z",
             "content": "The dev server listens on port 5173, set in vite.config.ts."},
        ]}))
    return path


def _all(marm_home: Path) -> list:
    store = Store.open(config.database_path(marm_home))
    try:
        return memories.recent(store, Filter(all_projects=True, statuses=()), limit=1000)
    finally:
        store.close()


def _ctx(tmp_path: Path) -> Ctx:
    work = tmp_path / "elsewhere"
    work.mkdir(exist_ok=True)
    return Ctx(source="cli", cwd=work, env=dict(os.environ))


def test_three_agents_backfill_to_their_projects_with_their_times_and_a_second_import_adds_nothing(
        tmp_path, marm_home):
    home = Path(os.environ["HOME"])
    shop, build = git_init(tmp_path / "shop"), git_init(tmp_path / "build")
    _claude(home, shop)
    _codex(home, build)
    _gemini(home, shop)
    ctx = _ctx(tmp_path)
    try:
        first = backfill(ctx, [], None, False)
        again = backfill(ctx, [], None, False)
    finally:
        ctx.close()
    rows = _all(marm_home)
    by_text = {m.content: m for m in rows}
    episode = next(m for m in rows if m.kind == "episode" and "Redis" in m.content)
    assert episode.project == str(shop) and episode.session == "c-1" and episode.platform == "claude"
    assert episode.recorded_at == "2025-03-01T10:01:30.000000Z" and episode.source == "import"
    assert "if (a < b && c)" in episode.content and "Changed: retry.py" in episode.content
    assert by_text[HIGHLIGHT].kind == "decision" and by_text[HIGHLIGHT].project == str(shop)
    codex = next(m for m in rows if m.kind == "episode" and "nightly" in m.content)
    assert codex.project == str(build) and codex.platform == "codex"
    assert codex.recorded_at == "2025-04-02T08:03:00.000000Z"
    gemini = next(m for m in rows if m.kind == "episode" and "5173" in m.content)
    assert gemini.project == str(shop) and gemini.session == "g-1" and gemini.platform == "gemini"
    assert first.projects[str(shop)]["sessions"] == 2 and first.projects[str(build)]["turns"] == 1
    # The second import found every turn and added nothing.
    assert again.projects[str(shop)]["added"] == {} and again.projects[str(shop)]["skipped"] == {
        "turn captured already": 2}
    assert len(_all(marm_home)) == len(rows) == sum(sum(c["added"].values()) for c in first.projects.values())


def test_a_turn_captured_live_by_the_stop_hook_is_not_stored_again(tmp_path, marm_home):
    from tests.hooks.payloads import hook, payload

    shop = git_init(tmp_path / "shop")
    transcript = _claude(Path(os.environ["HOME"]), shop, session="live-1")
    data = {**payload("claude", "stop", shop), "session_id": "live-1", "transcript_path": str(transcript),
            "last_assistant_message": ANSWER}
    assert hook("claude", "stop", data, cwd=shop).code == 0
    live = _all(marm_home)
    assert {m.kind for m in live} >= {"episode", "decision"}
    ctx = _ctx(tmp_path)
    try:
        done = backfill(ctx, [str(transcript)], None, False)
    finally:
        ctx.close()
    assert sorted((m.id, m.content) for m in _all(marm_home)) == sorted((m.id, m.content) for m in live)
    assert done.projects[str(shop)]["added"] == {}
    # The texts match, not just the turn: the backfill's own episode text is the live one.
    from marm.capture import episode
    from marm.capture.transcript import turns
    from marm.ops.capture import record_of

    text = episode.text(record_of(turns(str(transcript))[0]), str(shop))
    assert text in {m.content for m in live}


def test_retracted_text_is_not_brought_back_and_since_and_dry_run(tmp_path, marm_home):
    shop = git_init(tmp_path / "shop")
    home = Path(os.environ["HOME"])
    _claude(home, shop)
    _codex(home, shop)
    ctx = Ctx(source="cli", cwd=shop, env=dict(os.environ))
    try:
        retracted = write_memory(ctx, HIGHLIGHT).id
        assert run_marm("retract", str(retracted), cwd=shop).code == 0
        dry = backfill(ctx, [], None, True)
        assert [m.id for m in _all(marm_home)] == [retracted]  # a dry run stores nothing
        assert dry.dry_run and dry.projects[str(shop)]["added"] == {"episode": 2, "highlight": 1}
        later = backfill(ctx, [], "2025-04-01T00:00:00.000000Z", False)
        assert later.projects[str(shop)]["skipped"]["before --since"] == 1
        done = backfill(ctx, [], None, False)
    finally:
        ctx.close()
    rows = _all(marm_home)
    assert done.projects[str(shop)]["skipped"]["retracted here"] == 1
    assert [m.status for m in rows if m.content == HIGHLIGHT] == ["retracted"]
    assert len([m for m in rows if m.status == "active" and m.kind == "episode"]) == 2
    assert any("Redis" in m.content for m in rows if m.kind == "episode")


def test_cli_import_transcripts_json(tmp_path, marm_home):
    shop = git_init(tmp_path / "shop")
    path = _codex(Path(os.environ["HOME"]), shop)
    run = run_marm("import", "--transcripts", str(path), "--json", cwd=tmp_path)
    assert run.code == 0, run.err
    doc = run.json()
    assert doc["source"] == "transcripts" and doc["projects"][str(shop)]["added"] == {"episode": 1, "highlight": 1}
    assert run_marm("import", "--transcripts", "--from", "marm", cwd=tmp_path).code == 2
    assert run_marm("import", cwd=tmp_path).code == 2


def test_a_dry_run_counts_a_turn_repeated_across_sessions_as_the_import_does(tmp_path, marm_home):
    """Each session is its own transaction, rolled back in a dry run; the same turn in a
    second session (and in a second file of the first session) is counted as the
    import counts it: added once, then already here (or captured already)."""
    home = Path(os.environ["HOME"])
    repo = git_init(tmp_path / "repo")
    (repo / "sub").mkdir()
    _claude(home, repo, session="c-1")
    _claude(home, repo, session="c-2")
    _claude(home, repo / "sub", session="c-1")  # the same session, in a second file
    ctx = _ctx(tmp_path)
    try:
        write_memory(ctx, "kept here before the import", project=str(repo))
        dry = backfill(ctx, [], None, True)
        after_dry = [m.content for m in _all(marm_home)]
        real = backfill(ctx, [], None, False)
    finally:
        ctx.close()
    assert dry.projects == real.projects
    counts = real.projects[str(repo)]
    assert counts["added"] == {"episode": 1, "highlight": 1}
    assert counts["skipped"]["already here"] == 2 and counts["skipped"]["turn captured already"] == 1
    assert after_dry == ["kept here before the import"]  # the dry run stored none of it
    texts = [m.content for m in _all(marm_home)]
    assert texts.count(HIGHLIGHT) == 1 and "kept here before the import" in texts
