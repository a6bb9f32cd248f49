"""Sessions: named groups of memories (a CLI session name, or an agent's session id)."""

from __future__ import annotations

from marm.store import events, memories
from marm.store.db import Store, now
from marm.store.records import Session


def touch(store: Store, name: str, project: str | None) -> None:
    """Record that ``name`` was used now. Call inside a write transaction."""
    t = now()
    store.conn.execute(
        "INSERT INTO sessions (name, project, platform, created_at, last_seen_at) VALUES (?,?,?,?,?)"
        " ON CONFLICT (name) DO UPDATE SET last_seen_at = excluded.last_seen_at",
        (name, project, store.actor.platform, t, t),
    )


def listing(store: Store, project: str | None, all_projects: bool) -> list[Session]:
    where, args = "1", []
    if not all_projects:
        where = "(s.project IS NULL OR s.project = ?)" if project else "s.project IS NULL"
        args = [project] if project else []
    rows = store.conn.execute(
        "SELECT s.name, s.project, s.platform, s.created_at, s.last_seen_at,"
        " (SELECT count(*) FROM memories m WHERE m.session = s.name)"
        f" FROM sessions s WHERE {where} ORDER BY s.last_seen_at DESC",
        args,
    ).fetchall()
    return [Session(*r) for r in rows]


def get(store: Store, name: str) -> Session | None:
    row = store.conn.execute(
        "SELECT s.name, s.project, s.platform, s.created_at, s.last_seen_at,"
        " (SELECT count(*) FROM memories m WHERE m.session = s.name) FROM sessions s WHERE s.name = ?",
        (name,),
    ).fetchone()
    return None if row is None else Session(*row)


def delete(store: Store, name: str) -> int:
    """Delete a session with its memories, log rows and notebook activations; return
    how many memories went. Each memory's deletion is its own event."""
    ids = [r[0] for r in store.conn.execute("SELECT id FROM memories WHERE session = ?", (name,))]
    with store.write() as conn:
        for memory_id in ids:
            memories.delete(store, memory_id, reason=f"session {name} deleted")
        conn.execute("DELETE FROM notebook_active WHERE session = ?", (name,))
        conn.execute("DELETE FROM sessions WHERE name = ?", (name,))
        events.append(store, "session.delete", "session", name, detail={"memories": len(ids)})
    return len(ids)
