"""Log entries: the ``YYYY-MM-DD-topic-summary`` rows that mirror one memory each."""

from __future__ import annotations

from marm.store import events
from marm.store.db import Store
from marm.store.records import LogEntry, Memory

_COLUMNS = "id, memory_id, entry_date, topic, summary, session, project, recorded_at"


def insert(store: Store, memory: Memory, entry_date: str | None, topic: str | None, summary: str) -> LogEntry:
    """Add the log row of ``memory``. Call in the transaction that inserted the memory."""
    assert store.in_transaction
    cur = store.conn.execute(
        "INSERT INTO log_entries (memory_id, entry_date, topic, summary, session, project, recorded_at)"
        " VALUES (?,?,?,?,?,?,?)",
        (memory.id, entry_date, topic, summary, memory.session, memory.project, memory.recorded_at),
    )
    log_id = int(cur.lastrowid or 0)
    events.append(
        store, "log.create", "log", log_id, after_hash=memory.content_hash,
        session=memory.session, project=memory.project, detail={"memory_id": memory.id},
    )
    return LogEntry(log_id, memory.id, entry_date, topic, summary, memory.session, memory.project,
                    memory.recorded_at)


def get(store: Store, log_id: int) -> LogEntry | None:
    row = store.conn.execute(f"SELECT {_COLUMNS} FROM log_entries WHERE id = ?", (log_id,)).fetchone()
    return None if row is None else LogEntry(*row)


def for_memory(store: Store, memory_id: int) -> LogEntry | None:
    row = store.conn.execute(
        f"SELECT {_COLUMNS} FROM log_entries WHERE memory_id = ?", (memory_id,)
    ).fetchone()
    return None if row is None else LogEntry(*row)


def listing(
    store: Store, project: str | None, all_projects: bool, session: str | None, limit: int
) -> list[LogEntry]:
    """Newest first; the caller's project plus global rows unless ``all_projects``.
    Entries of retracted memories are left out (a retraction says they were wrong)."""
    clauses = ["memory_id NOT IN (SELECT id FROM memories WHERE status = 'retracted')"]
    args: list = []
    if not all_projects:
        if project is None:
            clauses.append("project IS NULL")
        else:
            clauses.append("(project IS NULL OR project = ?)")
            args.append(project)
    if session is not None:
        clauses.append("session = ?")
        args.append(session)
    where = " AND ".join(clauses) or "1"
    rows = store.conn.execute(
        f"SELECT {_COLUMNS} FROM log_entries WHERE {where} ORDER BY coalesce(entry_date, recorded_at)"
        " DESC, id DESC LIMIT ?",
        [*args, limit],
    ).fetchall()
    return [LogEntry(*r) for r in rows]
