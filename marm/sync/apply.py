"""Applying pulled events to the local store, through the same ops and store functions
as a local change, so that every store converges whatever the order of its syncs.

Rules (the same on every store, so the same events give the same state):

- **Creates.** A memory made elsewhere is inserted with its text, kind, session and
  times, and queued for its embedding and concepts (``memories.insert``, the write
  path's own insert), under a fresh local id mapped from its origin-qualified id. If the
  same text is already here in that project, the remote id is mapped onto the local
  memory (*adopted*): one memory, two names. A text retracted here comes in retracted;
  a text forgotten here, or a create that reached the remote after its forget (no
  text), is not inserted.
- **Verdicts (doubt, retract, supersede, restore): the last one wins**, ordered by
  (event time, origin id, sequence) - the time it was given where it was given, then
  the origin id to break a tie. A pulled verdict older than the newest verdict already
  applied to that memory changes nothing (it is recorded as applied). A newer one is
  applied through the review ops (``marm.ops.review``); where the op needs an active
  memory first (doubt or supersede of a retracted one), the memory is restored first,
  so the result is the state the newest verdict gives, whatever came before.
- **Forget (and delete) wins over everything**: the memory is erased here through the
  same store function as ``marm forget`` (row, log row, vectors, index terms; the text
  leaves the file), and any later create of it is ignored.
- **Concept verdicts** (merge, suppress, dismiss) are applied through the same store
  functions as ``marm concepts merge|remove|dismiss``; since merges do not commute, the
  verdict tables are then rebuilt by folding every concept verdict event in (time,
  origin, sequence) order (``sync_state.replay_concept_verdicts``), the same on every store.

Every local event written while applying one pulled event is stamped with that event's
origin, sequence and time (``sync_state.stamp``): history shows when and where the
verdict was given, and push never sends it back. A pulled event is applied once
(``sync_applied``), in the same transaction as its effects.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from marm.errors import MarmError
from marm.recall import dates
from marm.store import concept_verdicts, logs, memories, review, sessions, sync_state
from marm.store.db import Store
from marm.store.transfer import acting_as
from marm.sync.protocol import WireEvent

log = logging.getLogger("marm.sync")


class Applier:
    """Applies a batch of pulled events inside the caller's write transaction."""

    def __init__(self, store: Store, shared_by_name: dict[str, str]) -> None:
        from marm.context import Ctx  # the ops need a context; it holds this open store

        self.store = store
        self.own = sync_state.origin(store)
        self.projects = shared_by_name
        self.ctx = Ctx(source="sync", cwd=store.path.parent, env={}, _store=store)
        self.counts: Counter[str] = Counter()
        self.erased = False
        self.forgotten_ids: list[int] = []  # their derived state is purged after the commit
        self.forgotten = sync_state.forgotten_texts(store)   # read once: no scan per create

    def local(self, gid: str | None) -> int | None:
        if not gid:
            return None
        origin, _, number = gid.rpartition(":")
        if origin == self.own:
            return int(number)
        return sync_state.local_id(self.store, gid)

    def apply(self, events: list[WireEvent]) -> None:
        assert self.store.in_transaction
        with acting_as(self.store, "sync"):
            for e in events:
                self.one(e)
            if self.counts["concept verdict"]:
                sync_state.replay_concept_verdicts(self.store, self.own)

    def one(self, e: WireEvent) -> None:
        if e["origin"] == self.own:
            return
        project: str | None = None
        if not e["action"].startswith("concept."):
            project = self.projects.get(e.get("project") or "")
            if project is None:
                self.counts["not shared here"] += 1
                return  # not marked applied: sharing that project later brings it in
        if sync_state.applied(self.store, e["origin"], e["seq"]):
            self.counts["already applied"] += 1
            return
        sync_state.mark_applied(self.store, e["origin"], e["seq"])
        before = sync_state.last_event_id(self.store)
        try:
            with self.store.write():
                outcome = self.dispatch(e, project)
        except MarmError as exc:
            log.warning("sync: %s of %s not applied: %s", e["action"], e.get("memory"), exc.message)
            outcome = "refused"
        self.counts[outcome] += 1
        sync_state.stamp(self.store, before, e["origin"], e["seq"], e["at"])

    def dispatch(self, e: WireEvent, project: str | None) -> str:
        action, data = e["action"], e.get("data") or {}
        if action in sync_state.CREATES:
            return self.create(e["memory"], data, project)
        if action.startswith("concept."):
            return self.concept(action, data)
        local = self.local(e["memory"])
        if action == "memory.forget":
            return self.forget(local, data, project)
        if local is None or memories.get(self.store, local) is None:
            return "memory not here"
        if action == "memory.delete":
            memories.delete(self.store, local, data.get("reason"))
            return "deleted"
        return self.verdict(e, local, data)

    def forget(self, local: int | None, data: dict[str, Any], project: str | None) -> str:
        """Erase the memory, and any other memory of the same text in its project: a
        forget is of the text, everywhere (``review.forget``, as ``marm forget``)."""
        done = 0
        memory = memories.get(self.store, local) if local else None
        if memory is not None:
            review.forget(self.store, memory, data.get("reason"))
            self.forgotten_ids.append(memory.id)
            done += 1
        digest = data.get("content_hash")
        if digest:
            self.forgotten.add((digest, project))
        while digest and (same := memories.find_by_hash(self.store, digest, project)) is not None:
            review.forget(self.store, same, data.get("reason"))
            self.forgotten_ids.append(same.id)
            done += 1
        self.erased = self.erased or bool(done)
        return "erased" if done else "memory not here"

    def create(self, gid: str, data: dict[str, Any], project: str | None) -> str:
        if self.local(gid) is not None:
            return "already here"
        text = data.get("content")
        if not text or data.get("erased"):
            return "forgotten at its origin"
        digest = data["content_hash"]
        if (digest, project) in self.forgotten:
            return "forgotten here"
        existing = memories.find_by_hash(self.store, digest, project)
        if existing is not None and existing.status in memories.VISIBLE_STATUSES:
            sync_state.map_id(self.store, gid, existing.id, adopted=True)
            return "adopted"
        status = data.get("status") if data.get("status") in ("active", "doubted", "superseded",
                                                               "retracted") else "active"
        note = None
        grave = review.tombstone(self.store, digest, project)
        if grave is not None and status in memories.VISIBLE_STATUSES:
            status, note = "retracted", {"retracted_here": grave.memory_id}
        session = data.get("session")
        if session:
            sessions.touch(self.store, session, project)
        memory = memories.insert(
            self.store, content=text, content_hash=digest, kind=data.get("kind") or "note",
            session=session, project=project, valid_from=data.get("valid_from"),
            valid_to=data.get("valid_to"), metadata=data.get("metadata") or {},
            recorded_at=data.get("recorded_at"), status=str(status), detail={"from": gid, **(note or {})},
            named_dates=dates.named_stamps(text, data.get("valid_from") or data.get("recorded_at")),
        )
        entry = data.get("log")
        if entry:
            logs.insert(self.store, memory, entry.get("entry_date"), entry.get("topic"), entry["summary"])
        sync_state.map_id(self.store, gid, memory.id, adopted=False)
        return "created"

    def verdict(self, e: WireEvent, local: int, data: dict[str, Any]) -> str:
        from marm.ops import review as ops

        key = (e["at"], e["origin"], int(e["seq"]))
        latest = sync_state.latest_verdict(self.store, local, self.own)
        if latest is not None and latest >= key:
            return "older verdict"
        memory = memories.get(self.store, local)
        assert memory is not None
        reason = data.get("reason")
        action = e["action"]
        if action == "memory.restore":
            ops.restore(self.ctx, local, reason)
        elif action == "memory.retract":
            ops.retract(self.ctx, local, reason)
        elif action == "memory.doubt":
            if memory.status != "active":
                ops.restore(self.ctx, local, reason)
            ops.doubt(self.ctx, local, reason)
        elif action == "memory.supersede":
            by = self.local(data.get("superseded_by"))
            if by is None or memories.get(self.store, by) is None:
                return "memory not here"
            if memory.status not in memories.VISIBLE_STATUSES or (
                    memory.status == "superseded" and memory.superseded_by != by):
                ops.restore(self.ctx, local, reason)
            ops.supersede(self.ctx, local, by, reason)
            if data.get("valid_to"):  # the op takes "now" here; the verdict's own end is the same everywhere
                sync_state.set_valid_to(self.store, local, data["valid_to"])
        return "verdict"

    def concept(self, action: str, data: dict[str, Any]) -> str:
        if action == "concept.merge" and data.get("alias") and data.get("canonical"):
            concept_verdicts.add_alias(self.store, data["alias"], data["canonical"])
        elif action == "concept.suppress" and data.get("name"):
            concept_verdicts.suppress(self.store, data["name"], data.get("reason"))
        elif action == "concept.dismiss" and data.get("a") and data.get("b"):
            concept_verdicts.dismiss(self.store, data["a"], data["b"])
        else:
            return "refused"
        return "concept verdict"
