"""``marm init``: merges into the user's own agent configs, is idempotent, and
``--uninstall`` restores the original files byte for byte. ``marm init`` runs in this
process (``invoke_marm``); the command it installs runs as the agent would run it, through
a real shell (``test_project_scope_and_the_installed_command_runs``)."""

from __future__ import annotations

import json
import subprocess

from pathlib import Path

from marm.configfile import load_toml
from marm.install import hand_files, is_marm
from tests.helpers import invoke_marm
from tests.hooks.payloads import payload, seed

REPO = Path(__file__).resolve().parents[2]

# The user's own files, in their own formatting (4-space indent, their key order).
CLAUDE = """{
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PostToolUse": [
            {"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write \\"$FILE\\""}]}
        ],
        "SessionStart": [{"hooks": [{"type": "command", "command": "echo hello"}]}]
    }
}
"""
CLAUDE_STATE = '{"numStartups": 3, "mcpServers": {"github": {"command": "gh-mcp", "args": []}}}\n'
CODEX_HOOKS = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}\n'
CODEX_TOML = 'model = "gpt-5-codex"\n\n[mcp_servers.github]\ncommand = "gh-mcp"\n'
GEMINI = '{\n  "theme": "GitHub",\n  "hooks": {"AfterTool": [{"matcher": "write_file", "hooks": [{"name": "lint", "type": "command", "command": "eslint ."}]}]}\n}\n'  # noqa: E501


def user_home(tmp_path: Path) -> tuple[Path, dict[Path, str]]:
    home = tmp_path / "home"
    files = {
        home / ".claude" / "settings.json": CLAUDE,
        home / ".claude.json": CLAUDE_STATE,
        home / ".codex" / "hooks.json": CODEX_HOOKS,
        home / ".codex" / "config.toml": CODEX_TOML,
        home / ".gemini" / "settings.json": GEMINI,
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return home, files


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def init(home: Path, *args: str, cwd: Path | None = None):
    run = invoke_marm("init", *args, "--json", env={"HOME": str(home)}, cwd=cwd or home)
    assert run.code == 0, run.err
    return run.json()


def marm_commands(data: dict) -> dict[str, list[str]]:
    return {event: [h["command"] for g in groups for h in g["hooks"] if is_marm(h)]
            for event, groups in data.get("hooks", {}).items()}


def test_init_merges_is_idempotent_and_uninstalls_byte_for_byte(tmp_path):
    home, originals = user_home(tmp_path)
    result = init(home, "--claude", "--codex", "--gemini", "--mcp")
    actions = {Path(c["path"]).relative_to(home).as_posix(): c["action"] for c in result["changes"]}
    assert actions == {
        ".claude/settings.json": "updated", ".claude.json": "updated",
        ".claude/skills/marm/SKILL.md": "created",
        ".codex/hooks.json": "updated", ".codex/config.toml": "updated",
        ".codex/skills/marm/SKILL.md": "created",
        ".gemini/settings.json": "updated", ".gemini/skills/marm/SKILL.md": "created",
    }

    claude = json.loads((home / ".claude/settings.json").read_text())
    assert claude["model"] == "opus" and claude["permissions"] == {"allow": ["Bash(npm test:*)"]}
    # the user's own hooks are still there, untouched, before marm's
    assert claude["hooks"]["PostToolUse"][0] == {
        "matcher": "Write", "hooks": [{"type": "command", "command": 'prettier --write "$FILE"'}]}
    assert claude["hooks"]["SessionStart"][0] == {"hooks": [{"type": "command", "command": "echo hello"}]}
    commands = marm_commands(claude)
    assert set(commands) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure",
                             "Stop", "PreCompact", "SessionEnd"}
    assert commands["PostToolUseFailure"][0].endswith("hook post-tool --agent claude")
    assert all(len(c) == 1 for c in commands.values())
    assert commands["Stop"][0].endswith("hook stop --agent claude")
    # a failed tool call comes only as PostToolUseFailure: the post-tool handler takes it
    assert commands["PostToolUseFailure"][0].endswith("hook post-tool --agent claude")
    assert claude["hooks"]["PostToolUseFailure"][0]["matcher"] == "Bash"
    assert claude["hooks"]["PostToolUse"][1]["matcher"] == "Edit|MultiEdit|Write|NotebookEdit|Bash"

    state = json.loads((home / ".claude.json").read_text())
    assert state["numStartups"] == 3 and "github" in state["mcpServers"]
    assert state["mcpServers"]["marm"]["args"][-1] == "mcp"

    codex = json.loads((home / ".codex/hooks.json").read_text())
    assert codex["hooks"]["Stop"][0] == {"hooks": [{"type": "command", "command": "notify-send done"}]}
    assert marm_commands(codex)["PostToolUse"][0].endswith("hook post-tool --agent codex")
    toml = (home / ".codex/config.toml").read_text()
    assert "[mcp_servers.marm]" in toml and toml.endswith("[mcp_servers.marm]\ncommand = " + toml.split("[mcp_servers.marm]\ncommand = ")[1])
    assert load_toml(toml)["mcp_optional_startup_grace_ms"] == 5000  # Codex waits for marm's tools
    assert CODEX_TOML.split("\n\n")[1] in toml and toml.startswith('model = "gpt-5-codex"\n')
    assert any("/hooks" in n for n in result["notes"]) and any("trust" in n and "Gemini" in n for n in result["notes"])

    gemini = json.loads((home / ".gemini/settings.json").read_text())
    assert gemini["theme"] == "GitHub"
    assert gemini["hooks"]["AfterTool"][0]["hooks"][0]["name"] == "lint"
    assert set(marm_commands(gemini)) == {"SessionStart", "BeforeAgent", "AfterTool", "AfterAgent",
                                          "PreCompress", "SessionEnd"}
    assert gemini["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"] == 10000  # milliseconds
    assert gemini["mcpServers"]["marm"]["args"][-1] == "mcp"

    skill = (REPO / "skills/marm/SKILL.md").read_text()
    assert (home / ".claude/skills/marm/SKILL.md").read_text() == skill
    assert (home / ".claude/settings.json.marm-backup").read_text() == CLAUDE

    # twice changes nothing
    installed = snapshot(home)
    again = init(home, "--claude", "--codex", "--gemini", "--mcp")
    assert {c["action"] for c in again["changes"]} == {"unchanged"}
    assert snapshot(home) == installed

    # a dry run of the uninstall says what it would do and does nothing
    dry = init(home, "--claude", "--codex", "--gemini", "--uninstall", "--dry-run")
    assert {c["action"] for c in dry["changes"]} == {"restored", "deleted"}
    assert snapshot(home) == installed

    removed = init(home, "--claude", "--codex", "--gemini", "--uninstall")
    assert {c["action"] for c in removed["changes"]} == {"restored", "deleted"}
    for path, text in originals.items():
        assert path.read_bytes() == text.encode(), path
    assert not (home / ".claude/skills/marm").exists()


def test_dry_run_changes_nothing(tmp_path):
    home, _ = user_home(tmp_path)
    before = snapshot(home)
    result = init(home, "--claude", "--dry-run")
    assert result["dry_run"] is True
    assert {c["action"] for c in result["changes"]} == {"updated", "created"}
    assert snapshot(home) == before
    text = invoke_marm("init", "--claude", "--dry-run", "--text", env={"HOME": str(home)}, cwd=home)
    assert "would update" in text.out and ".claude/settings.json" in text.out


def test_uninstall_after_the_user_edited_keeps_their_edit(tmp_path):
    home, _ = user_home(tmp_path)
    init(home, "--claude")
    path = home / ".claude/settings.json"
    data = json.loads(path.read_text())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "say finished"}]})
    path.write_text(json.dumps(data))
    result = init(home, "--claude", "--uninstall")
    assert {c["path"]: c["action"] for c in result["changes"]}[str(path)] == "updated"
    after = json.loads(path.read_text())
    assert marm_commands(after) == {k: [] for k in after["hooks"]}
    assert after["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "say finished"}]}]
    assert after["hooks"]["PostToolUse"][0]["matcher"] == "Write"
    assert after["model"] == "opus"


def test_project_scope_and_the_installed_command_runs(tmp_path, marm_home):
    home = tmp_path / "home"
    home.mkdir()
    p = seed(tmp_path)
    result = init(home, "--claude", "--project", cwd=p.root / ".")
    local = p.root / ".claude" / "settings.local.json"
    assert {c["path"]: c["action"] for c in result["changes"]}[str(local)] == "created"
    command = marm_commands(json.loads(local.read_text()))["SessionStart"][0]
    # the agent runs the command through a shell, without our virtualenv on PATH
    proc = subprocess.run(["sh", "-c", command], input=json.dumps(payload("claude", "session-start", p.root)),
                          capture_output=True, text=True, cwd=p.root,
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin", "MARM_HOME": str(marm_home)})
    assert proc.returncode == 0 and proc.stderr == ""
    assert f"#{p.decision} decision" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    init(home, "--claude", "--project", "--uninstall", cwd=p.root)
    assert not local.exists()


def test_no_agent_named_and_none_found(tmp_path):
    home = tmp_path / "empty-home"
    home.mkdir()
    run = invoke_marm("init", env={"HOME": str(home)}, cwd=home)
    assert run.code == 2 and "--claude" in run.err
    (home / ".gemini").mkdir()
    found = init(home, "--dry-run")
    assert [c["agents"] for c in found["changes"]] == ["gemini", "gemini"]


def test_hand_wiring_files_are_current():
    for rel, text in hand_files().items():
        assert (REPO / "hooks" / rel).read_text() == text, f"regenerate hooks/{rel}"



def test_toml_without_final_newline_restores_exactly(tmp_path):
    home = tmp_path / "home"
    toml = home / ".codex" / "config.toml"
    toml.parent.mkdir(parents=True)
    toml.write_bytes(b'model = "o4"\n[mcp_servers.x]\ncommand = "x"')
    init(home, "--codex", "--mcp")
    assert "[mcp_servers.marm]" in toml.read_text()
    assert init(home, "--codex", "--mcp")["changes"][0]["action"] == "unchanged"
    init(home, "--codex", "--uninstall")
    assert toml.read_bytes() == b'model = "o4"\n[mcp_servers.x]\ncommand = "x"'
    assert not (home / ".codex" / "hooks.json").exists()


def test_a_file_marm_cannot_read_changes_nothing_anywhere(tmp_path):
    home, _ = user_home(tmp_path)
    (home / ".gemini" / "settings.json").write_text('{\n  // a comment\n  "theme": "x" oops\n}\n')
    before = snapshot(home)
    run = invoke_marm("init", "--claude", "--codex", "--gemini", env={"HOME": str(home)}, cwd=home)
    assert run.code == 2
    assert ".gemini/settings.json" in run.err and "not valid JSON" in run.err
    assert snapshot(home) == before


# --- every form an existing marm entry can take ------------------------------------------

CODEX_FORMS = {
    "table": '# my codex\nmodel = "o4"\n\n[mcp_servers.marm]\ncommand = "old-marm"\nargs = ["mcp"]\n'
             'startup_timeout_sec = 20 # mine\n\n[mcp_servers.other]\ncommand = "x"\n',
    "inline": '# my codex\nmodel = "o4"\nmcp_servers = { marm = { command = "old-marm", args = ["mcp"] },'
              ' other = { command = "x" } }\n',
    "dotted": '# my codex\nmodel = "o4"\nmcp_servers.marm.command = "old-marm"\nmcp_servers.marm.args = ["mcp"]\n'
              'mcp_servers.other.command = "x"\n',
    "dotted-in-table": '# my codex\nmodel = "o4"\n\n[mcp_servers]\nmarm.command = "old-marm"\n'
                       'other.command = "x" # keep me\n',
}


def test_codex_updates_marm_in_whatever_form_it_has_and_never_adds_a_second(tmp_path):
    for form, text in CODEX_FORMS.items():
        home = tmp_path / form
        toml = home / ".codex" / "config.toml"
        toml.parent.mkdir(parents=True)
        toml.write_text(text)
        init(home, "--codex", "--mcp")
        after = toml.read_text()
        data = load_toml(after)  # it parses (a duplicate key would raise)
        assert set(data["mcp_servers"]) == {"marm", "other"}, form
        assert data["mcp_servers"]["marm"]["command"].endswith("marm"), form
        assert data["mcp_servers"]["marm"]["command"] != "old-marm", form
        assert data["mcp_servers"]["marm"]["args"][-1] == "mcp", form
        assert data["mcp_servers"]["other"] == {"command": "x"} and data["model"] == "o4", form
        assert after.startswith("# my codex\n"), form
        # updated in place, in its own form: no second definition beside it
        assert after.count("[mcp_servers.marm]") == text.count("[mcp_servers.marm]"), (form, after)
        if form == "table":
            assert data["mcp_servers"]["marm"]["startup_timeout_sec"] == 20 and "# mine" in after
        if form == "dotted-in-table":
            assert "# keep me" in after
        assert init(home, "--codex", "--mcp")["changes"][1]["action"] == "unchanged"
        init(home, "--codex", "--uninstall")
        assert toml.read_text() == text, form


COMMENTED = """{
  // the user's own notes
  "theme": "GitHub", /* inline */
  "hooks": {
    "AfterTool": [
      {"matcher": "write_file", "hooks": [{"name": "lint", "type": "command", "command": "eslint ."}]},
    ],
  },
  "mcpServers": {
    "marm": {"command": "old-marm", "args": ["mcp"], "trust": true}, // marm, by hand
  },
}
"""


def test_json_with_comments_is_edited_in_place(tmp_path):
    from marm.configfile import load_json

    home = tmp_path / "home"
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(COMMENTED)
    init(home, "--gemini", "--mcp")
    after = settings.read_text()
    assert "// the user's own notes" in after and "/* inline */" in after and "// marm, by hand" in after
    data = load_json(after)
    assert data["theme"] == "GitHub"
    assert data["hooks"]["AfterTool"][0]["hooks"][0]["name"] == "lint"
    assert len(marm_commands(data)["AfterTool"]) == 1
    assert list(data["mcpServers"]) == ["marm"]
    assert data["mcpServers"]["marm"]["trust"] is True  # the user's own key stays
    assert data["mcpServers"]["marm"]["command"] != "old-marm"
    again = init(home, "--gemini", "--mcp")
    assert {c["action"] for c in again["changes"]} == {"unchanged"}
    init(home, "--gemini", "--uninstall")
    assert settings.read_text() == COMMENTED


def test_claude_config_dir_and_gemini_cli_home_are_honoured(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    claude_dir, gemini_root = tmp_path / "claude-config", tmp_path / "gemini-root"
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude_dir), "GEMINI_CLI_HOME": str(gemini_root)}
    run = invoke_marm("init", "--claude", "--gemini", "--mcp", "--json", env=env, cwd=home)
    assert run.code == 0, run.err
    paths = {c["path"] for c in run.json()["changes"]}
    assert str(claude_dir / "settings.json") in paths and str(claude_dir / ".claude.json") in paths
    assert str(gemini_root / ".gemini" / "settings.json") in paths
    assert json.loads((claude_dir / ".claude.json").read_text())["mcpServers"]["marm"]["args"][-1] == "mcp"
    assert not (home / ".claude.json").exists() and not (home / ".claude").exists()
    assert not (home / ".gemini").exists()
    removed = invoke_marm("init", "--claude", "--gemini", "--uninstall", "--json", env=env, cwd=home)
    assert removed.code == 0, removed.err
    # uninstall removes what it created, folders included
    assert not claude_dir.exists() and not gemini_root.exists()


def test_rerun_after_the_agent_rewrote_its_file_changes_nothing_and_keeps_the_first_backup(tmp_path):
    home, originals = user_home(tmp_path)
    init(home, "--claude", "--mcp")
    state = home / ".claude.json"
    backup = home / ".claude.json.marm-backup"
    assert backup.read_text() == CLAUDE_STATE
    # Claude rewrites its state file: other indentation, no final newline, a new key
    data = json.loads(state.read_text())
    data["numStartups"] = 4
    state.write_text(json.dumps(data, indent=2))
    rewritten = state.read_bytes()
    again = init(home, "--claude", "--mcp")
    assert {c["path"]: c["action"] for c in again["changes"]}[str(state)] == "unchanged"
    assert state.read_bytes() == rewritten
    assert backup.read_text() == CLAUDE_STATE  # the first backup, not overwritten


def test_uninstall_reports_only_files_that_exist(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    init(home, "--codex")
    removed = init(home, "--codex", "--uninstall")
    assert {Path(c["path"]).name: c["action"] for c in removed["changes"]} == {
        "hooks.json": "deleted", "SKILL.md": "deleted"}  # no config.toml: it never existed
    assert not (home / ".codex").exists()
    assert init(home, "--codex", "--uninstall")["changes"] == []


def test_doctor_checks_the_trust_step_init_prints(tmp_path):
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    result = init(home, "--gemini", "--codex")
    assert any("/hooks" in n for n in result["notes"]) and any("Gemini" in n for n in result["notes"])
    env = {"HOME": str(home)}

    def checks() -> dict[str, dict]:
        run = invoke_marm("doctor", "--json", env=env, cwd=work)
        return {c["name"]: c for c in run.json()["checks"]}

    before = checks()
    assert before["gemini trust"]["ok"] is False and "trust" in before["gemini trust"]["advice"]
    assert before["codex hook trust"]["ok"] is False and "/hooks" in before["codex hook trust"]["advice"]
    assert before["database"]["ok"] is True
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(work): "TRUST_FOLDER"}))
    with (home / ".codex" / "config.toml").open("a") as f:
        f.write(f'\n[hooks.state."{home}/.codex/hooks.json:session_start:0:0"]\ntrusted_hash = "sha256:x"\n')
    after = checks()
    assert after["gemini trust"]["ok"] is True and after["codex hook trust"]["ok"] is True


def test_init_reads_each_settings_file_once(tmp_path, monkeypatch):
    """A dozen edits to a settings file are spliced into the text read once (json-five
    takes ~10 ms a parse of these small files, far more of a large one); a file two
    agents' edits change (Gemini's hooks and MCP server) is read once for both."""
    import marm.configfile

    parsed: list[str] = []
    real = marm.configfile.parse_source
    monkeypatch.setattr(marm.configfile, "parse_source", lambda text: parsed.append(text) or real(text))
    home, originals = user_home(tmp_path)
    init(home, "--claude", "--codex", "--gemini", "--mcp")
    json_files = sorted(text for path, text in originals.items() if path.suffix == ".json")
    assert len(json_files) == 4 and sorted(parsed) == json_files
    installed = {path: path.read_text() for path in originals}
    parsed.clear()
    again = init(home, "--claude", "--codex", "--gemini", "--mcp")
    assert {c["action"] for c in again["changes"]} == {"unchanged"}
    assert sorted(parsed) == sorted(text for path, text in installed.items() if path.suffix == ".json")


def test_a_moved_marm_updates_its_handlers_in_place(tmp_path):
    """Each handler marm finds under another command (an older install of marm, another
    virtualenv) is rewritten where it is: one marm handler per event, the user's stay."""
    home, _ = user_home(tmp_path)
    init(home, "--claude", "--gemini")
    settings = [home / ".claude/settings.json", home / ".gemini/settings.json"]
    current = marm_commands(json.loads(settings[0].read_text()))["Stop"][0].split(" hook ")[0]
    for path in settings:
        path.write_text(path.read_text().replace(current, "/old/venv/bin/marm"))
    moved = init(home, "--claude", "--gemini")
    assert {Path(c["path"]).name: c["action"] for c in moved["changes"]
            if c["path"].endswith(".json")} == {"settings.json": "updated"}
    for path in settings:
        data = json.loads(path.read_text())
        commands = marm_commands(data)
        assert commands and all(len(c) == 1 and c[0].startswith(current + " hook ") for c in commands.values())
        assert "/old/venv" not in path.read_text()
    claude = json.loads(settings[0].read_text())
    assert claude["hooks"]["SessionStart"][0] == {"hooks": [{"type": "command", "command": "echo hello"}]}
