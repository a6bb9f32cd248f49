"""The marks recall and the briefing put on a memory with an open hygiene proposal.

A flag is a short phrase on the result record (``flags``), never a change to the
memory: "may be stale: src/db.py changed", "may be reversed by #12", "may duplicate
#3". The memory is still returned, so a person sees both sides until a verdict.
"""

from __future__ import annotations

from collections.abc import Iterable

from marm.store import hygiene
from marm.store.db import Store
from marm.store.hygiene import Proposal


def describe(item: Proposal) -> str:
    if item.kind == "stale":
        paths = ", ".join(f["path"] for f in item.detail.get("files", [])[:3])
        return f"may be stale: {paths} changed since it was recorded"
    if item.kind == "contradiction":
        return f"may be reversed by #{item.new_id}"
    return f"may duplicate #{item.new_id}"


def flags_for(store: Store, memory_ids: Iterable[int]) -> dict[int, list[str]]:
    """{id: [flag, ...]} for the memories among ``memory_ids`` that have open proposals."""
    return {mid: [describe(i) for i in items] for mid, items in hygiene.open_flags(store, memory_ids).items()}
