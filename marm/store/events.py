"""The append-only audit trail: every mutation of the durable store adds one event.

Events carry no foreign keys and no content: they outlive the rows they describe
(a forgotten memory leaves its events, with hashes but without its text).
"""

from __future__ import annotations

from typing import Any

import orjson

from marm.store.db import Store, now
from marm.store.records import Event


def append(
    store: Store,
    action: str,
    entity: str,
    entity_id: object,
    *,
    reason: str | None = None,
    before_hash: str | None = None,
    after_hash: str | None = None,
    session: str | None = None,
    project: str | None = None,
    detail: dict[str, Any] | None = None,
    at: str | None = None,
) -> int:
    """Record one mutation. Call inside the write transaction that makes it."""
    assert store.in_transaction, "events are appended inside the mutating transaction"
    cur = store.conn.execute(
        "INSERT INTO events (at, action, entity, entity_id, source, platform, session, project,"
        " reason, before_hash, after_hash, detail) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            at or now(),
            action,
            entity,
            str(entity_id),
            store.actor.source,
            store.actor.platform,
            session,
            project,
            reason,
            before_hash,
            after_hash,
            orjson.dumps(detail or {}).decode(),
        ),
    )
    return int(cur.lastrowid or 0)


def _event(row: tuple) -> Event:
    return Event(*row[:12], detail=orjson.loads(row[12]))  # type: ignore[misc]  # the row is the leading fields


_COLUMNS = (
    "id, at, action, entity, entity_id, source, platform, session, project, reason,"
    " before_hash, after_hash, detail"
)


def for_entity(store: Store, entity: str, entity_id: object) -> list[Event]:
    """Every event of one entity, oldest first."""
    rows = store.conn.execute(
        f"SELECT {_COLUMNS} FROM events WHERE entity = ? AND entity_id = ? ORDER BY id",
        (entity, str(entity_id)),
    ).fetchall()
    return [_event(r) for r in rows]


def recent(store: Store, limit: int = 50, action: str | None = None) -> list[Event]:
    sql = f"SELECT {_COLUMNS} FROM events"
    args: list[Any] = []
    if action:
        sql += " WHERE action = ?"
        args.append(action)
    sql += " ORDER BY id DESC LIMIT ?"
    args.append(limit)
    return [_event(r) for r in store.conn.execute(sql, args).fetchall()]


def count(store: Store) -> int:
    return int(store.conn.execute("SELECT count(*) FROM events").fetchone()[0])


def matching(store: Store, where: str, args: list[Any]) -> list[Event]:
    """Events matching a SQL condition (store-internal callers only), oldest first by
    time: imported events keep their times but not their ids."""
    rows = store.conn.execute(
        f"SELECT {_COLUMNS} FROM events WHERE {where} ORDER BY at, id", args
    ).fetchall()
    return [_event(r) for r in rows]
