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
