"""The sync commands through the CLI: remotes, sharing, credentials refused, status with
each remote's ahead and behind (in this process, ``invoke_marm``), and as real processes a
detached sync, the session-end hook's, and no psycopg outside a sync."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import invoke_marm, run_marm
from tests.sync.helpers import PROJECT

ENV = {"MARM_PROJECT": PROJECT}


def test_a_url_with_a_password_is_refused_and_never_stored(tmp_path, marm_home):
    for url in ("postgresql://alice:s3cr3t-pw@db.example/team", "postgresql://alice@db.example/team?password=s3cr3t-pw"):
        run = invoke_marm("remote", "add", "team", url, env=ENV)
        assert run.code == 2 and "password" in run.err, run.err
    ok = invoke_marm("remote", "add", "team", "postgresql://alice@db.example/team", env=ENV)
    assert ok.code == 0, ok.err
    listed = invoke_marm("remote", "list", env=ENV).json()
    assert [r["url"] for r in listed["remotes"]] == ["postgresql://alice@db.example/team"]
    blob = b"".join(p.read_bytes() for p in marm_home.rglob("*") if p.is_file())
    assert b"alice@db.example" in blob and b"s3cr3t-pw" not in blob
    assert invoke_marm("remote", "remove", "team", env=ENV).code == 0
    assert invoke_marm("remote", "list", env=ENV).json()["remotes"] == []
    assert invoke_marm("remote", "add", "x", "ftp://nowhere", env=ENV).code == 2


def test_status_shows_each_remote_ahead_and_behind(tmp_path):
    remote = f"dir:{tmp_path / 'shared'}"
    a = {**ENV, "MARM_HOME": str(tmp_path / "a")}
    b = {**ENV, "MARM_HOME": str(tmp_path / "b")}
    for env in (a, b):
        assert invoke_marm("remote", "add", "team", remote, env=env).code == 0
    assert invoke_marm("log", "NOTE: written before sharing", env=a).code == 0
    status = invoke_marm("status", env=a).json()
    assert status["remotes"][0]["ahead"] == 0            # nothing is shared yet
    assert invoke_marm("share", env=a).code == 0
    assert invoke_marm("share", env=b).code == 0
    assert invoke_marm("log", "NOTE: written after sharing", env=a).code == 0
    status = invoke_marm("status", env=a).json()["remotes"][0]
    assert status["ahead"] == 2 and status["last_push_at"] is None
    assert invoke_marm("sync", env=a).code == 0
    assert invoke_marm("status", env=a).json()["remotes"][0]["ahead"] == 0
    behind = invoke_marm("status", env=b).json()["remotes"][0]
    assert behind["behind"] == 2 and behind["ahead"] == 0
    synced = invoke_marm("sync", "team", env=b)
    assert synced.code == 0 and synced.json()["remotes"][0]["pulled"] == 2
    after = invoke_marm("status", env=b).json()["remotes"][0]
    assert after["behind"] == 0 and after["last_pull_at"]
    assert "written after sharing" in invoke_marm("recall", "written after sharing", "--mode", "lexical", env=b).out


def test_sync_commands_import_no_psycopg_unless_they_talk_to_postgres(tmp_path):
    probe = ("import json, sys\nfrom marm.cli import main\n"
             "try:\n    main(json.loads(sys.argv[1]))\nexcept SystemExit:\n    pass\n"
             "sys.stderr.write('PSYCOPG=' + str('psycopg' in sys.modules) + '\\n')\n")
    env = {**ENV, "MARM_HOME": str(tmp_path / "h")}
    for args in (["remote", "add", "t", "postgresql://u@h/db"], ["remote", "list"], ["log", "NOTE: x"],
                 ["--help"], ["share"]):
        proc = subprocess.run([sys.executable, "-c", probe, json.dumps(args)], capture_output=True, text=True,
                              env={**__import__("os").environ, **env}, timeout=60)
        assert "PSYCOPG=False" in proc.stderr, (args, proc.stderr)


def test_sync_detached_returns_at_once_and_syncs_in_the_background(tmp_path):
    remote = tmp_path / "shared"
    env = {**ENV, "MARM_HOME": str(tmp_path / "a")}
    assert invoke_marm("remote", "add", "team", f"dir:{remote}", env=env).code == 0
    assert invoke_marm("share", env=env).code == 0
    assert invoke_marm("log", "NOTE: sent by a detached sync", env=env).code == 0
    run = run_marm("sync", "--detach", env=env)
    assert run.code == 0 and run.json()["detached"] is True
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(remote.glob("chunks/*.jsonl")):
        time.sleep(0.1)
    chunks = list(remote.glob("chunks/*.jsonl"))
    assert chunks and b"sent by a detached sync" in chunks[0].read_bytes()


def test_a_session_end_hook_starts_a_detached_sync_when_a_project_is_shared(tmp_path):
    from tests.hooks.payloads import hook, payload

    remote = tmp_path / "shared"
    env = {**ENV, "MARM_HOME": str(tmp_path / "a")}
    assert invoke_marm("remote", "add", "team", f"dir:{remote}", env=env).code == 0
    assert invoke_marm("log", "NOTE: sent at session end", env=env).code == 0
    work = tmp_path / "w"
    work.mkdir()
    assert hook("claude", "session-end", payload("claude", "session-end", work), cwd=work, env=env).code == 0
    assert not (remote / "manifests").exists() or not list(remote.glob("manifests/*"))  # not shared: no sync
    assert invoke_marm("share", env=env).code == 0
    assert hook("claude", "session-end", payload("claude", "session-end", work), cwd=work, env=env).code == 0
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(remote.glob("manifests/*.jsonl")):
        time.sleep(0.1)
    chunks = list(remote.glob("chunks/*.jsonl"))
    assert chunks and b"sent at session end" in chunks[0].read_bytes()
    time.sleep(1)  # let the detached sync finish its pull before the folder goes


def test_status_answers_when_a_postgres_remote_is_unreachable(tmp_path):
    env = {**ENV, "MARM_HOME": str(tmp_path / "a")}
    url = f"postgresql://marm@/postgres?host={tmp_path / 'no-server-here'}"
    assert invoke_marm("remote", "add", "down", url, env=env).code == 0
    status = invoke_marm("status", env=env)
    assert status.code == 0, status.err
    remote = status.json()["remotes"][0]
    assert remote["name"] == "down" and remote["behind"] is None and "cannot reach" in remote["error"]
    failed = invoke_marm("sync", env=env)
    assert failed.code == 7 and "cannot reach" in failed.err
