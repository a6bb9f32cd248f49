"""Per-project control, through real ``marm hook`` subprocesses on one shared store: a
repository whose ``.marm.toml`` says ``memory = false`` (or ``capture``/``inject =
false``) is left alone while its sibling is served; ``mode = opt-in`` serves only the
repositories that ask; the home directory is never a project unless asked; a project
setting beats the global one and ``config get`` says where each value comes from (``config`` and
``status`` run in this process, ``invoke_marm``; the hooks always as processes)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from marm.hooks import inject
from tests.helpers import git_init, invoke_marm
from tests.hooks.payloads import PROMPT, hook, payload, seed, stored


def injected(run) -> str:
    """The context a Claude prompt/session-start hook injected ('' for none)."""
    assert run.code == 0, run.err
    if not run.out.strip():
        return ""
    return json.loads(run.out)["hookSpecificOutput"]["additionalContext"]


def turn(repo: Path, session: str, env: dict | None = None) -> tuple[str, int]:
    """One turn in ``repo``: the prompt hook (what it injected) then the stop hook (how
    many memories the store gained). The prompt is recalled by its words: what these
    tests check is whether a project is served at all, and no hook loads the model, which
    on a loaded machine took prompts near their 5 s budget (the recall by meaning has
    its own hook tests, test_hooks_agents and test_hooks_sessions)."""
    before = len(stored(Path(os.environ["MARM_HOME"])))
    asked = {"MARM_INJECT_RECALL": "lexical", **(env or {})}
    text = injected(hook("claude", "prompt", payload("claude", "prompt", repo, session_id=session), env=asked))
    stop = hook("claude", "stop", payload("claude", "stop", repo, session_id=session), env=env)
    assert stop.code == 0 and stop.out == "", stop.err
    return text, len(stored(Path(os.environ["MARM_HOME"]))) - before


def test_memory_false_repository_gets_nothing_while_its_sibling_does(tmp_path):
    p = seed(tmp_path)
    # Before the file: the other repository is served (its own memory matches the prompt).
    text, gained = turn(p.other, "s-other-before")
    assert f"#{p.other_project} " in text and gained >= 1
    (p.other / ".marm.toml").write_text("# this repository keeps marm out\nmemory = false\n")
    count = len(stored(Path(os.environ["MARM_HOME"])))

    quiet = hook("claude", "prompt", payload("claude", "prompt", p.other, session_id="s-off"),
                 env={"MARM_DEBUG": "1"})
    assert quiet.code == 0 and quiet.out == ""
    assert "inactive" in quiet.err and "memory = off (project file .marm.toml)" in quiet.err
    text, gained = turn(p.other, "s-off")
    assert (text, gained) == ("", 0)
    start = hook("claude", "session-start", payload("claude", "session-start", p.other, session_id="s-off"))
    assert (start.code, start.out) == (0, "")
    assert len(stored(Path(os.environ["MARM_HOME"]))) == count  # nothing stored at all

    # The sibling on the same store: injected and captured as before.
    text, gained = turn(p.root, "s-shop")
    assert f"#{p.decision} " in text and f"#{p.other_project} " not in text
    assert gained >= 1
    assert any(m.project == str(p.root.resolve()) and m.source == "hook:stop"
               for m in stored(Path(os.environ["MARM_HOME"])))
    status = invoke_marm("status", "--json", cwd=p.other).json()
    assert status["active"] is False and ".marm.toml" in status["activity"]
    assert invoke_marm("status", "--json", cwd=p.root).json()["active"] is True


def test_capture_false_and_inject_false_each_turn_off_one_half(tmp_path):
    p = seed(tmp_path)
    (p.other / ".marm.toml").write_text("capture = false\n")
    (p.root / ".marm.toml").write_text("inject = false\n")
    text, gained = turn(p.other, "s-a")
    assert f"#{p.other_project} " in text and gained == 0      # injects, keeps nothing
    text, gained = turn(p.root, "s-b")
    assert text == "" and gained >= 1                           # keeps, injects nothing
    got = invoke_marm("config", "get", "capture", "--json", cwd=p.other).json()
    assert got["values"] == {"capture": "off"} and got["sources"] == {"capture": "project file .marm.toml"}


def test_opt_in_mode_serves_only_repositories_that_say_memory_true(tmp_path):
    p = seed(tmp_path)
    assert invoke_marm("config", "set", "mode", "opt-in").code == 0
    (p.root / ".marm.toml").write_text("memory = true\n")
    text, gained = turn(p.root, "s-in")
    assert f"#{p.decision} " in text and gained >= 1
    quiet = hook("claude", "prompt", payload("claude", "prompt", p.other), env={"MARM_DEBUG": "1"})
    assert quiet.out == "" and "mode = opt-in (global)" in quiet.err
    text, gained = turn(p.other, "s-out")
    assert (text, gained) == ("", 0)
    # A repository can be let in from the command line too, without a file.
    assert invoke_marm("config", "set", "memory", "on", "--project", ".", cwd=p.other).code == 0
    text, gained = turn(p.other, "s-out-2")
    assert f"#{p.other_project} " in text and gained >= 1


def test_home_directory_is_never_a_project_unless_asked(tmp_path):
    p = seed(tmp_path)
    home = git_init(Path(os.environ["HOME"]))  # a dotfiles repository at ~
    quiet = hook("claude", "prompt", payload("claude", "prompt", home), env={"MARM_DEBUG": "1"})
    assert quiet.out == "" and "the home directory" in quiet.err
    text, gained = turn(home, "s-home")
    assert (text, gained) == ("", 0)
    assert f"#{p.decision} " in turn(p.root, "s-shop")[0]       # a real repository still is
    (home / ".marm.toml").write_text("memory = true\n")          # asked for: served
    text, gained = turn(home, "s-home-2")
    assert gained >= 1


def test_project_setting_beats_global_and_config_get_says_so(tmp_path):
    p = seed(tmp_path)
    third = git_init(tmp_path / "third")
    assert invoke_marm("config", "set", "capture", "off", "--global").code == 0
    assert invoke_marm("config", "set", "capture", "on", "--project", ".", cwd=p.root).code == 0
    assert invoke_marm("config", "set", "inject.max_chars", "900", "--project", str(p.root)).code == 0
    env = {"MARM_INJECT_MAX_CHARS": "500"}
    here = invoke_marm("config", "get", "--json", cwd=p.root, env=env).json()
    assert here["values"]["capture"] == "on" and here["sources"]["capture"] == "project"
    assert here["values"]["inject.max_chars"] == "900" and here["sources"]["inject.max_chars"] == "project"
    there = invoke_marm("config", "get", "--json", cwd=p.other, env=env).json()
    assert there["values"]["capture"] == "off" and there["sources"]["capture"] == "global"
    assert there["sources"]["inject.max_chars"] == "environment MARM_INJECT_MAX_CHARS"
    assert invoke_marm("config", "get", "inject", "--json", cwd=third).json()["sources"] == {"inject": "default"}
    text = invoke_marm("config", "get", "capture", "--text", cwd=p.root).out
    assert "capture = on   (project)" in text
    # The hooks follow it: the project captures, its sibling (global: off) does not.
    assert turn(p.root, "s-1")[1] >= 1
    assert turn(p.other, "s-2")[1] == 0
    # A global-only setting refuses --project; 'default' drops the project's value.
    assert invoke_marm("config", "set", "mode", "opt-in", "--project", ".", cwd=p.root).code != 0
    assert invoke_marm("config", "set", "capture", "default", "--project", ".", cwd=p.root).code == 0
    again = invoke_marm("config", "get", "capture", "--json", cwd=p.root).json()
    assert again["sources"] == {"capture": "global"} and again["values"] == {"capture": "off"}


def test_injected_block_in_a_real_hook_states_its_size(tmp_path):
    p = seed(tmp_path)
    text = injected(hook("claude", "prompt", payload("claude", "prompt", p.root)))
    assert text.endswith(inject.CLOSE) and PROMPT
    assert text.splitlines()[-2] == f"(marm: {len(text)} characters, 1 memory)"
