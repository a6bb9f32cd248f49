"""What a hygiene verdict does, for the sweep's automatic cases and ``marm review accept``.

Both go through the trust machinery the review verbs use (``memories.set_status``), so
``marm restore ID`` undoes them and ``marm history ID`` shows them:

- merge: the later of two duplicates becomes ``superseded`` by the earliest (the id a
  person has seen longest); the earliest records the later one's provenance (id,
  source, agent, session, time) in its metadata. No text is changed or lost.
- supersede: the older memory a newer one reverses stops being valid when the newer
  one starts, exactly as ``marm supersede OLD --by NEW``.
"""

from __future__ import annotations

from marm.store import memories, review
from marm.store.db import Store, now
from marm.store.records import Memory

HOOK = "hook:"


def is_capture(memory: Memory) -> bool:
    """Written by an agent hook (not typed by a person, not imported)."""
    return memory.source.startswith(HOOK)


def merge(store: Store, keep: Memory, drop: Memory, reason: str) -> Memory:
    """Fold duplicate ``drop`` into ``keep``. Call inside ``store.write()``."""
    memories.add_metadata(store, keep.id, "merged", {
        "id": drop.id, "source": drop.source, "platform": drop.platform, "session": drop.session,
        "recorded_at": drop.recorded_at}, action="memory.merge_in", reason=reason)
    return memories.set_status(store, drop.id, "superseded", reason=reason, action="memory.merge",
                               superseded_by=keep.id, valid_to=drop.valid_to, detail={"merged_into": keep.id})


def supersede(store: Store, old: Memory, new: Memory, reason: str) -> Memory:
    """``old`` stops holding when ``new`` starts. Call inside ``store.write()``."""
    ends = new.valid_from or new.recorded_at or now()
    if old.valid_to is not None and old.valid_to < ends:
        ends = old.valid_to
    return memories.set_status(store, old.id, "superseded", reason=reason, action="memory.supersede",
                               superseded_by=new.id, valid_to=ends,
                               detail={"superseded_by": new.id, "valid_to": [old.valid_to, ends]})


def restore(store: Store, memory: Memory, reason: str) -> Memory:
    """Undo a merge or supersession (what ``marm restore`` does for a superseded memory)."""
    return memories.set_status(store, memory.id, "active", reason=reason, action="memory.restore",
                               superseded_by=None, valid_to=review.valid_to_before_supersede(store, memory.id))
