"""The real `marm` process: bad input, exit codes, help, imports, completions."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from marm.completion import scripts
from marm.ops import load
from marm.store.migrations import SCHEMA_VERSION
from tests.helpers import invoke_marm, run_marm

REPO = Path(__file__).resolve().parents[2]


def count_memories(home: Path) -> int:
    conn = sqlite3.connect(home / "marm.db")
    try:
        return conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        conn.close()


def assert_one_line_error(run, code: int, fragment: str) -> None:
    assert run.code == code, (run.code, run.out, run.err)
    assert run.out == ""
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.err
    assert fragment in lines[0]
    assert "Traceback" not in run.err


def test_json_is_default_in_a_pipe_and_text_on_request(tmp_path):
    logged = run_marm("log", "use uv for installs", cwd=tmp_path)
    assert json.loads(logged.out)["created"] is True
    text = run_marm("recall", "--text", "uv installs", cwd=tmp_path)
    assert text.out.startswith(f"#{logged.json()['id']} ")


def test_stdin_dash_reads_the_text(tmp_path):
    logged = run_marm("log", "-", cwd=tmp_path, input="from stdin: the cron runs at 02:00\n")
    assert logged.code == 0, logged.err
    shown = run_marm("show", str(logged.json()["id"]), cwd=tmp_path).json()
    assert shown["memory"]["content"] == "from stdin: the cron runs at 02:00"


def test_bad_input_gets_one_line_errors_and_writes_nothing(tmp_path, marm_home):
    assert run_marm("log", "a memory that exists", cwd=tmp_path).code == 0
    assert_one_line_error(run_marm("log", "-", cwd=tmp_path, input=b"caf\xe9 \xff"), 2, "not valid UTF-8")
    assert_one_line_error(run_marm("log", "-", cwd=tmp_path, input=b"nul\x00byte"), 2, "NUL byte")
    big = run_marm("log", "-", cwd=tmp_path, input="x" * 100_001)
    assert_one_line_error(big, 2, "the limit is 100,000 characters")
    assert_one_line_error(run_marm("show", "999", cwd=tmp_path), 3, "no memory with id 999")
    assert_one_line_error(run_marm("delete", "memory", "999", cwd=tmp_path), 3, "no memory with id 999")
    assert_one_line_error(run_marm("delete", "memory", "abc", cwd=tmp_path), 2, "ids are numbers")
    assert_one_line_error(run_marm("notebook", "show", "nope", cwd=tmp_path), 3, "no notebook entry")
    assert_one_line_error(run_marm("config", "set", "capture", "maybe", cwd=tmp_path), 2, "on, off")
    assert count_memories(marm_home) == 1


def test_usage_errors_exit_2(tmp_path):
    run = run_marm("recall", "x", "--mode", "psychic", cwd=tmp_path)
    assert run.code == 2 and "psychic" in run.err and "Traceback" not in run.err


def test_a_file_that_is_not_sqlite_is_a_clear_error(tmp_path, marm_home):
    marm_home.mkdir()
    (marm_home / "marm.db").write_bytes(b"definitely not sqlite " * 200)
    assert_one_line_error(run_marm("log", "hello", cwd=tmp_path), 4, "not a marm SQLite database")


def test_a_database_from_a_newer_marm_is_a_clear_error(tmp_path, marm_home):
    assert run_marm("log", "hello", cwd=tmp_path).code == 0
    conn = sqlite3.connect(marm_home / "marm.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    assert_one_line_error(run_marm("recall", "hello", cwd=tmp_path), 4, "newer than this marm")
    assert_one_line_error(run_marm("log", "another", cwd=tmp_path), 4, "newer than this marm")
    conn = sqlite3.connect(marm_home / "marm.db")
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1
    conn.close()


HEAVY = ("fastembed", "onnxruntime", "spacy", "tree_sitter", "mcp", "numpy", "psycopg")

_PROBE = """
import json, sys
args, heavy = json.loads(sys.argv[1]), set(json.loads(sys.argv[2]))
sys.argv = ["marm", *args]
from marm.cli import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("HEAVY=" + json.dumps(sorted({m.split(".")[0] for m in sys.modules} & heavy)) + "\\n")
"""


@pytest.mark.parametrize("args", [
    ["--help"],
    ["log", "the quick path must stay light"],
    ["recall", "--mode", "lexical", "light path"],
    ["recall", "MAX_RETRIES"],
    ["remote", "list"],
])
def test_fast_paths_import_no_heavy_library(tmp_path, args):
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args), json.dumps(HEAVY)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    line = [x for x in proc.stderr.splitlines() if x.startswith("HEAVY=")]
    assert line, proc.stderr
    assert json.loads(line[0][len("HEAVY="):]) == []


def test_every_command_has_help():
    for o in load().values():
        assert o.summary, o.name
        for spec in o.params():
            assert spec.meta.help, f"{o.name} --{spec.name}"
    for o in load().values():  # in-process: the help is the CLI's own; a process adds only start-up
        run = invoke_marm(*o.path, "--help")
        assert run.code == 0 and o.summary.split(":")[0][:20] in " ".join(run.out.split()), o.name


def test_completions_are_current():
    stale = [name for name, text in scripts().items()
             if (REPO / "completions" / name).read_text(encoding="utf-8") != text]
    assert not stale, f"regenerate with: python -m marm.completion completions ({stale})"


def test_version():
    run = run_marm("--version")
    assert run.code == 0 and run.out.startswith("marm ")


def test_the_command_index_names_every_module_s_commands_with_their_help():
    from marm.ops import COMMANDS

    ops = load()
    for module, table in COMMANDS.items():
        registered = {o.path[0] for o in ops.values() if o.func.__module__ == module}
        assert registered == set(table), f"COMMANDS[{module!r}] should list {sorted(registered)}"
        for word, line in table.items():
            leaf = ops.get((word,))
            if leaf is not None:
                assert line == leaf.summary, f"COMMANDS[{module!r}][{word!r}] should be {leaf.summary!r}"
            else:
                assert line, f"group {word!r} needs a one-line help in COMMANDS"
    assert {o.func.__module__ for o in ops.values()} <= set(COMMANDS)
