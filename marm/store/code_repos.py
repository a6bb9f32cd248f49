"""Repositories marm indexes, and the dirty marks hooks leave when an agent edits files.

The code graph itself is derived (``derived.db``); which repositories to keep current
is durable, so it lives here.
"""

from __future__ import annotations

from dataclasses import dataclass

from marm.store.db import Store, now


@dataclass(frozen=True, slots=True)
class Repo:
    path: str
    project: str | None
    added_at: str
    dirty_since: str | None
    last_indexed_at: str | None


_COLUMNS = "path, project, added_at, dirty_since, last_indexed_at"


def mark_dirty(store: Store, path: str, project: str | None) -> None:
    """Note that files under ``path`` changed (keeps the earliest unindexed change)."""
    t = now()
    with store.write() as conn:
        conn.execute(
            "INSERT INTO code_repos (path, project, added_at, dirty_since) VALUES (?,?,?,?)"
            " ON CONFLICT (path) DO UPDATE SET dirty_since = coalesce(dirty_since, excluded.dirty_since)",
            (path, project, t, t),
        )


def mark_indexed(store: Store, path: str, project: str | None, started_at: str) -> None:
    """Record an index run that started at ``started_at``; a change marked after that
    start stays dirty for the next run."""
    with store.write() as conn:
        conn.execute(
            "INSERT INTO code_repos (path, project, added_at, last_indexed_at) VALUES (?,?,?,?)"
            " ON CONFLICT (path) DO UPDATE SET last_indexed_at = excluded.last_indexed_at,"
            " dirty_since = CASE WHEN dirty_since > ? THEN dirty_since ELSE NULL END",
            (path, project, started_at, started_at, started_at),
        )


def dirty(store: Store) -> list[Repo]:
    rows = store.conn.execute(
        f"SELECT {_COLUMNS} FROM code_repos WHERE dirty_since IS NOT NULL ORDER BY dirty_since"
    ).fetchall()
    return [Repo(*r) for r in rows]


def listing(store: Store) -> list[Repo]:
    return [Repo(*r) for r in store.conn.execute(f"SELECT {_COLUMNS} FROM code_repos ORDER BY path")]


def get(store: Store, path: str) -> Repo | None:
    row = store.conn.execute(f"SELECT {_COLUMNS} FROM code_repos WHERE path = ?", (path,)).fetchone()
    return None if row is None else Repo(*row)


def remove(store: Store, path: str) -> bool:
    with store.write() as conn:
        return conn.execute("DELETE FROM code_repos WHERE path = ?", (path,)).rowcount > 0
