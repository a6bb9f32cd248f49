"""Reads importers need: which projects marm knows, and which turns of a session are
already captured. (Writes go through ``memories.insert`` like every other write.)"""

from __future__ import annotations

from marm.store.db import Store


def known_projects(store: Store) -> list[str]:
    """Every project key that memories or sessions carry."""
    rows = store.conn.execute(
        "SELECT project FROM memories WHERE project IS NOT NULL"
        " UNION SELECT project FROM sessions WHERE project IS NOT NULL"
    ).fetchall()
    return sorted(r[0] for r in rows)


def episode_heads(store: Store, session: str) -> set[str]:
    """The first line (``Asked: ...``) of every episode captured in ``session``: a turn
    whose episode starts so was captured already (live, or by an earlier backfill),
    even where its other lines came out differently."""
    rows = store.conn.execute(
        "SELECT content FROM memories WHERE session = ? AND kind = 'episode'", (session,)
    ).fetchall()
    return {r[0].split("\n", 1)[0] for r in rows}


def last_memory_id(store: Store) -> int:
    """The highest memory id (0 for none): what a transaction adds comes after it."""
    return int(store.conn.execute("SELECT coalesce(max(id), 0) FROM memories").fetchone()[0])


def added_after(store: Store, after: int) -> list[tuple[str, str | None, str, str]]:
    """(content hash, project, kind, content) of every memory after id ``after``, in
    order: what a dry run's transaction wrote, read before it is rolled back."""
    return [(h, p, k, c) for h, p, k, c in store.conn.execute(
        "SELECT content_hash, project, kind, content FROM memories WHERE id > ? ORDER BY id", (after,))]
