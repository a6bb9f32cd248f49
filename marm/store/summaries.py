"""Summaries an agent staged for a cluster of old episodes (migration m010).

MARM's flow, kept: a cluster is proposed, the agent stages a summary for it, and the
summary is applied or discarded. A summary left staged (nobody applied or discarded it)
is discarded once it is older than the ``summarize.staged_days`` setting (``expire``).
A staged row keeps each source's id and content hash,
so an apply checks that the sources are still what the summary was written from (MARM's
snapshot check); a row whose sources changed becomes ``stale``. Every state change is
an event. What MARM did wrong is not here: nothing in this table is ever pushed into a
tool result; an agent reads clusters only when it asks for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from marm.store import events
from marm.store.db import Store, now


@dataclass(frozen=True, slots=True)
class Staged:
    id: int
    cluster: int                          # the handle: the first source's id
    project: str | None
    session: str | None
    week: str
    sources: tuple[tuple[int, str], ...]  # (memory id, content hash when staged)
    summary: str
    state: str                            # staged | applied | discarded | stale
    summary_id: int | None
    staged_at: str
    decided_at: str | None


_COLUMNS = "id, cluster, project, session, week, sources, summary, state, summary_id, staged_at, decided_at"


def _row(r: Sequence[Any]) -> Staged:
    return Staged(r[0], r[1], r[2], r[3], r[4], tuple((int(i), str(h)) for i, h in orjson.loads(r[5])),
                  r[6], r[7], r[8], r[9], r[10])


def staged(store: Store, cluster: int) -> Staged | None:
    """The summary staged for ``cluster``, if one waits."""
    row = store.conn.execute(f"SELECT {_COLUMNS} FROM staged_summaries WHERE cluster = ? AND state = 'staged'",
                             (cluster,)).fetchone()
    return None if row is None else _row(row)


def waiting(store: Store, project: str | None) -> list[Staged]:
    """Every staged summary of exactly ``project``, oldest cluster first."""
    rows = store.conn.execute(f"SELECT {_COLUMNS} FROM staged_summaries WHERE state = 'staged'"
                              " AND project IS ? ORDER BY cluster", (project,)).fetchall()
    return [_row(r) for r in rows]


def stage(store: Store, cluster: int, project: str | None, session: str | None, week: str,
          sources: Sequence[tuple[int, str]], summary: str) -> Staged:
    """Stage ``summary`` for ``cluster``; a summary staged for it before is discarded
    (its row stays). Call inside ``store.write()``."""
    assert store.in_transaction
    before = staged(store, cluster)
    if before is not None:
        decide(store, before, "discarded", "replaced by a newly staged summary")
    cur = store.conn.execute(
        "INSERT INTO staged_summaries (cluster, project, session, week, sources, summary, staged_at)"
        " VALUES (?,?,?,?,?,?,?)",
        (cluster, project, session, week, orjson.dumps([list(s) for s in sources]).decode(), summary, now()))
    row = store.conn.execute(f"SELECT {_COLUMNS} FROM staged_summaries WHERE id = ?", (cur.lastrowid,)).fetchone()
    item = _row(row)
    events.append(store, "summary.stage", "staged_summary", item.id, project=project, session=session,
                  detail={"cluster": cluster, "sources": [i for i, _ in sources], "chars": len(summary)})
    return item


def decide(store: Store, item: Staged, state: str, reason: str | None = None,
           summary_id: int | None = None) -> None:
    """Close a staged summary: ``applied`` (into ``summary_id``), ``discarded`` or
    ``stale``. Call inside ``store.write()``."""
    assert store.in_transaction
    store.conn.execute("UPDATE staged_summaries SET state = ?, summary_id = ?, decided_at = ? WHERE id = ?",
                       (state, summary_id, now(), item.id))
    events.append(store, f"summary.{state}", "staged_summary", item.id, reason=reason, project=item.project,
                  session=item.session, detail={"cluster": item.cluster, "summary_id": summary_id})


def staged_before(store: Store, stamp: str) -> list[Staged]:
    """The summaries still staged that were staged before ``stamp`` (a stored time)."""
    rows = store.conn.execute(f"SELECT {_COLUMNS} FROM staged_summaries WHERE state = 'staged'"
                              " AND staged_at < ? ORDER BY id", (stamp,)).fetchall()
    return [_row(r) for r in rows]


def expire_after(store: Store, days: float) -> int:
    """Discard the summaries staged longer than ``days`` ago that nobody applied or
    discarded (the ``summarize.staged_days`` setting); how many. Writes only when one is
    due, so a list on a store opened read-only still works. Beside ``expire`` because
    both routes that expire (the drain's sweep, ``marm summarize list``) need only this,
    not each other's modules."""
    before = now(-days * 86400)
    if not staged_before(store, before):
        return 0
    with store.write():
        return len(expire(store, before))


def expire(store: Store, stamp: str) -> list[Staged]:
    """Discard every summary still staged that was staged before ``stamp``; its row and
    events stay, its episodes are untouched. Call inside ``store.write()``."""
    assert store.in_transaction
    old = staged_before(store, stamp)
    for item in old:
        decide(store, item, "discarded", f"expired: staged {item.staged_at[:10]} and never applied or discarded")
    return old
