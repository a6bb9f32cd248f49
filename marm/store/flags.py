"""Runtime settings saved in the database (``marm config set``)."""

from __future__ import annotations

from marm.store import events
from marm.store.db import Store, now


def get(store: Store, key: str) -> str | None:
    row = store.conn.execute("SELECT value FROM flags WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def all_saved(store: Store) -> dict[str, str]:
    return dict(store.conn.execute("SELECT key, value FROM flags ORDER BY key").fetchall())


def put(store: Store, key: str, value: str | None) -> None:
    """Save ``value`` for ``key`` (None removes the saved value), with an event."""
    with store.write() as conn:
        before = get(store, key)
        if value is None:
            conn.execute("DELETE FROM flags WHERE key = ?", (key,))
        else:
            conn.execute(
                "INSERT INTO flags (key, value, updated_at) VALUES (?,?,?) ON CONFLICT (key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (key, value, now()),
            )
        events.append(
            store, "flag.set" if value is not None else "flag.unset", "flag", key,
            detail={"before": before, "after": value},
        )
