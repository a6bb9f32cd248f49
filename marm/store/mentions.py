"""The dates a memory names, resolved when it was written (``memory_dates``, migration 9).

"Yesterday" in a memory written on 4 October is 3 October; ``marm.recall.dates``
resolves such phrases at write time against the memory's own date, and this table
keeps the resulting [start, end) intervals (``marm.store.memories.insert`` writes them
with the memory) so that a recall naming 3 October finds
that memory through an index instead of reading every text in scope (the recall read
model, ``marm.store.recall_reads``, reads them: candidates by date in its first
statement, the dates a candidate names in its third).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from marm.text import STAMP

#: The longest interval a memory names (a year): the look-up by start reaches back this far.
LONGEST_DAYS = 367


def reach_back(start: str) -> str:
    """How far back the start of a named interval meeting one from ``start`` can lie."""
    return (datetime.strptime(start, STAMP) - timedelta(days=LONGEST_DAYS)).strftime(STAMP)
