"""`marm import --from TOOL` as a user runs it: a real subprocess per source, its --json
report, and a clear error with a non-zero exit for a path that is not the tool's."""

from __future__ import annotations

import os
from pathlib import Path

from tests.helpers import git_init, run_marm
from tests.import_fixtures import (CODE, basic_memory_config, basic_memory_note, basic_memory_notes, claude_mem_db,
                                   claude_memory_dirs, mcp_graph)


def _report(run) -> dict:
    assert run.code == 0, run.err
    return run.json()


def test_claude_memory_cli(tmp_path, marm_home):
    shop, web, api = (git_init(tmp_path / n) for n in ("shop", "web-app", "api"))
    projects = claude_memory_dirs(Path(os.environ["HOME"]), shop, web, api)
    doc = _report(run_marm("import", "--from", "claude-memory", "--json", cwd=tmp_path))
    assert doc["source"] == "claude-memory" and doc["read"] == [str(projects)]
    assert doc["projects"][str(shop)]["added"] == {"convention": 1, "note": 3}
    assert doc["projects"][str(web)]["added"] == {"note": 1} and doc["projects"][str(api)]["added"] == {"decision": 1}
    bad = run_marm("import", "--from", "claude-memory", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert bad.code == 3 and "no Claude Code auto memory at" in bad.err


def test_mcp_memory_cli(tmp_path, marm_home):
    path = mcp_graph(tmp_path / "memory.jsonl")
    doc = _report(run_marm("import", "--from", "mcp-memory", str(path), "--json", cwd=tmp_path))
    assert doc["projects"]["(global)"]["added"] == {"note": 4}
    assert doc["projects"]["(global)"]["skipped"] == {"entity without observations": 1, "unreadable line": 1}
    found = run_marm("recall", CODE, "--json", cwd=tmp_path).json()["results"]
    assert [r["content"] for r in found] == [f"Alice: prefers {CODE}"]
    missing = run_marm("import", "--from", "mcp-memory", cwd=tmp_path)
    assert missing.code == 2 and "MEMORY_FILE_PATH" in missing.err


def test_claude_mem_cli(tmp_path, marm_home):
    shop = git_init(tmp_path / "shop")
    db = claude_mem_db(tmp_path / "cm" / "claude-mem.db")
    doc = _report(run_marm("import", "--from", "claude-mem", str(db), "--dry-run", "--json", cwd=shop))
    assert doc["dry_run"] and doc["projects"][str(shop)]["added"] == {"decision": 2, "fix": 1, "lesson": 1,
                                                                      "summary": 1}
    assert run_marm("recall", "retry", "--json", cwd=shop).json()["results"] == []  # the dry run stored nothing
    (tmp_path / "plain.txt").write_text("not a database")
    bad = run_marm("import", "--from", "claude-mem", str(tmp_path / "plain.txt"), cwd=shop)
    assert bad.code == 2 and "is not a SQLite database" in bad.err


def test_basic_memory_cli(tmp_path, marm_home):
    root = basic_memory_notes(tmp_path / "notes")
    doc = _report(run_marm("import", "--from", "basic-memory", str(root), "--json", cwd=tmp_path))
    added = doc["projects"]["(global)"]["added"]
    assert added == {"config": 1, "decision": 1, "note": 5}
    again = _report(run_marm("import", "--from", "basic-memory", str(root), "--json", cwd=tmp_path))
    assert again["projects"]["(global)"]["added"] == {}
    assert again["projects"]["(global)"]["skipped"]["already here"] == 7
    bad = run_marm("import", "--from", "basic-memory", str(tmp_path / "none"), cwd=tmp_path)
    assert bad.code == 3 and "no basic-memory notes at" in bad.err


def test_basic_memory_cli_reads_the_projects_in_its_config(tmp_path, marm_home):
    home = Path(os.environ["HOME"])
    main, work = home / "basic-memory", tmp_path / "work"
    basic_memory_note(main, "Main Note", f"main guards {CODE}")
    basic_memory_note(work, "Work Note", "work ships on Tuesdays")
    basic_memory_config(home / ".basic-memory", {"main": {"path": str(main), "mode": "local"},
                                                 "work": {"path": str(work), "mode": "local"}})
    doc = _report(run_marm("import", "--from", "basic-memory", "--json", cwd=tmp_path))
    assert doc["read"] == [str(main), str(work)]
    assert doc["projects"]["(global)"]["added"] == {"decision": 2}
    found = run_marm("recall", '"ships on Tuesdays"', "--json", cwd=tmp_path).json()["results"]  # exact lane
    assert [r["content"] for r in found] == ["Work Note: work ships on Tuesdays"]
