"""Notebook entries: named reusable instructions, activated per session with ``use``."""

from __future__ import annotations

from marm.store import events
from marm.store.db import Store, now
from marm.store.records import NotebookEntry
from marm.text import content_hash


def _entry(store: Store, row: tuple) -> NotebookEntry:
    active = tuple(
        r[0] for r in store.conn.execute(
            "SELECT session FROM notebook_active WHERE name = ? ORDER BY session", (row[0],)
        )
    )
    return NotebookEntry(*row, active_in=active)  # type: ignore[misc]  # the row is the leading fields


def get(store: Store, name: str) -> NotebookEntry | None:
    row = store.conn.execute(
        "SELECT name, content, created_at, updated_at FROM notebook WHERE name = ?", (name,)
    ).fetchone()
    return None if row is None else _entry(store, row)


def put(store: Store, name: str, content: str) -> NotebookEntry:
    with store.write() as conn:
        before = get(store, name)
        t = now()
        conn.execute(
            "INSERT INTO notebook (name, content, created_at, updated_at) VALUES (?,?,?,?)"
            " ON CONFLICT (name) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
            (name, content, t, t),
        )
        events.append(
            store, "notebook.update" if before else "notebook.create", "notebook", name,
            before_hash=content_hash(before.content) if before else None,
            after_hash=content_hash(content),
        )
    entry = get(store, name)
    assert entry is not None
    return entry


def listing(store: Store) -> list[NotebookEntry]:
    rows = store.conn.execute(
        "SELECT name, content, created_at, updated_at FROM notebook ORDER BY name"
    ).fetchall()
    return [_entry(store, r) for r in rows]


def activate(store: Store, name: str, session: str) -> None:
    with store.write() as conn:
        conn.execute(
            "INSERT OR IGNORE INTO notebook_active (session, name, since) VALUES (?,?,?)",
            (session, name, now()),
        )
        events.append(store, "notebook.use", "notebook", name, session=session)


def active_for(store: Store, session: str) -> list[NotebookEntry]:
    rows = store.conn.execute(
        "SELECT n.name, n.content, n.created_at, n.updated_at FROM notebook n"
        " JOIN notebook_active a ON a.name = n.name WHERE a.session = ? ORDER BY a.since",
        (session,),
    ).fetchall()
    return [_entry(store, r) for r in rows]


def delete(store: Store, name: str) -> NotebookEntry | None:
    with store.write() as conn:
        before = get(store, name)
        if before is None:
            return None
        conn.execute("DELETE FROM notebook WHERE name = ?", (name,))
        events.append(store, "notebook.delete", "notebook", name, before_hash=content_hash(before.content))
    return before
