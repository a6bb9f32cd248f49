"""The review verbs, as-of and export/import through the CLI (in-process: the exit codes
and output are ``marm.cli.main``'s own; tests/cli/test_core_cli.py checks them in real processes)."""

from __future__ import annotations

import json
import os

from tests.helpers import invoke_marm


def _ok(*args, **kw):
    run = invoke_marm(*args, **kw)
    assert run.code == 0, (args, run.err)
    return run.json() if run.out.strip().startswith("{") else run.out


def _ids(*args, **kw) -> list[int]:
    return [r["id"] for r in _ok("recall", *args, "-n", "20", **kw)["results"]]


def test_retract_refuses_the_text_with_exit_5_and_force_stores_it(tmp_path):
    keep = _ok("log", "the nightly backup runs at 02:00 UTC", cwd=tmp_path)["id"]
    wrong = _ok("log", "the nightly backup runs at 03:00 UTC", cwd=tmp_path)["id"]
    retracted = _ok("retract", str(wrong), "--reason", "it is 02:00", cwd=tmp_path)
    assert retracted["status"] == "retracted" and retracted["previous_status"] == "active"
    ids = _ids("nightly backup", cwd=tmp_path)
    assert keep in ids and wrong not in ids

    refused = invoke_marm("log", "the nightly  backup runs at 03:00 UTC", cwd=tmp_path)
    assert refused.code == 5
    assert "retracted" in refused.err and "--force" in refused.err and refused.out == ""
    assert "exit code 5" in " ".join(_ok("log", "--help", cwd=tmp_path).split())  # however it wraps

    forced = _ok("log", "the nightly backup runs at 03:00 UTC", "--force", cwd=tmp_path)
    assert forced["created"] and forced["id"] != wrong
    history = _ok("history", str(forced["id"]), cwd=tmp_path)
    assert history["events"][0]["detail"]["forced"] is True
    assert history["events"][0]["source"] == "cli"


def test_doubt_marks_and_supersede_with_as_of(tmp_path):
    old = _ok("log", "the api is served by gunicorn", "--valid-from", "2024-01-01", cwd=tmp_path)["id"]
    new = _ok("log", "the api is served by uvicorn", "--valid-from", "2025-06-01", cwd=tmp_path)["id"]
    other = _ok("log", "the api docs live in docs/api.md", cwd=tmp_path)["id"]
    _ok("doubt", str(other), "-r", "maybe moved", cwd=tmp_path)
    _ok("supersede", str(old), "--by", str(new), "--reason", "switched to asgi", cwd=tmp_path)

    now = {r["id"]: r for r in _ok("recall", "api served", "-n", "20", cwd=tmp_path)["results"]}
    assert new in now and old not in now
    assert now[other]["status"] == "doubted"
    before = _ids("api served", "--as-of", "2025-01-01", cwd=tmp_path)
    after = _ids("api served", "--as-of", "2025-07-01", cwd=tmp_path)
    assert old in before and new not in before
    assert new in after and old not in after

    _ok("restore", str(old), cwd=tmp_path)
    both = _ids("api served", cwd=tmp_path)
    assert old in both and new in both
    actions = [e["action"] for e in _ok("history", str(old), cwd=tmp_path)["events"]]
    assert actions == ["memory.create", "memory.supersede", "memory.restore"]


def test_forget_then_history_and_bad_ids(tmp_path):
    keep = _ok("log", "the staging password rotates monthly", cwd=tmp_path)["id"]
    gone = _ok("log", "the staging password is kept in 1password vault Ops", cwd=tmp_path)["id"]
    _ok("forget", str(gone), "--reason", "privacy", cwd=tmp_path)
    ids = _ids("staging password", "--include", "retracted,superseded", cwd=tmp_path)
    assert keep in ids and gone not in ids
    history = _ok("history", str(gone), cwd=tmp_path)
    assert history["status"] is None and history["events"][-1]["action"] == "memory.forget"
    assert "1password" not in json.dumps(history)
    missing = invoke_marm("restore", str(gone), cwd=tmp_path)
    assert missing.code == 3 and "forgotten" in missing.err
    assert invoke_marm("doubt", "999", cwd=tmp_path).code == 3
    assert invoke_marm("recall", "x", "--include", "deleted", cwd=tmp_path).code == 2


def test_export_import_round_trip_through_files(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    for text in ("the queue is rabbitmq", "the queue consumer is idempotent", "the cache is redis"):
        _ok("log", text, cwd=work)
    _ok("retract", "2", cwd=work)
    out = invoke_marm("export", "--all-projects", cwd=work)
    assert out.code == 0
    lines = [json.loads(line) for line in out.out.splitlines()]
    assert lines[0]["type"] == "marm-export"
    assert {r["type"] for r in lines} >= {"memory", "event", "tombstone"}
    path = tmp_path / "dump.jsonl"
    path.write_text(out.out)

    elsewhere = {"MARM_HOME": str(tmp_path / "second-home")}
    first = _ok("import", str(path), cwd=work, env=elsewhere)
    assert first["added"]["memory"] == 3 and first["remapped"] == {}
    status = _ok("status", cwd=work, env=elsewhere)  # imported memories are queued for embedding
    assert status["outbox"]["embed"]["pending"] == 3
    second = _ok("import", str(path), cwd=work, env=elsewhere)
    assert second["added"] == {}
    for query in ("queue", "cache", "queue consumer"):
        assert _ids(query, cwd=work, env=elsewhere) == _ids(query, cwd=work)
    assert invoke_marm("log", "the queue consumer is idempotent", cwd=work, env=elsewhere).code == 5
    assert os.path.exists(tmp_path / "second-home" / "marm.db")
