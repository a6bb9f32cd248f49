"""One sync with one remote: push, then pull. See ``marm.sync.protocol`` for what travels
and ``marm.sync.apply`` for how pulled events are applied.

A sync holds a file lock beside the store (a second sync of the same store waits its
turn rather than pushing the same events twice at once). Each step is safe to cut off
at any point (``kill -9``): push is idempotent on the remote and the local push mark
moves only after the remote committed; each pulled batch is applied in one local
transaction together with the pull cursor, so a killed pull leaves either all of a
batch or none, and the next sync goes on from there.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from filelock import FileLock, Timeout

from marm.config import SETTINGS
from marm.errors import BadInput, Busy, NotFound
from marm.store import review, sync_state
from marm.store.db import Store
from marm.sync.apply import Applier
from marm.sync.protocol import Transport, check_url, wire_events

#: Events per request when the caller does not say: the ``sync.batch`` setting's default.
BATCH = int(SETTINGS["sync.batch"].default)
LOCK_WAIT_S = 120


def open_transport(url: str, connect_timeout: int = 10) -> Transport:
    """The transport of a remote URL: ``postgresql://...`` or ``dir:PATH``."""
    if url.startswith("dir:"):
        from marm.sync.transport_dir import DirTransport

        return DirTransport(url[len("dir:"):])
    if url.startswith(("postgresql://", "postgres://")):
        from marm.sync.transport_pg import PgTransport  # imports psycopg: only a sync pays for it

        return PgTransport(url, connect_timeout)
    raise BadInput(f"unknown remote {url!r}: use postgresql://USER@HOST/DB or dir:PATH")


@dataclass(frozen=True, slots=True)
class SyncReport:
    remote: str
    pushed: int                    # events sent
    new_on_remote: int             # of those, new there
    pulled: int                    # events received from other stores
    applied: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def sync(store: Store, name: str, transport: Transport | None = None, batch: int = BATCH) -> SyncReport:
    """Push this store's shared events to remote ``name``, then pull the others', ``batch``
    events per request, each batch committed before the next is asked for."""
    remote = sync_state.remote(store, name)
    if remote is None:
        raise NotFound(f"no remote named {name!r}; `marm remote add {name} URL` first")
    lock = FileLock(str(store.path.with_name(store.path.name + ".sync.lock")))
    try:
        lock.acquire(timeout=LOCK_WAIT_S)
    except Timeout:
        raise Busy("another `marm sync` of this store has been running for two minutes") from None
    start = time.perf_counter()
    own_transport = transport is None
    transport = transport or open_transport(remote.url)
    try:
        pushed, new = push(store, name, transport, batch)
        pulled, applied = pull(store, name, transport, batch)
        with store.write():
            sync_state.record_sync(store, name, pushed, new, pulled)
    finally:
        if own_transport:
            transport.close()
        lock.release()
    return SyncReport(name, pushed, new, pulled, applied, time.perf_counter() - start)


def push(store: Store, name: str, transport: Transport, batch: int = BATCH) -> tuple[int, int]:
    remote = sync_state.remote(store, name)
    assert remote is not None
    shared = sync_state.shares(store)
    if not shared:
        return 0, 0
    upto = sync_state.last_event_id(store)
    after, sent, new = remote.pushed_upto, 0, 0
    while True:
        local = sync_state.pushable(store, after, upto, list(shared), batch)
        if not local:
            break
        new += transport.push(wire_events(store, local, shared))
        sent += len(local)
        after = local[-1].id
        with store.write():
            sync_state.mark_pushed(store, name, after)
    with store.write():
        sync_state.mark_pushed(store, name, upto)
    return sent, new


def pull(store: Store, name: str, transport: Transport, batch: int = BATCH) -> tuple[int, dict[str, int]]:
    shared = sync_state.shares(store)
    by_name = {n: p for p, n in shared.items()}
    own = sync_state.origin(store)
    counts: Counter[str] = Counter()
    pulled = 0
    erased = False
    forgotten: list[int] = []
    while True:
        remote = sync_state.remote(store, name)
        assert remote is not None
        events, cursor = transport.pull(remote.pull_cursor, own, batch)
        for start in range(0, max(len(events), 1), batch):
            part = events[start:start + batch]
            applier = Applier(store, by_name)
            with store.write():
                applier.apply(part)
                if start + batch >= len(events):
                    sync_state.mark_pulled(store, name, cursor)
            counts.update(applier.counts)
            erased = erased or applier.erased
            forgotten += applier.forgotten_ids
        pulled += len(events)
        if cursor == remote.pull_cursor:
            break
    review.purge_derived(store, forgotten)
    if erased:
        review.flush_wal(store)  # a pulled forget: the erased pages leave the write-ahead log too
    return pulled, dict(counts)


def status(store: Store, with_remote: bool = True) -> list[dict[str, object]]:
    """Each remote: URL, last push and pull, events ahead (here, not pushed) and behind
    (there, not pulled; asked of the remote only when ``with_remote``)."""
    shared = sync_state.shares(store)
    own = sync_state.origin(store)
    out: list[dict[str, object]] = []
    for r in sync_state.remotes(store):
        row: dict[str, object] = {
            "name": r.name, "url": r.url, "last_push_at": r.last_push_at, "last_pull_at": r.last_pull_at,
            "ahead": sync_state.count_pushable(store, r.pushed_upto, list(shared)) if shared else 0,
            "behind": None,
        }
        if with_remote:
            try:
                t = open_transport(r.url, connect_timeout=2)  # status answers even if a server is gone
                try:
                    row["behind"] = t.behind(r.pull_cursor, own)
                finally:
                    t.close()
            except Exception as exc:  # status must answer even when a remote is down
                row["error"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        out.append(row)
    return out
