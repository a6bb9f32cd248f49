"""Leased locks for background work that must run once at a time (drains, indexing).

Exclusion is a file lock (``filelock``), which the OS releases if the holder dies; the
``leases`` row says who holds it, since when, and how far it got, for ``marm status``
and for the message a second drain prints before exiting.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from marm.errors import Busy
from marm.store.db import Store, now


@dataclass(frozen=True, slots=True)
class LeaseInfo:
    name: str
    holder: str
    pid: int
    started_at: str
    heartbeat_at: str
    progress: dict[str, Any]
    alive: bool


class Lease:
    """A held lease; ``heartbeat`` records progress for observers."""

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.name = name

    def heartbeat(self, **progress: Any) -> None:
        with self.store.write() as conn:
            conn.execute(
                "UPDATE leases SET heartbeat_at = ?, progress = ? WHERE name = ? AND pid = ?",
                (now(), orjson.dumps(progress).decode(), self.name, os.getpid()),
            )


def lock_path(home: Path, name: str) -> Path:
    return home / "locks" / f"{name}.lock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def info(store: Store, name: str) -> LeaseInfo | None:
    row = store.conn.execute(
        "SELECT name, holder, pid, started_at, heartbeat_at, progress FROM leases WHERE name = ?",
        (name,),
    ).fetchone()
    if row is None:
        return None
    return LeaseInfo(*row[:5], progress=orjson.loads(row[5]), alive=_pid_alive(row[2]))  # type: ignore[misc]  # the row is the leading fields


def all_leases(store: Store) -> list[LeaseInfo]:
    names = [r[0] for r in store.conn.execute("SELECT name FROM leases ORDER BY name")]
    return [i for n in names if (i := info(store, n)) is not None]


@contextmanager
def hold(store: Store, home: Path, name: str, holder: str) -> Iterator[Lease]:
    """Take the lease ``name`` at once or raise ``Busy`` naming who holds it since when."""
    import socket

    from filelock import FileLock, Timeout  # only background work pays these imports

    path = lock_path(home, name)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        current = info(store, name)
        who = (
            f"pid {current.pid} ({current.holder}) since {current.started_at}"
            if current
            else "another process"
        )
        raise Busy(f"another {name} is running: {who}") from None
    try:
        t = now()
        with store.write() as conn:
            conn.execute(
                "INSERT INTO leases (name, holder, pid, started_at, heartbeat_at, progress)"
                " VALUES (?,?,?,?,?,'{}') ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
                " pid = excluded.pid, started_at = excluded.started_at,"
                " heartbeat_at = excluded.heartbeat_at, progress = '{}'",
                (name, f"{holder}@{socket.gethostname()}", os.getpid(), t, t),
            )
        yield Lease(store, name)
    finally:
        try:
            with store.write() as conn:
                conn.execute("DELETE FROM leases WHERE name = ? AND pid = ?", (name, os.getpid()))
        finally:
            lock.release()
