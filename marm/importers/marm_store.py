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
from pathlib import Path
from typing import Any

from marm.errors import BadInput, NotFound
from marm.importers import (DryRun, ImportSummary, Tallies, acting, project_for_name, scoped, timestamp,
                            write)
from marm.context import Ctx

DEFAULT = Path(".marm") / "marm_memory.db"
CONCEPTS = Path("index") / "marm_index.db"
SYSTEM_SESSION = "marm_system"


def _open(path: Path) -> sqlite3.Connection:
    """MARM's database, read-only (a running MARM may hold it; nothing is changed)."""
    if not path.is_file():
        raise NotFound(f"no MARM database at {path}")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.execute("SELECT 1 FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise BadInput(f"{path} is not a SQLite database ({exc})") from None
    conn.row_factory = sqlite3.Row
    return conn


def _rows(conn: sqlite3.Connection, table: str) -> list[sqlite3.Row]:
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone() is None:
        return []
    return conn.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608 - fixed table names


def _get(row: sqlite3.Row, key: str) -> Any:
    return row[key] if key in row.keys() else None


def _meta(row: sqlite3.Row) -> dict[str, Any]:
    import orjson

    try:
        value = orjson.loads(_get(row, "metadata") or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def run(ctx: Ctx, path: str | None, since: str | None, dry_run: bool) -> ImportSummary:
    home = Path(ctx.env.get("HOME") or Path.home())
    db = ctx.cwd / Path(path).expanduser() if path else home / DEFAULT
    conn = _open(db)
    store = ctx.store()
    tallies = Tallies()
    projects: dict[str | None, str | None] = {}
    here = ctx.project()

    def project(name: str | None) -> str | None:
        if name not in projects:
            projects[name] = project_for_name(store, name, also=[here])
        return projects[name]

    def recent(at: str | None) -> bool:
        return not since or not at or at >= since

    notes: list[str] = []
    try:
        with acting(ctx, None), store.write():
            for r in _rows(conn, "memories"):
                key = project(_get(r, "project"))
                tally = tallies.of(key)
                meta = _meta(r)
                at = timestamp(_get(r, "timestamp")) or timestamp(_get(r, "created_at"))
                if _get(r, "session_name") == SYSTEM_SESSION or meta.get("doc_type") == "documentation":
                    tally.skip("MARM's own documentation")
                elif _get(r, "compaction_role") == "source":
                    tally.skip("compacted into a MARM summary (the summary is imported)")
                elif meta.get("source") == "log_entry":
                    tally.skip("mirror of a log entry (imported as the log entry)")
                elif not recent(at):
                    tally.skip("before --since")
                else:
                    _with_platform(ctx, _get(r, "platform"), lambda: write(
                        scoped(ctx, key), tally, html.unescape(r["content"] or ""),
                        session=_get(r, "session_name") or None, recorded_at=at,
                        metadata={"imported": "marm", "marm_id": r["id"],
                                  "marm_context": _get(r, "context_type")}))
            mirrors = {m.get("log_entry_id"): r for r in _rows(conn, "memories")
                       for m in [_meta(r)] if m.get("source") == "log_entry"}
            for r in _rows(conn, "log_entries"):
                key = project(_get(r, "project"))
                tally = tallies.of(key)
                mirror = mirrors.get(r["id"])
                at = (timestamp(_get(mirror, "timestamp")) if mirror is not None else None) \
                    or timestamp(_get(r, "created_at"))
                if not recent(at):
                    tally.skip("before --since")
                    continue
                _with_platform(ctx, _get(r, "platform"), lambda: write(
                    scoped(ctx, key), tally, r["full_entry"] or r["summary"] or "",
                    session=_get(r, "session_name") or None, recorded_at=at,
                    metadata={"imported": "marm", "marm_log_id": r["id"]}))
            _notebook(store, conn, tallies, project)
            _sessions(store, conn, tallies, project)
            _verdicts(store, db.parent / CONCEPTS, tallies, notes)
            if dry_run:
                raise DryRun
    except DryRun:
        pass
    finally:
        conn.close()
    return ImportSummary.of("marm", dry_run, [str(db)], tallies, notes)


def _with_platform(ctx: Ctx, platform: str | None, action: Any) -> Any:
    with acting(ctx, platform or None):
        return action()


def _notebook(store: Any, conn: sqlite3.Connection, tallies: Tallies, project: Any) -> None:
    """MARM's notebook entries (scoped by project and session there; named, global in
    marm): the newest text of a name wins, as ``marm import`` does with an export."""
    from marm.store import transfer
    from marm.text import clean

    for r in sorted(_rows(conn, "notebook_entries"), key=lambda r: str(_get(r, "updated_at") or "")):
        tally = tallies.of(project(_get(r, "project")))
        text = clean(r["data"] or "").text.strip()
        if not text or not r["name"]:
            tally.skip("empty notebook entry")
            continue
        created = timestamp(_get(r, "created_at")) or timestamp(_get(r, "updated_at"))
        updated = timestamp(_get(r, "updated_at")) or created
        record = {"name": r["name"], "content": text, "created_at": created, "updated_at": updated}
        if transfer.put_notebook(store, record):
            tally.add("notebook entry")
        else:
            tally.skip("notebook entry already here")


def _sessions(store: Any, conn: sqlite3.Connection, tallies: Tallies, project: Any) -> None:
    """MARM's sessions, so that one with no memory (a notebook's) is known too."""
    from marm.store import transfer

    for r in _rows(conn, "sessions"):
        name = r["session_name"]
        if not name or name == SYSTEM_SESSION:
            continue
        created = timestamp(_get(r, "created_at"))
        seen = timestamp(_get(r, "last_accessed")) or created
        record = {"name": name, "project": None, "platform": None, "created_at": created, "last_seen_at": seen}
        if transfer.put_simple(store, "session", record):
            tallies.of(None).add("session")


def _verdicts(store: Any, path: Path, tallies: Tallies, notes: list[str]) -> None:
    """Aliases, suppressions and dismissals from MARM's concept database."""
    from marm.store import transfer

    if not path.is_file():
        notes.append(f"no MARM concept database beside it ({CONCEPTS}): no concept verdicts to import")
        return
    conn = _open(path)
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
            for r in _rows(conn, table):
                row = {**record(r), "at": timestamp(_get(r, "created_at"))}
                if transfer.put_simple(store, kind, row):
                    tally.add(kind.replace("_", " "))
                else:
                    tally.skip(f"{kind.replace('_', ' ')} already here")
    finally:
        conn.close()
