"""The durable outbox of background work (embedding, concept extraction, ...).

A write enqueues its tasks in its own transaction, so a memory never exists without
them. A drain claims a batch by setting a lease token and a lease deadline; it deletes
a task when done (only if its token still matches: a task re-enqueued meanwhile, for
new content, stays pending) or records the failure, and parks the task after
``MAX_ATTEMPTS``. A drain killed mid-batch leaves leases that expire, and the next
drain claims those tasks again: nothing is lost.
"""

from __future__ import annotations

import os

from marm.store.db import Store, now
from marm.store.records import Task

MAX_ATTEMPTS = 3


def enqueue(store: Store, kind: str, target: object, content_hash: str | None = None) -> None:
    """Add (or re-arm) the task ``kind`` for ``target``. Call inside a write transaction."""
    t = now()
    store.conn.execute(
        "INSERT INTO outbox (kind, target, content_hash, created_at, updated_at)"
        " VALUES (?,?,?,?,?) ON CONFLICT (kind, target) DO UPDATE SET"
        " content_hash = excluded.content_hash, state = 'pending', attempts = 0,"
        " last_error = NULL, lease_token = NULL, lease_until = NULL, updated_at = excluded.updated_at",
        (kind, str(target), content_hash, t, t),
    )


def claim(store: Store, kind: str, limit: int, lease_seconds: float = 300) -> list[Task]:
    """Lease up to ``limit`` ready tasks of ``kind`` (pending, not leased or lease expired)."""
    token = os.urandom(8).hex()
    with store.write() as conn:
        rows = conn.execute(
            "SELECT id, kind, target, content_hash, attempts FROM outbox"
            " WHERE kind = ? AND state = 'pending' AND (lease_until IS NULL OR lease_until < ?)"
            " ORDER BY id LIMIT ?",
            (kind, now(), limit),
        ).fetchall()
        if rows:
            until = now(lease_seconds)
            conn.executemany(
                "UPDATE outbox SET lease_token = ?, lease_until = ? WHERE id = ?",
                [(token, until, r[0]) for r in rows],
            )
    return [Task(r[0], r[1], r[2], r[3], r[4], token) for r in rows]


def complete(store: Store, tasks: list[Task]) -> None:
    """Delete finished tasks whose lease is still ours. Call inside a write transaction."""
    store.conn.executemany(
        "DELETE FROM outbox WHERE id = ? AND lease_token = ?",
        [(t.id, t.lease_token) for t in tasks],
    )


def fail(store: Store, task: Task, error: str) -> bool:
    """Record a failed attempt; park the task after MAX_ATTEMPTS. Returns True if parked."""
    with store.write() as conn:
        row = conn.execute(
            "SELECT attempts FROM outbox WHERE id = ? AND lease_token = ?", (task.id, task.lease_token)
        ).fetchone()
        if row is None:
            return False
        attempts = row[0] + 1
        parked = attempts >= MAX_ATTEMPTS
        conn.execute(
            "UPDATE outbox SET attempts = ?, last_error = ?, state = ?, lease_token = NULL,"
            " lease_until = NULL, updated_at = ? WHERE id = ?",
            (attempts, error[:2000], "parked" if parked else "pending", now(), task.id),
        )
    return parked


def release(store: Store, tasks: list[Task]) -> None:
    """Give leased tasks back untouched (e.g. a drain stopping on its time budget)."""
    with store.write() as conn:
        conn.executemany(
            "UPDATE outbox SET lease_token = NULL, lease_until = NULL WHERE id = ? AND lease_token = ?",
            [(t.id, t.lease_token) for t in tasks],
        )


def release_orphans(store: Store, kinds: list[str]) -> int:
    """Clear the task leases of ``kinds``. Only for a process that just took the
    ``drain`` lease: tasks of these kinds are claimed only under it, so a claim still on
    one belongs to a holder that died (``kill -9``) mid-batch, and its tasks should run
    now, not when the claim expires."""
    with store.write() as conn:
        return conn.execute(
            f"UPDATE outbox SET lease_token = NULL, lease_until = NULL WHERE lease_token IS NOT NULL"
            f" AND kind IN ({','.join('?' * len(kinds))})", kinds,
        ).rowcount


def counts(store: Store) -> dict[str, dict[str, int]]:
    """``{kind: {"pending": n, "parked": n}}`` for every kind with tasks."""
    out: dict[str, dict[str, int]] = {}
    for kind, state, n in store.conn.execute(
        "SELECT kind, state, count(*) FROM outbox GROUP BY kind, state"
    ):
        out.setdefault(kind, {"pending": 0, "parked": 0})[state] = n
    return out


def pending(store: Store, kind: str) -> int:
    return int(
        store.conn.execute(
            "SELECT count(*) FROM outbox WHERE kind = ? AND state = 'pending'", (kind,)
        ).fetchone()[0]
    )


def parked(store: Store, kind: str | None = None) -> list[tuple[str, str, int, str | None]]:
    """Parked tasks as (kind, target, attempts, last_error)."""
    sql = "SELECT kind, target, attempts, last_error FROM outbox WHERE state = 'parked'"
    args: tuple = ()
    if kind:
        sql += " AND kind = ?"
        args = (kind,)
    return [tuple(r) for r in store.conn.execute(sql + " ORDER BY id", args)]


def retry_parked(store: Store, kind: str | None = None) -> int:
    """Put parked tasks back in the queue with a fresh attempt count."""
    with store.write() as conn:
        sql = "UPDATE outbox SET state = 'pending', attempts = 0, updated_at = ? WHERE state = 'parked'"
        args: list = [now()]
        if kind:
            sql += " AND kind = ?"
            args.append(kind)
        return conn.execute(sql, args).rowcount
