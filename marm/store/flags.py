"""Runtime settings saved in the database (``marm config set``): global ones in
``flags``, per-project ones in ``project_flags`` (``--project``)."""

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


def project_saved(store: Store, project: str | None) -> dict[str, str]:
    """Every setting saved for ``project`` (none for the global scope, None)."""
    if project is None:
        return {}
    return dict(store.conn.execute(
        "SELECT key, value FROM project_flags WHERE project = ? ORDER BY key", (project,)).fetchall())


def put_project(store: Store, project: str, key: str, value: str | None) -> None:
    """Save ``value`` for ``key`` in ``project`` (None removes it), with an event."""
    with store.write() as conn:
        before = project_saved(store, project).get(key)
        if value is None:
            conn.execute("DELETE FROM project_flags WHERE project = ? AND key = ?", (project, key))
        else:
            conn.execute(
                "INSERT INTO project_flags (project, key, value, updated_at) VALUES (?,?,?,?)"
                " ON CONFLICT (project, key) DO UPDATE SET value = excluded.value,"
                " updated_at = excluded.updated_at",
                (project, key, value, now()),
            )
        events.append(
            store, "flag.set" if value is not None else "flag.unset", "flag", f"{project}:{key}",
            detail={"before": before, "after": value, "project": project},
        )
