"""From MARM (marm-mcp-server): its memories, log entries, notebook entries, sessions
and concept review verdicts.

MARM HTML-escapes every memory on write (``html.escape`` in ``sanitize_content``) and
never un-escapes; log entries and notebook entries are stored raw. So only memory
content is un-escaped (``&lt;`` back to ``<``), which gives code its ``<`` and ``&``
again. A log entry is imported from ``log_entries`` (raw, and marm's log form makes the
log row); the memory MARM mirrored it into is the same text and is skipped. MARM's own
documentation (session ``marm_system``) and memories compacted into a summary are not
the user's memories and are skipped. MARM names projects by their directory's name;
that becomes the marm project with that name, else the name. Times stay as recorded.

The concept review tables (aliases, suppressions, duplicate dismissals) live in MARM's
concept database (``index/marm_index.db`` beside the memory database) and become
marm's concept verdicts, which are keyed on names as MARM's are.
"""

from __future__ import annotations

import html
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from marm.context import Ctx
from marm.importers import (ImportSummary, Record, Tallies, column, import_records, open_sqlite,
                            project_for_name, rows, timestamp)

DEFAULT = Path(".marm") / "marm_memory.db"
CONCEPTS = Path("index") / "marm_index.db"
SYSTEM_SESSION = "marm_system"


def _meta(row: sqlite3.Row | None) -> dict[str, Any]:
    import orjson

    try:
        value = orjson.loads(column(row, "metadata") or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def run(ctx: Ctx, path: str | None, since: str | None, dry_run: bool) -> ImportSummary:
    home = Path(ctx.env.get("HOME") or Path.home())
    db = ctx.cwd / Path(path).expanduser() if path else home / DEFAULT
    conn = open_sqlite(db, "MARM database")
    store = ctx.store()
    projects: dict[str | None, str | None] = {}
    here = ctx.project()

    def project(name: str | None) -> str | None:
        if name not in projects:
            projects[name] = project_for_name(store, name, also=[here])
        return projects[name]

    notes: list[str] = []

    def also(tallies: Tallies) -> None:
        _notebook(store, conn, tallies, project)
        _sessions(store, conn, tallies)
        _verdicts(store, db.parent / CONCEPTS, tallies, notes)

    try:
        return import_records(ctx, "marm", _records(conn, project), since, dry_run, [str(db)], notes, also)
    finally:
        conn.close()


def _records(conn: sqlite3.Connection, project: Any) -> Iterator[Record]:
    """MARM's memories (un-escaped) and log entries (raw), less what is not the user's."""
    for r in rows(conn, "memories"):
        meta = _meta(r)
        skip = None
        if column(r, "session_name") == SYSTEM_SESSION or meta.get("doc_type") == "documentation":
            skip = "MARM's own documentation"
        elif column(r, "compaction_role") == "source":
            skip = "compacted into a MARM summary (the summary is imported)"
        elif meta.get("source") == "log_entry":
            skip = "mirror of a log entry (imported as the log entry)"
        yield Record(f"memory:{r['id']}", html.unescape(r["content"] or ""), project(column(r, "project")),
                     timestamp(column(r, "timestamp")) or timestamp(column(r, "created_at")),
                     session=column(r, "session_name") or None, platform=column(r, "platform") or None,
                     metadata={"marm_id": r["id"], "marm_context": column(r, "context_type")}, skip=skip)
    mirrors = {m.get("log_entry_id"): r for r in rows(conn, "memories")
               for m in [_meta(r)] if m.get("source") == "log_entry"}
    for r in rows(conn, "log_entries"):
        mirror = mirrors.get(r["id"])
        at = timestamp(column(mirror, "timestamp")) or timestamp(column(r, "created_at"))
        yield Record(f"log:{r['id']}", r["full_entry"] or r["summary"] or "", project(column(r, "project")), at,
                     session=column(r, "session_name") or None, platform=column(r, "platform") or None,
                     metadata={"marm_log_id": r["id"]})


def _notebook(store: Any, conn: sqlite3.Connection, tallies: Tallies, project: Any) -> None:
    """MARM's notebook entries (scoped by project and session there; named, global in
    marm): the newest text of a name wins, as ``marm import`` does with an export."""
    from marm.store import transfer
    from marm.text import clean

    for r in sorted(rows(conn, "notebook_entries"), key=lambda r: str(column(r, "updated_at") or "")):
        tally = tallies.of(project(column(r, "project")))
        text = clean(r["data"] or "").text.strip()
        if not text or not r["name"]:
            tally.skip("empty notebook entry")
            continue
        created = timestamp(column(r, "created_at")) or timestamp(column(r, "updated_at"))
        updated = timestamp(column(r, "updated_at")) or created
        record = {"name": r["name"], "content": text, "created_at": created, "updated_at": updated}
        if transfer.put_notebook(store, record):
            tally.add("notebook entry")
        else:
            tally.skip("notebook entry already here")


def _sessions(store: Any, conn: sqlite3.Connection, tallies: Tallies) -> None:
    """MARM's sessions, so that one with no memory (a notebook's) is known too."""
    from marm.store import transfer

    for r in rows(conn, "sessions"):
        name = r["session_name"]
        if not name or name == SYSTEM_SESSION:
            continue
        created = timestamp(column(r, "created_at"))
        seen = timestamp(column(r, "last_accessed")) or created
        record = {"name": name, "project": None, "platform": None, "created_at": created, "last_seen_at": seen}
        if transfer.put_simple(store, "session", record):
            tallies.of(None).add("session")


def _verdicts(store: Any, path: Path, tallies: Tallies, notes: list[str]) -> None:
    """Aliases, suppressions and dismissals from MARM's concept database."""
    from marm.store import transfer

    if not path.is_file():
        notes.append(f"no MARM concept database beside it ({CONCEPTS}): no concept verdicts to import")
        return
    conn = open_sqlite(path, "MARM concept database")
    tally = tallies.of(None)
    try:
        for kind, table, record in (
            ("concept_alias", "concept_entity_aliases",
             lambda r: {"alias": r["alias_name"], "canonical": r["canonical_name"]}),
            ("concept_suppression", "concept_entity_suppressions",
             lambda r: {"name": r["name"], "reason": "removed in MARM"}),
            ("concept_dismissal", "concept_duplicate_dismissals",
             lambda r: dict(zip(("a", "b"), sorted((r["name_a"], r["name_b"]))))),
        ):
            for r in rows(conn, table):
                row = {**record(r), "at": timestamp(column(r, "created_at"))}
                if transfer.put_simple(store, kind, row):
                    tally.add(kind.replace("_", " "))
                else:
                    tally.skip(f"{kind.replace('_', ' ')} already here")
    finally:
        conn.close()
