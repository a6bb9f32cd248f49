"""A hook never blocks the agent: bad input or a broken store -> exit 0, nothing on
stdout, exactly one line on stderr."""

from __future__ import annotations

import json
import sys

import pytest

from tests.hooks.payloads import hook, payload, seed, stored


def assert_failed_open(run) -> None:
    assert run.code == 0
    assert run.out == ""
    lines = run.err.splitlines()
    assert len(lines) == 1, run.err
    assert lines[0].startswith("marm hook: ")


@pytest.mark.parametrize("agent", ["claude", "gemini"])
@pytest.mark.parametrize("raw", ["{not json", "", "   \n", "[1, 2]", "\"a string\""])
def test_malformed_or_empty_input(agent, raw, tmp_path):
    assert_failed_open(hook(agent, "prompt", raw, cwd=tmp_path))


def test_invalid_utf8(tmp_path):
    assert_failed_open(hook("claude", "stop", b'{"cwd": "\xff\xfe"}', cwd=tmp_path))


def test_missing_or_vanished_cwd(tmp_path, marm_home):
    p = seed(tmp_path)
    no_cwd = payload("claude", "stop", p.root)
    del no_cwd["cwd"]
    assert_failed_open(hook("claude", "stop", no_cwd, cwd=p.root))
    gone = {**payload("claude", "stop", p.root), "cwd": str(tmp_path / "deleted-dir")}
    assert_failed_open(hook("claude", "stop", gone, cwd=p.root))
    assert [m for m in stored(marm_home) if m.source == "hook:stop"] == []
    # the same payload with its cwd is captured: the failures above were about the cwd
    assert hook("claude", "stop", payload("claude", "stop", p.root)).code == 0
    assert len([m for m in stored(marm_home) if m.source == "hook:stop" and m.kind == "episode"]) == 1


@pytest.mark.parametrize("event", ["session-start", "prompt", "stop"])
def test_unwritable_data_directory(event, tmp_path):
    p = seed(tmp_path)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data directory should be")
    run = hook("claude", event, payload("claude", event, p.root), env={"MARM_HOME": str(blocker / "home")})
    assert_failed_open(run)


def test_corrupt_database(tmp_path, marm_home):
    p = seed(tmp_path)
    (marm_home / "marm.db").write_bytes(b"this is not sqlite" * 100)
    for suffix in ("-wal", "-shm"):
        (marm_home / f"marm.db{suffix}").unlink(missing_ok=True)
    assert_failed_open(hook("claude", "prompt", payload("claude", "prompt", p.root)))


def test_unknown_event_or_agent(tmp_path):
    p = seed(tmp_path)
    assert_failed_open(hook("claude", "teardown", payload("claude", "stop", p.root)))
    assert_failed_open(hook("copilot", "stop", payload("claude", "stop", p.root)))


def test_hook_imports_no_heavy_library(tmp_path):
    """The lexical hook path loads neither models nor parsers nor the MCP SDK."""
    import subprocess

    p = seed(tmp_path)
    probe = (
        "import sys, runpy; sys.argv = ['marm', 'hook', 'prompt', '--agent', 'claude'];\n"
        "try:\n    runpy.run_module('marm', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('numpy', 'fastembed', 'onnxruntime', 'spacy', 'tree_sitter', 'mcp', 'typer')"
        " if m in sys.modules]\nprint(heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], input=json.dumps(payload("claude", "prompt", p.root)),
                          capture_output=True, text=True, env={**__import__("os").environ,
                                                               "MARM_INJECT_RECALL": "lexical"})
    assert proc.returncode == 0, proc.stderr
    assert "hookSpecificOutput" in proc.stdout
    assert proc.stderr.strip() == "[]"


def test_payload_as_an_argument(tmp_path):
    """``--payload`` (the op's parameter) works like standard input. The prompt is recalled
    by its words (``MARM_INJECT_RECALL=lexical``, as the heavy-import probe above): what is
    checked is where the payload comes from, and a model load on a loaded machine took this
    hook past its 5 s budget (it gave up, failing open as it should, and this test failed)."""
    p = seed(tmp_path)
    from tests.helpers import run_marm

    run = run_marm("hook", "prompt", "--agent", "codex", "--payload", json.dumps(payload("codex", "prompt", p.root)),
                   env={"MARM_INJECT_RECALL": "lexical"})
    assert run.code == 0 and run.err == ""
    assert f"#{p.decision} " in json.loads(run.out)["hookSpecificOutput"]["additionalContext"]
    assert_failed_open(run_marm("hook", "prompt", "--bogus", input="{}"))


def test_a_locked_store_gives_up_within_the_budget(tmp_path, marm_home):
    """Another process holds the write lock: the hook waits no longer than its budget
    (post-tool: 3 s), then fails open."""
    import time

    from marm import config
    from marm.hooks.run import BUDGET
    from marm.store import Store
    from tests.hooks.payloads import edit_payload

    p = seed(tmp_path)
    (p.root / "a.py").write_text("a = 1\n")
    store = Store.open(config.database_path(marm_home))
    try:
        with store.write():
            started = time.monotonic()
            run = hook("claude", "post-tool", edit_payload("claude", p.root, p.root / "a.py"))
            took = time.monotonic() - started
    finally:
        store.close()
    assert_failed_open(run)
    assert BUDGET["post-tool"] - 0.5 < took < BUDGET["post-tool"] + 3
    # with the lock free, the same payload marks the repository
    assert hook("claude", "post-tool", edit_payload("claude", p.root, p.root / "a.py")).err == ""
