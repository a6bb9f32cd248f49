"""`marm import --from marm`: a store with MARM 2.60.1's schema built here (its tables as
``core/memory_db.py`` and ``core/concept_schema.py`` create them), and, with
MARM_TEST_PEER=1, a store the real marm-mcp-server wrote over its STDIO tools."""

from __future__ import annotations

import html
import json
import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from marm import config
from marm.importers.marm_store import run
from marm.context import Ctx
from marm.ops.memory import write_memory
from marm.store import Store, memories, notebook
from marm.store.memories import Filter
from tests import peer as peer_install
from tests.helpers import git_init, run_marm

CODE = "DECISION: guard retries with if (a < b && c) { retry(); }"
LOG = "2026-01-05-retry-guard if (a < b && c) then retry"
NOTE = "use x < y && z; never <script>"
RETRACTED = "DECISION: keep the legacy <cache> & its TTL"

SCHEMA = """
CREATE TABLE memories (id TEXT PRIMARY KEY, session_name TEXT NOT NULL, content TEXT NOT NULL,
  embedding BLOB, timestamp TEXT NOT NULL, context_type TEXT DEFAULT 'general', metadata TEXT DEFAULT '{}',
  created_at TEXT DEFAULT CURRENT_TIMESTAMP, content_hash TEXT, compaction_role TEXT, compacted_into TEXT,
  project TEXT DEFAULT NULL, platform TEXT DEFAULT NULL);
CREATE TABLE sessions (session_name TEXT PRIMARY KEY, marm_active BOOLEAN DEFAULT FALSE,
  created_at TEXT DEFAULT CURRENT_TIMESTAMP, last_accessed TEXT DEFAULT CURRENT_TIMESTAMP, metadata TEXT DEFAULT '{}');
CREATE TABLE log_entries (id TEXT PRIMARY KEY, session_name TEXT NOT NULL, entry_date TEXT NOT NULL,
  topic TEXT NOT NULL, summary TEXT NOT NULL, full_entry TEXT NOT NULL, created_at TEXT DEFAULT CURRENT_TIMESTAMP,
  project TEXT DEFAULT NULL, platform TEXT DEFAULT NULL);
CREATE TABLE notebook_entries (name TEXT NOT NULL, data TEXT NOT NULL, embedding BLOB, project TEXT DEFAULT NULL,
  platform TEXT DEFAULT NULL, session_name TEXT DEFAULT NULL, created_at TEXT DEFAULT CURRENT_TIMESTAMP,
  updated_at TEXT DEFAULT CURRENT_TIMESTAMP);
"""
CONCEPT_SCHEMA = """
CREATE TABLE concept_entity_aliases (alias_name TEXT NOT NULL, canonical_name TEXT NOT NULL, session_name TEXT,
  project TEXT, platform TEXT, created_at TEXT DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE concept_entity_suppressions (name TEXT NOT NULL, session_name TEXT, project TEXT, platform TEXT,
  created_at TEXT DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE concept_duplicate_dismissals (name_a TEXT NOT NULL, name_b TEXT NOT NULL, session_name TEXT,
  project TEXT, platform TEXT, created_at TEXT DEFAULT CURRENT_TIMESTAMP);
"""


def _fixture(home: Path) -> Path:
    """MARM's store as it writes one: memory content HTML-escaped, logs and notebook raw,
    a log entry mirrored into a memory, its documentation in session marm_system."""
    db = home / ".marm" / "marm_memory.db"
    (db.parent / "index").mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA)
    rows = [
        ("m1", "s1", html.escape(CODE), "2026-01-04T09:30:00.123456+00:00", "{}", "shop", "claude"),
        ("m2", "s1", html.escape(LOG), "2026-01-05T10:00:00+00:00",
         '{"source": "log_entry", "log_entry_id": "l1"}', "shop", None),
        ("m3", "marm_system", "# MARM Protocol &amp; docs", "2026-01-01T00:00:00+00:00",
         '{"doc_type": "documentation"}', "shop", None),
        ("m4", "s1", html.escape(RETRACTED), "2026-01-06T00:00:00+00:00", "{}", "shop", None),
    ]
    conn.executemany("INSERT INTO memories (id, session_name, content, timestamp, metadata, project, platform)"
                     " VALUES (?,?,?,?,?,?,?)", rows)
    conn.execute("INSERT INTO log_entries (id, session_name, entry_date, topic, summary, full_entry, created_at,"
                 " project) VALUES ('l1','s1','2026-01-05','retry','guard if (a < b && c) then retry',?,"
                 " '2026-01-05 10:00:00', 'shop')", (LOG,))
    conn.execute("INSERT INTO notebook_entries (name, data, project, session_name, created_at, updated_at)"
                 " VALUES ('style', ?, 'shop', 'main', '2026-01-02 08:00:00', '2026-01-03T08:00:00+00:00')", (NOTE,))
    conn.executemany("INSERT INTO sessions (session_name, created_at, last_accessed) VALUES (?,?,?)",
                     [("s1", "2026-01-04 09:00:00", "2026-01-06T00:00:00+00:00"),
                      ("main", "2026-01-02 08:00:00", "2026-01-03T08:00:00+00:00")])
    conn.commit()
    conn.close()
    concepts = sqlite3.connect(db.parent / "index" / "marm_index.db")
    concepts.executescript(CONCEPT_SCHEMA)
    concepts.execute("INSERT INTO concept_entity_aliases (alias_name, canonical_name) VALUES ('pg', 'postgres')")
    concepts.execute("INSERT INTO concept_entity_suppressions (name) VALUES ('the thing')")
    concepts.execute("INSERT INTO concept_duplicate_dismissals (name_a, name_b) VALUES ('redis', 'queue')")
    concepts.commit()
    concepts.close()
    return db


def _rows(marm_home: Path) -> list:
    store = Store.open(config.database_path(marm_home))
    try:
        return memories.recent(store, Filter(all_projects=True, statuses=()), limit=1000)
    finally:
        store.close()


def test_marm_store_imports_unescaped_scoped_timed_with_verdicts_once(tmp_path, marm_home):
    shop = git_init(tmp_path / "shop")
    db = _fixture(Path(os.environ["HOME"]))
    ctx = Ctx(source="cli", cwd=shop, env=dict(os.environ))
    try:
        retracted = write_memory(ctx, RETRACTED).id  # known here, then retracted here
        assert run_marm("retract", str(retracted), cwd=shop).code == 0
        first = run(ctx, None, None, False)
        second = run(ctx, str(db), None, False)
        store = ctx.store()
        verdicts = store.conn.execute("SELECT (SELECT count(*) FROM concept_aliases WHERE alias='pg' AND"
                                      " canonical='postgres'), (SELECT count(*) FROM concept_suppressions"
                                      " WHERE name='the thing'), (SELECT count(*) FROM concept_dismissals"
                                      " WHERE a='queue' AND b='redis')").fetchone()
        entry = notebook.get(store, "style")
        log_rows = store.conn.execute("SELECT count(*) FROM log_entries").fetchone()[0]
    finally:
        ctx.close()
    rows = _rows(marm_home)
    by_text = {m.content: m for m in rows}
    code = by_text[CODE]  # `<` and `&` are back
    assert code.project == str(shop) and code.session == "s1" and code.platform == "claude"
    assert code.kind == "decision" and code.recorded_at == "2026-01-04T09:30:00.123456Z"
    assert by_text[LOG].kind == "log" and by_text[LOG].recorded_at == "2026-01-05T10:00:00.000000Z"
    assert log_rows == 1 and entry is not None and entry.content == NOTE
    assert verdicts == (1, 1, 1)
    assert not any("&amp;" in m.content or "&lt;" in m.content for m in rows)
    assert not any("MARM Protocol" in m.content for m in rows)  # its own docs stay behind
    assert [m.status for m in rows if m.content == RETRACTED] == ["retracted"]  # not brought back
    assert first.projects[str(shop)]["skipped"]["retracted here"] == 1
    assert second.projects[str(shop)]["added"] == {} and second.projects[str(shop)]["skipped"]["already here"] == 2
    assert len(_rows(marm_home)) == 3


def test_a_missing_or_foreign_file_is_an_error(tmp_path, marm_home):
    bad = tmp_path / "not.db"
    bad.write_text("hello")
    assert run_marm("import", "--from", "marm", str(tmp_path / "none.db"), cwd=tmp_path).code == 3
    assert run_marm("import", "--from", "marm", str(bad), cwd=tmp_path).code == 2
    assert run_marm("import", "--from", "nope", cwd=tmp_path).code == 2


# --- the real MARM ---------------------------------------------------------------------------

@pytest.fixture(scope="session")
def peer(tmp_path_factory):
    """marm-mcp-server installed from the package index into a venv of its own
    (``tests/peer.py``); it takes about two minutes here, so only with MARM_TEST_PEER=1,
    which ``tests/run.sh`` (CI's command) sets, or MARM_TEST_PEER_BIN naming an installed
    ``marm-mcp-stdio`` of that version. run.sh starts the install in the background at its
    start and names its folder in MARM_TEST_PEER_DIR: then this waits for it. It skips with
    pip's reason when the package cannot be installed."""
    if os.environ.get("MARM_TEST_PEER_BIN"):
        return Path(os.environ["MARM_TEST_PEER_BIN"])
    if os.environ.get("MARM_TEST_PEER") != "1":
        pytest.skip(f"set MARM_TEST_PEER=1 to install {peer_install.VERSION} (about 2 minutes) and test against it")
    if os.environ.get("MARM_TEST_PEER_DIR"):
        directory = Path(os.environ["MARM_TEST_PEER_DIR"])
        why = peer_install.wait(directory)
    else:
        directory = tmp_path_factory.mktemp("marm-peer")
        why = peer_install.install(directory)
    if why is not None:
        pytest.skip(f"cannot install {peer_install.VERSION}: {why}")
    return peer_install.stdio(directory)


class _Stdio:
    """A minimal newline-delimited JSON-RPC client for an MCP STDIO server."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.q: queue.Queue = queue.Queue()
        self.n = 0
        threading.Thread(target=lambda: [self.q.put(line) for line in self.p.stdout], daemon=True).start()

    def request(self, method: str, params: dict | None = None, timeout: float = 120) -> dict:
        self.n += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                                       "params": params or {}}).encode() + b"\n")
        self.p.stdin.flush()
        end = time.monotonic() + timeout
        while True:
            msg = json.loads(self.q.get(timeout=max(0.1, end - time.monotonic())))
            if msg.get("id") == self.n:
                return msg

    def close(self) -> None:
        self.p.stdin.close()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


@pytest.mark.slow
def test_a_store_written_by_the_real_marm(peer, tmp_path, marm_home):
    home = Path(os.environ["HOME"])
    shop = git_init(tmp_path / "shop")
    env = {**os.environ, "HOME": str(home), "SEMANTIC_SEARCH_ENABLED": "0", "HF_HUB_OFFLINE": "1",
           "PYTHONUNBUFFERED": "1"}
    server = _Stdio([str(peer)], shop, env)
    try:
        server.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "marm-import-test", "version": "0"}})
        server.p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        server.p.stdin.flush()
        for name, args in (("marm_log_entry", {"entry": LOG, "session_name": "s1"}),
                           ("marm_log_entry", {"entry": CODE, "session_name": "s1"}),
                           ("marm_notebook", {"action": "add", "name": "style", "data": NOTE})):
            answer = server.request("tools/call", {"name": name, "arguments": args})
            assert "error" not in answer and not answer["result"].get("isError"), answer
    finally:
        server.close()
    stored = sqlite3.connect(home / ".marm" / "marm_memory.db")
    assert stored.execute("SELECT count(*) FROM memories WHERE content LIKE '%&lt;%'").fetchone()[0] >= 2
    stored.close()
    first = run_marm("import", "--from", "marm", "--json", cwd=shop)
    second = run_marm("import", "--from", "marm", "--json", cwd=shop)
    assert first.code == 0 and second.code == 0, first.err + second.err
    rows = _rows(marm_home)
    texts = {m.content: m for m in rows}
    assert texts[LOG].kind == "log" and texts[LOG].project == str(shop)
    assert texts[CODE].kind == "decision" and texts[CODE].session == "s1"
    assert not any("&lt;" in m.content for m in rows)
    assert second.json()["projects"][str(shop)]["added"] == {}
    assert len(_rows(marm_home)) == len(rows) == 2
