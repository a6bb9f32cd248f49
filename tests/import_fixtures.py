"""Other memory tools' stores, made as each tool writes them, for the import tests
(``tests/unit/test_import_tools.py``, ``tests/cli/test_import_cli.py``)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from marm.importers import claude_memory

#: 2026-01-02T03:04:05Z, the time every fixture file is given.
MTIME = 1767323045
AT = "2026-01-02T03:04:05.000000Z"
CODE = "guard retries with `if (a < b && c) { retry(); }`"
SECRET = "hunter2x"
RETRACTED = "keep the legacy <cache> & its TTL"


def touch(*paths: Path) -> None:
    for p in paths:
        os.utime(p, (MTIME, MTIME))


def claude_memory_dirs(home: Path, shop: Path, web: Path, api_src: Path) -> Path:
    """Three project folders as Claude Code names them: one whose directory marm knows,
    one (``web-app``: a ``-`` in its name) found on disk, one explained by a transcript."""
    projects = home / ".claude" / "projects"
    mem = projects / claude_memory.slug(str(shop)) / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text(
        "# Memory index\n\n"
        "- [Retry guard](retry_guard.md) — how retries are guarded\n"
        "- Build with `make -j4 && make test` (CI does the same)\n")
    (mem / "retry_guard.md").write_text(
        "---\nname: Retry guard\ndescription: bounded retries only\ntype: feedback\n---\n"
        f"{CODE}.\n\n**Why:** unbounded retries hammered the API.\n")
    (mem / "deploy.md").write_text(
        f"## Deploy\n\n- the staging login is password={SECRET} for now\n- {RETRACTED}\n")
    web_mem = projects / claude_memory.slug(str(web)) / "memory"
    web_mem.mkdir(parents=True)
    (web_mem / "user_role.md").write_text(
        "---\nname: role\ndescription: the user is a backend engineer\ntype: user\n---\n"
        "Explain frontend code in backend terms.\n")
    api = projects / claude_memory.slug(str(api_src))
    (api / "memory").mkdir(parents=True)
    (api / "memory" / "notes.md").write_text("- DECISION: the API speaks JSON only\n")
    (api / "s1.jsonl").write_text(json.dumps({"type": "user", "cwd": str(api_src), "sessionId": "s1"}) + "\n")
    touch(*mem.iterdir(), *web_mem.iterdir(), api / "memory" / "notes.md")
    return projects


def mcp_graph(path: Path) -> Path:
    lines = [
        {"type": "entity", "name": "Alice", "entityType": "person",
         "observations": [f"prefers {CODE}", f"her staging password={SECRET}", RETRACTED]},
        {"type": "entity", "name": "Acme", "entityType": "organization", "observations": []},
        {"type": "relation", "from": "Alice", "to": "Acme", "relationType": "works_at"},
    ]
    path.write_text("\n".join(json.dumps(v) for v in lines) + "\nnot json\n")
    touch(path)
    return path


#: claude-mem's tables as ``SessionStore.ts`` leaves them after its migrations (the
#: columns an import reads; FTS tables and sync columns left out).
CLAUDE_MEM_DDL = """
CREATE TABLE sdk_sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  content_session_id TEXT NOT NULL,
  memory_session_id TEXT UNIQUE,
  project TEXT NOT NULL,
  platform_source TEXT NOT NULL DEFAULT 'claude',
  user_prompt TEXT,
  started_at TEXT NOT NULL,
  started_at_epoch INTEGER NOT NULL,
  completed_at TEXT,
  completed_at_epoch INTEGER,
  status TEXT CHECK(status IN ('active', 'completed', 'failed')) NOT NULL DEFAULT 'active',
  worker_port INTEGER,
  prompt_counter INTEGER DEFAULT 0,
  custom_title TEXT
);
CREATE TABLE observations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL,
  project TEXT NOT NULL,
  text TEXT,
  type TEXT NOT NULL,
  title TEXT,
  subtitle TEXT,
  facts TEXT,
  narrative TEXT,
  concepts TEXT,
  files_read TEXT,
  files_modified TEXT,
  prompt_number INTEGER,
  discovery_tokens INTEGER DEFAULT 0,
  created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL,
  content_hash TEXT,
  generated_by_model TEXT,
  relevance_count INTEGER DEFAULT 0,
  merged_into_project TEXT,
  agent_type TEXT,
  agent_id TEXT,
  metadata TEXT,
  FOREIGN KEY(memory_session_id) REFERENCES sdk_sessions(memory_session_id) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE TABLE session_summaries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL,
  project TEXT NOT NULL,
  request TEXT,
  investigated TEXT,
  learned TEXT,
  completed TEXT,
  next_steps TEXT,
  files_read TEXT,
  files_edited TEXT,
  notes TEXT,
  prompt_number INTEGER,
  discovery_tokens INTEGER DEFAULT 0,
  created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL,
  merged_into_project TEXT,
  FOREIGN KEY(memory_session_id) REFERENCES sdk_sessions(memory_session_id) ON DELETE CASCADE ON UPDATE CASCADE
);
"""
#: 2026-01-03T10:00:00.250Z in claude-mem's milliseconds.
EPOCH_MS = 1767434400250


def claude_mem_db(db: Path) -> Path:
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(CLAUDE_MEM_DDL)
    conn.execute("INSERT INTO sdk_sessions (content_session_id, memory_session_id, project, started_at,"
                 " started_at_epoch) VALUES ('claude-s1', 'mem-1', 'shop', '2026-01-03T09:00:00Z', 1767430800000)")
    obs = [
        ("bugfix", "Retry storm fixed", "bounded retries", "The client retried forever.",
         json.dumps([CODE, "the backoff doubles"]), "shop", None),
        ("decision", "Staging login", None, f"use password={SECRET} until SSO", "[]", "shop", None),
        ("decision", "Cache", None, RETRACTED, "[]", "shop", None),
        ("discovery", "Worktree note", None, "the worktree shares the repository", "[]", "shop/feature-x", None),
    ]
    conn.executemany("INSERT INTO observations (memory_session_id, type, title, subtitle, narrative, facts, project,"
                     " merged_into_project, created_at, created_at_epoch) VALUES ('mem-1',?,?,?,?,?,?,?,"
                     " '2026-01-03T10:00:00.250Z', ?)", [(*o, EPOCH_MS) for o in obs])
    conn.execute("INSERT INTO session_summaries (memory_session_id, project, request, learned, next_steps,"
                 " created_at, created_at_epoch) VALUES ('mem-1', 'shop', 'stop the retry storm',"
                 " 'retries need a bound: a < b && c', 'ship it', '2026-01-03T10:00:00.250Z', ?)", (EPOCH_MS,))
    conn.commit()
    conn.close()
    return db


def basic_memory_notes(root: Path) -> Path:
    (root / "design").mkdir(parents=True)
    note = root / "design" / "auth-design.md"
    note.write_text(
        "---\ntitle: Auth Design\ntype: note\npermalink: design/auth-design\ntags: [auth, backend]\n---\n\n"
        "# Auth Design\n\nWe compared sessions and tokens.\n\n"
        "## Observations\n"
        f"- [decision] {CODE} #retries (after the outage)\n"
        f"- [config] staging uses password={SECRET}\n"
        f"- [tech] {RETRACTED}\n"
        "- [ ] a task box, not an observation\n\n"
        "## Relations\n- implements [[API Security Requirements]]\n- depends_on [[User Database Schema]]\n")
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "hidden.md").write_text("- [note] an editor's file, not a note\n")
    touch(note)
    return root


def basic_memory_note(folder: Path, title: str, fact: str) -> Path:
    """One small basic-memory note with one observation, ``Title: fact`` once imported."""
    folder.mkdir(parents=True, exist_ok=True)
    note = folder / f"{title.lower().replace(' ', '-')}.md"
    note.write_text(f"---\ntitle: {title}\ntype: note\n---\n\n## Observations\n- [decision] {fact}\n")
    touch(note)
    return note


def basic_memory_config(config_dir: Path, projects: dict[str, object], default: str = "main") -> Path:
    """basic-memory's ``config.json`` as it saves one (``projects``: name -> folder, or
    name -> entry with ``path`` and ``mode`` since 0.19), with a few of its other keys."""
    config_dir.mkdir(parents=True, exist_ok=True)
    path = config_dir / "config.json"
    path.write_text(json.dumps({"env": "user", "projects": projects, "default_project": default,
                                "log_level": "INFO", "sync_delay": 1000, "kebab_filenames": False}, indent=2))
    return path
