"""`marm import --from claude-memory | mcp-memory | claude-mem | basic-memory`: each
tool's store made here as the tool writes it (its layout, its JSON lines, its schema's
DDL), imported into a real store. Each test checks the same guarantees: the right
project, kind, time and exact text (``<`` and ``&`` intact); a redacted secret in no
byte of MARM_HOME; a text retracted here stays retracted; a dry run stores nothing; a
second import adds nothing; every new memory is queued for embedding and concepts."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from marm import config
from marm.concepts import indexer
from marm.concepts.rules import RuleExtractor
from marm.context import Ctx
from marm.errors import BadInput, NotFound
from marm.importers import basic_memory, claude_mem, claude_memory, mcp_memory, scoped
from marm.ops.memory import write_memory
from marm.ops.review import forget, retract, supersede
from marm.store import Store, memories
from marm.store.concept_graph import Graph
from marm.store.memories import Filter
from tests.helpers import git_init
from tests.import_fixtures import (AT, CODE, RETRACTED, SECRET, basic_memory_config, basic_memory_note,
                                   basic_memory_notes, claude_mem_db, claude_memory_dirs, mcp_graph)

def _ctx(cwd: Path) -> Ctx:
    return Ctx(source="cli", cwd=cwd, env=dict(os.environ))


def _all(marm_home: Path) -> list[memories.Memory]:
    store = Store.open(config.database_path(marm_home))
    try:
        return memories.recent(store, Filter(all_projects=True, statuses=()), limit=1000)
    finally:
        store.close()


def _queued(marm_home: Path) -> set[tuple[str, str]]:
    store = Store.open(config.database_path(marm_home))
    try:
        return {(k, t) for k, t in store.conn.execute("SELECT kind, target FROM outbox WHERE state = 'pending'")}
    finally:
        store.close()


def _every_byte(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


def _retracted_here(ctx: Ctx, text: str, project: str | None) -> int:
    """``text`` stored in ``project`` and retracted there, before the import."""
    memory_id = write_memory(scoped(ctx, project), text).id
    retract(ctx, memory_id)
    return memory_id


def _guarantees(marm_home: Path, ctx: Ctx, run: Callable[..., object], path: str | None,
                retracted: str, project: str | None) -> tuple[object, object, list[memories.Memory]]:
    """Dry run, import, import again; what the three have in common to assert."""
    before = {m.id for m in _all(marm_home)}
    dry = run(ctx, path, None, True)
    assert {m.id for m in _all(marm_home)} == before  # a dry run stores nothing...
    first = run(ctx, path, None, False)
    rows = _all(marm_home)
    assert dry.projects == first.projects  # ...and counts what the import then does
    new = [m for m in rows if m.id not in before]
    assert new and all(m.source == "import" for m in new)
    assert {("embed", str(m.id)) for m in new} | {("concepts", str(m.id)) for m in new} <= _queued(marm_home)
    second = run(ctx, path, None, False)
    assert all(c["added"] == {} for c in second.projects.values())
    assert len(_all(marm_home)) == len(rows)  # the second import added nothing
    assert [m.status for m in rows if m.content.endswith(retracted)] == ["retracted"]
    key = project if project is not None else "(global)"
    assert first.projects[key]["skipped"]["retracted here"] == 1
    disk = _every_byte(marm_home)
    assert b"[REDACTED:" in disk and SECRET.encode() not in disk
    return first, second, rows


# --- Claude Code's auto memory -----------------------------------------------------------------

def test_claude_memory(tmp_path, marm_home):
    shop = git_init(tmp_path / "shop")
    web = git_init(tmp_path / "web-app")
    api = git_init(tmp_path / "api")
    (api / "src").mkdir()
    claude_memory_dirs(Path(os.environ["HOME"]), shop, web, api / "src")
    ctx = _ctx(tmp_path)
    try:
        _retracted_here(ctx, RETRACTED, str(shop))
        first, _, rows = _guarantees(marm_home, ctx, claude_memory.run, None, RETRACTED, str(shop))
    finally:
        ctx.close()
    by_text = {m.content: m for m in rows}
    rule = by_text[f"bounded retries only\n\n{CODE}.\n\n**Why:** unbounded retries hammered the API."]
    assert (rule.project, rule.kind, rule.recorded_at, rule.platform) == (str(shop), "convention", AT, "claude")
    build = by_text["Build with `make -j4 && make test` (CI does the same)"]
    assert build.project == str(shop) and build.kind == "note"
    assert any(m.content.startswith("the staging login is password=[REDACTED:") for m in rows)
    assert by_text["the user is a backend engineer\n\nExplain frontend code in backend terms."].project == str(web)
    assert by_text["DECISION: the API speaks JSON only"].project == str(api)
    assert by_text["DECISION: the API speaks JSON only"].kind == "decision"
    shop_counts = first.projects[str(shop)]
    assert shop_counts["skipped"]["index line of a topic file (the file is imported)"] == 1
    assert not any("](retry_guard.md)" in m.content for m in rows)  # the index line stayed behind


def test_claude_memory_honours_claude_config_dir_and_a_bad_path_is_an_error(tmp_path, marm_home, monkeypatch):
    shop = git_init(tmp_path / "shop")
    config_dir = tmp_path / "claude-config"
    mem = config_dir / "projects" / claude_memory.slug(str(shop)) / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text(f"- {CODE}\n")
    home_mem = Path(os.environ["HOME"]) / ".claude" / "projects" / "-elsewhere" / "memory"
    home_mem.mkdir(parents=True)
    (home_mem / "MEMORY.md").write_text("- not read: CLAUDE_CONFIG_DIR is in its place\n")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    ctx = _ctx(tmp_path)
    try:
        done = claude_memory.run(ctx, None, None, False)
        with pytest.raises(NotFound, match="no Claude Code auto memory"):
            claude_memory.run(ctx, str(tmp_path / "nowhere"), None, False)
    finally:
        ctx.close()
    assert done.projects[str(shop)]["added"] == {"note": 1}
    assert [m.content for m in _all(marm_home)] == [CODE]


def _edges_of(ctx, memory_id):
    """The concept edges the indexer derives from one memory (rule extractor, real graph)."""
    graph = Graph.open(config.derived_path(ctx.home))
    try:
        indexer.apply(ctx.store(), graph, [memory_id], RuleExtractor())
        return graph.contribution(memory_id)[1]
    finally:
        graph.close()


# --- the MCP memory server ---------------------------------------------------------------------

def test_mcp_memory(tmp_path, marm_home, monkeypatch):
    graph_file = mcp_graph(tmp_path / "memory.jsonl")
    monkeypatch.setenv("MEMORY_FILE_PATH", str(graph_file))
    ctx = _ctx(tmp_path)
    try:
        _retracted_here(ctx, f"Alice: {RETRACTED}", None)
        first, _, rows = _guarantees(marm_home, ctx, mcp_memory.run, None, RETRACTED, None)
        relation = next(m for m in rows if m.content == "Alice works at Acme")
        edges = _edges_of(ctx, relation.id)
    finally:
        ctx.close()
    by_text = {m.content: m for m in rows}
    alice = by_text[f"Alice: prefers {CODE}"]
    assert (alice.project, alice.kind, alice.recorded_at) == (None, "note", AT)
    assert alice.metadata["entity"] == "Alice" and alice.metadata["source_id"] == "entity:Alice#0"
    assert relation.project is None and ("alice", "works_at", "acme") in edges  # the edge is the source's
    skipped = first.projects["(global)"]["skipped"]
    assert skipped["entity without observations"] == 1 and skipped["unreadable line"] == 1


def test_mcp_memory_needs_a_path_without_memory_file_path(tmp_path, marm_home):
    ctx = _ctx(tmp_path)
    try:
        with pytest.raises(BadInput, match="MEMORY_FILE_PATH"):
            mcp_memory.run(ctx, None, None, False)
        with pytest.raises(NotFound):
            mcp_memory.run(ctx, str(tmp_path / "none.jsonl"), None, False)
        (tmp_path / "other.jsonl").write_text('{"hello": 1}\n')
        with pytest.raises(BadInput, match="not an MCP memory file"):
            mcp_memory.run(ctx, str(tmp_path / "other.jsonl"), None, False)
    finally:
        ctx.close()


# --- claude-mem --------------------------------------------------------------------------------

def test_claude_mem(tmp_path, marm_home):
    shop = git_init(tmp_path / "shop")
    claude_mem_db(Path(os.environ["HOME"]) / ".claude-mem" / "claude-mem.db")
    ctx = _ctx(shop)
    try:
        _retracted_here(ctx, f"Cache\n\n{RETRACTED}", str(shop))
        _guarantees(marm_home, ctx, claude_mem.run, None, RETRACTED, str(shop))
    finally:
        ctx.close()
    rows = _all(marm_home)
    by_text = {m.content: m for m in rows}
    fix = by_text[f"Retry storm fixed\nbounded retries\n\nThe client retried forever.\n\n- {CODE}\n- the backoff doubles"]
    assert (fix.project, fix.kind, fix.recorded_at) == (str(shop), "fix", "2026-01-03T10:00:00.250000Z")
    assert (fix.session, fix.platform) == ("claude-s1", "claude")
    summary = by_text["Request: stop the retry storm\nLearned: retries need a bound: a < b && c\nNext steps: ship it"]
    assert summary.kind == "summary" and summary.project == str(shop)
    worktree = by_text["Worktree note\n\nthe worktree shares the repository"]
    assert worktree.kind == "lesson" and worktree.project == str(shop)  # a worktree is its repository's project


def test_claude_mem_honours_its_data_dir_and_refuses_another_database(tmp_path, marm_home, monkeypatch):
    shop = git_init(tmp_path / "shop")
    claude_mem_db(tmp_path / "data" / "claude-mem.db")
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(tmp_path / "data"))
    other = tmp_path / "other.db"
    sqlite3.connect(other).executescript("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
    ctx = _ctx(shop)
    try:
        done = claude_mem.run(ctx, None, None, True)
        later = claude_mem.run(ctx, None, "2026-01-04T00:00:00.000000Z", False)
        with pytest.raises(BadInput, match="not a claude-mem database"):
            claude_mem.run(ctx, str(other), None, False)
        with pytest.raises(NotFound):
            claude_mem.run(ctx, str(tmp_path / "none.db"), None, False)
    finally:
        ctx.close()
    assert done.dry_run and done.projects[str(shop)]["added"]["summary"] == 1
    assert later.projects[str(shop)] == {"sessions": 0, "turns": 0, "added": {}, "skipped": {"before --since": 5}}
    assert _all(marm_home) == []


# --- basic-memory ------------------------------------------------------------------------------

def test_basic_memory(tmp_path, marm_home):
    root = basic_memory_notes(Path(os.environ["HOME"]) / "basic-memory")
    ctx = _ctx(tmp_path)
    try:
        _retracted_here(ctx, f"Auth Design: {RETRACTED}", None)
        first, _, rows = _guarantees(marm_home, ctx, basic_memory.run, None, RETRACTED, None)
        relation = next(m for m in rows if m.content == "Auth Design implements API Security Requirements")
        edges = _edges_of(ctx, relation.id)
    finally:
        ctx.close()
    by_text = {m.content: m for m in rows}
    decision = by_text[f"Auth Design: {CODE} #retries (after the outage)"]
    assert (decision.project, decision.kind, decision.recorded_at) == (None, "decision", AT)
    assert decision.metadata["tags"] == ["retries"] and decision.metadata["permalink"] == "design/auth-design"
    assert by_text["Auth Design: We compared sessions and tokens."].kind == "note"
    assert by_text["Auth Design depends on User Database Schema"].kind == "note"
    assert by_text["Auth Design: [ ] a task box, not an observation"].kind == "note"
    assert any(m.content.startswith("Auth Design: staging uses password=[REDACTED:") and m.kind == "config"
               for m in rows)
    assert ("auth design", "implements", "api security requirements") in edges
    assert not any("editor's file" in m.content for m in rows)  # hidden folders are not notes
    assert str(root) in first.read


def test_basic_memory_imports_every_project_its_config_lists(tmp_path, marm_home):
    """No PATH: the projects in ``~/.basic-memory/config.json`` (name -> folder, the
    format before 0.19), each folder read; a listed folder that is gone is a note."""
    home = Path(os.environ["HOME"])
    main = home / "basic-memory"
    basic_memory_note(main, "Main Note", f"main guards {CODE}")
    work = tmp_path / "work-notes"
    basic_memory_note(work / "deep" / "er", "Work Note", "work ships on Tuesdays")
    basic_memory_note(tmp_path / "unlisted", "Unlisted Note", "a folder basic-memory does not know")
    basic_memory_config(home / ".basic-memory", {"main": str(main), "work": str(work), "gone": str(tmp_path / "gone")})
    ctx = _ctx(tmp_path)
    try:
        done = basic_memory.run(ctx, None, None, False)
    finally:
        ctx.close()
    assert done.read == [str(main), str(work)]
    assert done.projects["(global)"]["added"] == {"decision": 2}
    assert done.notes == [f"project gone: no folder at {tmp_path / 'gone'}"]
    by_text = {m.content: m for m in _all(marm_home)}
    assert by_text[f"Main Note: main guards {CODE}"].metadata["basic_memory_project"] == "main"
    work_note = by_text["Work Note: work ships on Tuesdays"]
    assert work_note.metadata["basic_memory_project"] == "work" and work_note.metadata["file"] == "deep/er/work-note.md"
    assert not any("does not know" in t for t in by_text)  # only the listed folders are read


def test_basic_memory_config_since_0_19_in_its_config_dir(tmp_path, marm_home, monkeypatch):
    """``projects`` as entries (``path``, ``mode``), the config in
    ``$BASIC_MEMORY_CONFIG_DIR`` before ``~/.basic-memory``; a cloud project is read
    from its local copy, and one without a local copy is left out with a note."""
    home = Path(os.environ["HOME"])
    research, synced, old = tmp_path / "research", tmp_path / "synced", home / "basic-memory"
    basic_memory_note(research, "Research Note", "the cache hit rate is 93%")
    basic_memory_note(synced, "Synced Note", "the bisync copy is read")
    basic_memory_note(old, "Home Note", "from a config basic-memory does not read now")
    basic_memory_config(home / ".basic-memory", {"main": str(old)})
    basic_memory_config(tmp_path / "bm-config", {
        "research": {"path": str(research), "mode": "local", "workspace_id": None},
        "remote": {"path": "remote", "mode": "cloud"},
        "synced": {"path": "synced", "mode": "cloud", "local_sync_path": str(synced), "bisync_initialized": True},
    }, default="research")
    monkeypatch.setenv("BASIC_MEMORY_CONFIG_DIR", str(tmp_path / "bm-config"))
    ctx = _ctx(tmp_path)
    try:
        done = basic_memory.run(ctx, None, None, False)
    finally:
        ctx.close()
    assert done.read == [str(research), str(synced)]
    assert done.notes == ["project remote: in Basic Memory Cloud with no local copy, not imported"]
    texts = [m.content for m in _all(marm_home)]
    assert sorted(texts) == ["Research Note: the cache hit rate is 93%", "Synced Note: the bisync copy is read"]


def test_basic_memory_path_beats_its_config_and_a_broken_config_is_an_error(tmp_path, marm_home):
    home = Path(os.environ["HOME"])
    listed, given = tmp_path / "listed", tmp_path / "given"
    basic_memory_note(listed, "Listed Note", "read only without PATH")
    basic_memory_note(given, "Given Note", "read because it was given")
    config = basic_memory_config(home / ".basic-memory", {"main": str(listed)})
    ctx = _ctx(tmp_path)
    try:
        done = basic_memory.run(ctx, str(given), None, False)
        config.write_text('{"projects": {"main": ')
        with pytest.raises(BadInput, match="cannot read basic-memory's config"):
            basic_memory.run(ctx, None, None, False)
        config.write_text('["not", "a", "config"]')
        with pytest.raises(BadInput, match="is not basic-memory's config"):
            basic_memory.run(ctx, None, None, False)
    finally:
        ctx.close()
    assert done.read == [str(given)]
    assert [m.content for m in _all(marm_home)] == ["Given Note: read because it was given"]


def test_forgotten_and_superseded_texts_stay_out(tmp_path, marm_home):
    """The shared pipeline, once for every source: text forgotten or superseded here
    is not brought back (``write_memory`` alone would store it again)."""
    root = basic_memory_notes(tmp_path / "notes")
    ctx = _ctx(tmp_path)
    try:
        gone = write_memory(scoped(ctx, None), "Auth Design: We compared sessions and tokens.").id
        forget(ctx, gone)
        old = write_memory(scoped(ctx, None), "Auth Design depends on User Database Schema").id
        new = write_memory(scoped(ctx, None), "Auth Design depends on the accounts service").id
        supersede(ctx, old, by=new)
        done = basic_memory.run(ctx, str(root), None, False)
    finally:
        ctx.close()
    skipped = done.projects["(global)"]["skipped"]
    assert skipped["forgotten here"] == 1 and skipped["superseded here"] == 1
    texts = [m.content for m in _all(marm_home)]
    assert f"Auth Design: {CODE} #retries (after the outage)" in texts
    assert "Auth Design: We compared sessions and tokens." not in texts
    assert texts.count("Auth Design depends on User Database Schema") == 1  # the superseded one only


# --- the real MCP memory server ----------------------------------------------------------------

MEMORY_SERVER = "@modelcontextprotocol/server-memory@2026.8.31"


@pytest.fixture(scope="session")
def memory_server(tmp_path_factory) -> Path:
    """The reference memory server from the npm registry: the copy ``.ci/agents`` (run by
    tests/run.sh) installs beside the agent CLIs, else installed here (about 10 s)."""
    import shutil
    import subprocess

    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to install the MCP memory server")
    package = Path(__file__).resolve().parents[2] / ".agents" / "node_modules" / "@modelcontextprotocol" / "server-memory"
    try:
        version = json.loads((package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        version = None
    if version == MEMORY_SERVER.rsplit("@", 1)[1] and (package / "dist" / "index.js").is_file():
        return package / "dist" / "index.js"
    where = tmp_path_factory.mktemp("server-memory")
    npm = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(where),
                          MEMORY_SERVER], capture_output=True, text=True, timeout=300)
    script = where / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    if npm.returncode != 0 or not script.is_file():
        pytest.skip(f"cannot install {MEMORY_SERVER}: {(npm.stderr.strip().splitlines() or ['?'])[-1]}")
    return script


@pytest.mark.slow
def test_a_graph_written_by_the_real_memory_server(memory_server, tmp_path, marm_home):
    """The server itself writes the graph (over STDIO, through the MCP client), then it
    is imported: the file's format is the server's, not this test's idea of it."""
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    graph_file = tmp_path / "graph.jsonl"

    async def write_graph() -> None:
        server = StdioServerParameters(command="node", args=[str(memory_server)],
                                       env={"PATH": os.environ["PATH"], "MEMORY_FILE_PATH": str(graph_file)})
        async with Client(server) as c:
            await c.call_tool("create_entities", {"entities": [
                {"name": "payments", "entityType": "service", "observations": [f"retries: {CODE}"]},
                {"name": "redis", "entityType": "tool", "observations": []}]})
            await c.call_tool("create_relations", {"relations": [
                {"from": "payments", "to": "redis", "relationType": "depends_on"}]})
            await c.call_tool("add_observations", {"observations": [
                {"entityName": "redis", "contents": [f"the staging password={SECRET} lives in vault"]}]})

    anyio.run(write_graph)
    assert graph_file.is_file()
    ctx = _ctx(tmp_path)
    try:
        done = mcp_memory.run(ctx, str(graph_file), None, False)
        again = mcp_memory.run(ctx, str(graph_file), None, False)
    finally:
        ctx.close()
    texts = {m.content: m for m in _all(marm_home)}
    assert done.projects["(global)"]["added"] == {"note": 3}
    assert again.projects["(global)"]["added"] == {}
    assert texts[f"payments: retries: {CODE}"].metadata["entity_type"] == "service"
    assert "payments depends on redis" in texts
    assert any(t.startswith("redis: the staging password=[REDACTED:") for t in texts)
    assert SECRET.encode() not in _every_byte(marm_home)
