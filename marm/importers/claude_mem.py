"""From claude-mem: its SQLite store (``~/.claude-mem/claude-mem.db``, or under
``$CLAUDE_MEM_DATA_DIR``), read-only, as ``SessionStore.ts`` creates it.

- ``observations``: what its worker distilled from a session's tool use; the memory is
  the title, the subtitle, the narrative and the facts (a JSON list, one ``- `` line
  each), as claude-mem shows them; a row of the older schema with only ``text`` keeps
  that. Its ``type`` gives the kind: ``decision`` a decision, ``bugfix`` a fix,
  ``discovery`` a lesson, the rest (feature, refactor, change) a note.
- ``session_summaries``: one ``summary`` memory per summary, its parts labelled as
  claude-mem labels them (request, investigated, learned, completed, next steps, notes).

Project: claude-mem names a project by its git root's directory name (a worktree as
``parent/worktree``, and a merged project in ``merged_into_project``); that becomes the
marm project whose directory has that name, else the name (``project_for_name``, as for
MARM). Session: the agent's own session id (``sdk_sessions.content_session_id``, the id
the agent's transcripts carry), the platform its ``platform_source``. Time: the row's
``created_at_epoch`` (milliseconds), else ``created_at``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from marm.context import Ctx
from marm.errors import BadInput
from marm.importers import (ImportSummary, Record, column, import_records, open_sqlite, project_for_name,
                            rows, timestamp)

KINDS = {"decision": "decision", "bugfix": "fix", "discovery": "lesson"}
SUMMARY_PARTS = (("request", "Request"), ("investigated", "Investigated"), ("learned", "Learned"),
                 ("completed", "Completed"), ("next_steps", "Next steps"), ("notes", "Notes"))


def default_path(env: dict[str, str], home: Path) -> Path:
    data = env.get("CLAUDE_MEM_DATA_DIR")
    return (Path(data).expanduser() if data else home / ".claude-mem") / "claude-mem.db"


def run(ctx: Ctx, path: str | None, since: str | None, dry_run: bool) -> ImportSummary:
    home = Path(ctx.env.get("HOME") or Path.home())
    db = ctx.cwd / Path(path).expanduser() if path else default_path(dict(ctx.env), home)
    conn = open_sqlite(db, "claude-mem database")
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                        " AND name IN ('observations', 'session_summaries')").fetchone() is None:
            raise BadInput(f"{db} is not a claude-mem database (no observations or session_summaries table)")
        store = ctx.store()
        here = ctx.project()
        names: dict[str | None, str | None] = {}

        def project(row: sqlite3.Row) -> str | None:
            name = column(row, "merged_into_project") or column(row, "project")
            name = name.split("/", 1)[0] if name else None  # a worktree is its repository's project
            if name not in names:
                names[name] = project_for_name(store, name, also=[here])
            return names[name]

        return import_records(ctx, "claude-mem", _records(conn, project), since, dry_run, [str(db)])
    finally:
        conn.close()


def _records(conn: sqlite3.Connection, project: Any) -> Iterator[Record]:
    sessions = {column(r, "memory_session_id") or column(r, "sdk_session_id"): r for r in rows(conn, "sdk_sessions")}

    def session_of(row: sqlite3.Row) -> tuple[str | None, str | None]:
        key = column(row, "memory_session_id") or column(row, "sdk_session_id")
        s = sessions.get(key)
        agent_session = column(s, "content_session_id") or column(s, "claude_session_id") or key
        return agent_session, column(s, "platform_source") or "claude"

    for r in rows(conn, "observations"):
        session, platform = session_of(r)
        yield Record(f"observation:{r['id']}", _observation_text(r), project(r), _at(r),
                     kind=KINDS.get(str(column(r, "type") or ""), "note"), session=session, platform=platform,
                     metadata={"claude_mem_id": r["id"], "claude_mem_type": column(r, "type")})
    for r in rows(conn, "session_summaries"):
        session, platform = session_of(r)
        text = "\n".join(f"{label}: {column(r, key).strip()}" for key, label in SUMMARY_PARTS
                         if isinstance(column(r, key), str) and column(r, key).strip())
        yield Record(f"summary:{r['id']}", text, project(r), _at(r), kind="summary", session=session,
                     platform=platform, metadata={"claude_mem_summary_id": r["id"]})


def _observation_text(r: sqlite3.Row) -> str:
    import orjson

    def part(key: str) -> str | None:
        value = column(r, key)
        return value.strip() if isinstance(value, str) and value.strip() else None

    facts: Any = part("facts")
    try:
        facts = orjson.loads(facts) if facts else []
    except orjson.JSONDecodeError:
        facts = [facts]
    listed = "\n".join(f"- {f.strip()}" for f in (facts if isinstance(facts, list) else [])
                       if isinstance(f, str) and f.strip())
    title = "\n".join(x for x in (part("title"), part("subtitle")) if x)
    blocks = [b for b in (title, part("narrative") or part("text"), listed) if b]
    return "\n\n".join(blocks)


def _at(r: sqlite3.Row) -> str | None:
    return timestamp(column(r, "created_at_epoch")) or timestamp(column(r, "created_at"))
