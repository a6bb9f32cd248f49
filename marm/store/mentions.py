"""The dates a memory names, resolved when it was written (``memory_dates``, migration 9).

"Yesterday" in a memory written on 4 October is 3 October; ``marm.recall.dates``
resolves such phrases at write time against the memory's own date, and this table
keeps the resulting [start, end) intervals (``marm.store.memories.insert`` writes them
with the memory) so that a recall naming 3 October finds
that memory through an index instead of reading every text in scope.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from marm.store.db import Store
from marm.store.memories import Filter

#: The longest interval a memory names (a year): the look-up by start reaches back this far.
LONGEST_DAYS = 367
STAMP = "%Y-%m-%dT%H:%M:%S.%fZ"


def of(store: Store, memory_ids: Iterable[int]) -> dict[int, list[tuple[str, str]]]:
    """``{id: [(start, end), ...]}`` of the given memories that name a date."""
    ids = list(dict.fromkeys(int(i) for i in memory_ids))
    out: dict[int, list[tuple[str, str]]] = {}
    for begin in range(0, len(ids), 500):
        part = ids[begin : begin + 500]
        for mid, start, end in store.conn.execute(
                f"SELECT memory_id, start, end FROM memory_dates WHERE memory_id IN ({','.join('?' * len(part))})",
                part):
            out.setdefault(mid, []).append((start, end))
    return out


def naming(store: Store, flt: Filter, start: str, end: str, limit: int) -> list[int]:
    """Ids of memories in ``flt`` that name a date meeting [start, end), newest first."""
    reach = (datetime.strptime(start, STAMP) - timedelta(days=LONGEST_DAYS)).strftime(STAMP)
    where, args = flt.where()
    return [r[0] for r in store.conn.execute(
        f"SELECT DISTINCT d.memory_id FROM memory_dates d JOIN memories m ON m.id = d.memory_id"
        f" WHERE d.start > ? AND d.start < ? AND d.end > ? AND {where} ORDER BY d.memory_id DESC LIMIT ?",
        [reach, end, start, *args, limit])]
