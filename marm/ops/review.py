"""Review ops: the verdicts a person (or an agent) gives on a memory, and its history.

- doubt: still returned by recall, marked doubted.
- retract: left out of recall; a tombstone on the text's hash and scope refuses the
  same text later (exit code 5) unless ``marm log --force``.
- supersede OLD --by NEW: OLD stops being valid when NEW starts (its valid_to), so
  recall returns NEW, and ``--as-of`` an earlier time still returns OLD.
- restore: makes a memory active again, whatever verdict it carries.
- forget: erases the text for good (privacy); content-free events remain.
- history: every event of a memory, oldest first.

Every verdict is an event; nothing is changed without a trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from marm.context import Ctx
from marm.errors import BadInput, NotFound
from marm.ops.registry import Param, op
from marm.ops.results import MemoryView
from marm.store import memories, review
from marm.store.db import Store, now
from marm.store.records import Event, Memory
from marm.text import clean_name

MemoryId = Annotated[int, Param("memory id", argument=True)]
Reason = Annotated[str | None, Param("why, kept in the audit trail", short="-r")]


@dataclass(frozen=True, slots=True)
class ReviewResult:
    id: int
    action: str
    changed: bool                  # False when the memory already carried this verdict
    status: str | None             # None once forgotten
    previous_status: str | None
    message: str
    memory: MemoryView | None = None

    def text(self) -> str:
        return self.message


def _load(store: Store, memory_id: int) -> Memory:
    memory = memories.get(store, memory_id)
    if memory is None:
        if review.forgotten(store, memory_id):
            raise NotFound(f"memory #{memory_id} was forgotten; its content is gone")
        raise NotFound(f"no memory with id {memory_id}")
    return memory


def _result(action: str, before: Memory, after: Memory | None, message: str) -> ReviewResult:
    changed = after is None or (before.status, before.superseded_by, before.valid_to) != (
        after.status, after.superseded_by, after.valid_to)
    return ReviewResult(before.id, action, changed, after.status if after else None, before.status,
                        message, MemoryView.of(after) if after else None)


@op("doubt", mcp="marm_doubt", idempotent=True)
def doubt(ctx: Ctx, id: MemoryId, reason: Reason = None) -> ReviewResult:
    """Mark a memory as doubted: recall still returns it, marked [doubted].

    For a memory you are not sure of; restoring it clears the doubt.

    Examples:
      marm doubt 42
      marm doubt 42 -r "measured on the old runner"
    """
    reason = clean_name(reason) if reason else reason  # a reason is stored too: no secret in it
    store = ctx.store()
    with store.write():
        memory = _load(store, id)
        if memory.status == "doubted":
            return _result("doubt", memory, memory, f"memory #{id} is already doubted")
        if memory.status != "active":
            raise BadInput(f"memory #{id} is {memory.status}; `marm restore {id}` it first")
        after = memories.set_status(store, id, "doubted", reason=reason, action="memory.doubt",
                                    superseded_by=memory.superseded_by, valid_to=memory.valid_to)
    return _result("doubt", memory, after, f"memory #{id} is now doubted")


@op("retract", mcp="marm_retract", destructive=True, idempotent=True)
def retract(ctx: Ctx, id: MemoryId, reason: Reason = None) -> ReviewResult:
    """Retract a memory: recall leaves it out, and the same text is refused later.

    The refusal is a tombstone on the normalised text and the memory's project (or
    global).

    CLI:
      `marm log` of that text exits with code 5 unless --force is given;
      `marm restore ID` lifts the refusal.
    MCP:
      marm_log_entry of that text is a tool error unless `force` is true;
      marm_restore lifts the refusal.
    Examples:
      marm retract 42
      marm retract 42 -r "wrong: the limit is per user, not per key"
    """
    reason = clean_name(reason) if reason else reason  # a reason is stored too: no secret in it
    store = ctx.store()
    with store.write():
        memory = _load(store, id)
        if memory.status == "retracted":
            return _result("retract", memory, memory, f"memory #{id} is already retracted")
        after = memories.set_status(store, id, "retracted", reason=reason, action="memory.retract",
                                    superseded_by=memory.superseded_by, valid_to=memory.valid_to)
        review.add_tombstone(store, after, reason)
    return _result("retract", memory, after, f"memory #{id} is retracted; its text is refused from now on")


@op("supersede", mcp="marm_supersede", idempotent=True)
def supersede(
    ctx: Ctx,
    old: Annotated[int, Param("the memory that no longer holds", argument=True)],
    by: Annotated[int, Param("the memory that replaces it")],
    reason: Reason = None,
) -> ReviewResult:
    """Replace an old memory by a newer one: recall returns the newer one.

    The old memory stays valid until the newer one's valid_from (or now, if it has
    none), so a recall as of an earlier date still finds it. The newer memory must be
    active or doubted, and visible wherever the old one is (same project, or global).

    CLI:
      OLD is replaced by the memory --by names; `marm recall --as-of` an earlier date
      still finds OLD.
    MCP:
      `old` is replaced by `by`; marm_smart_recall with an earlier `as_of` still
      finds `old`.
    Examples:
      marm supersede 12 --by 40
      marm supersede 12 --by 40 -r "the timeout moved to the gateway"
    """
    if old == by:
        raise BadInput("a memory cannot supersede itself")
    reason = clean_name(reason) if reason else reason  # a reason is stored too: no secret in it
    store = ctx.store()
    with store.write():
        memory = _load(store, old)
        new = _load(store, by)
        if memory.status == "superseded" and memory.superseded_by == by:
            return _result("supersede", memory, memory, f"memory #{old} is already superseded by #{by}")
        if memory.status not in memories.VISIBLE_STATUSES:
            raise BadInput(f"memory #{old} is {memory.status}; `marm restore {old}` it first")
        if new.status not in memories.VISIBLE_STATUSES:
            raise BadInput(f"memory #{by} is {new.status}; only an active or doubted memory can supersede")
        if new.project is not None and new.project != memory.project:
            raise BadInput(
                f"memory #{by} belongs to another project than #{old}; #{old} would vanish where "
                f"#{by} is not visible"
            )
        ends = new.valid_from or now()
        if memory.valid_to is not None and memory.valid_to < ends:
            ends = memory.valid_to
        after = memories.set_status(
            store, old, "superseded", reason=reason, action="memory.supersede", superseded_by=by,
            valid_to=ends, detail={"superseded_by": by, "valid_to": [memory.valid_to, ends]},
        )
    return _result("supersede", memory, after, f"memory #{old} is superseded by #{by} (valid until {ends})")


@op("restore", mcp="marm_restore", idempotent=True)
def restore(ctx: Ctx, id: MemoryId, reason: Reason = None) -> ReviewResult:
    """Make a doubted, retracted or superseded memory active again.

    Undoes every verdict it carries: lifts a retraction's tombstone, and for a
    superseded memory clears superseded_by and puts back the valid_to it had before.

    Examples:
      marm restore 42
      marm restore 42 -r "it was right after all"
    """
    reason = clean_name(reason) if reason else reason  # a reason is stored too: no secret in it
    store = ctx.store()
    with store.write():
        memory = _load(store, id)
        if memory.status == "active":
            return _result("restore", memory, memory, f"memory #{id} is already active")
        valid_to = memory.valid_to
        if memory.superseded_by is not None or memory.status == "superseded":
            valid_to = review.valid_to_before_supersede(store, id)
        after = memories.set_status(
            store, id, "active", reason=reason, action="memory.restore", superseded_by=None,
            valid_to=valid_to, detail={"valid_to": [memory.valid_to, valid_to]}
            if valid_to != memory.valid_to else None,
        )
        if memory.status == "retracted":
            review.lift_tombstone(store, memory)
    return _result("restore", memory, after, f"memory #{id} is active again (was {memory.status})")


@op("forget", mcp="marm_forget", destructive=True, idempotent=True)
def forget(ctx: Ctx, id: MemoryId, reason: Reason = None) -> ReviewResult:
    """Erase a memory's text for good (privacy): nothing can bring it back.

    The memory, its log entry, its vectors and its index entries are deleted and the
    freed space is overwritten. Its history stays, without the text: it shows that it
    was forgotten, when and by whom. A retraction's tombstone (a hash, not the text)
    stays too. To hide a memory but keep it, retract it instead.

    Examples:
      marm forget 42
      marm forget 42 -r "held a customer's address"
    """
    reason = clean_name(reason) if reason else reason  # a reason is stored too: no secret in it
    store = ctx.store()
    with store.write():
        memory = _load(store, id)
        review.forget(store, memory, reason)
    review.purge_derived(store, [memory.id])
    flushed = review.flush_wal(store)
    message = f"memory #{id} is forgotten; its history remains without its text"
    if not flushed:
        message += " (another process is reading: the write-ahead log is cleared at its next checkpoint)"
    return _result("forget", memory, None, message)


@dataclass(frozen=True, slots=True)
class HistoryResult:
    id: int
    status: str | None             # None when the memory was forgotten
    events: list[Event]

    def text(self) -> str:
        state = self.status or "forgotten"
        lines = [f"memory #{self.id} ({state}), {len(self.events)} event(s), oldest first"]
        for e in self.events:
            who = e.source + (f"/{e.platform}" if e.platform else "")
            hashes = f"{(e.before_hash or '-')[:10]} -> {(e.after_hash or '-')[:10]}"
            extra = f"  {e.detail}" if e.detail else ""
            why = f"  reason: {e.reason}" if e.reason else ""
            lines.append(f"{e.at[:19]}  {e.action:<18} {who:<12} {hashes}{why}{extra}")
        return "\n".join(lines)


@op("history", mcp="marm_history", read_only=True, idempotent=True)
def history(ctx: Ctx, id: MemoryId) -> HistoryResult:
    """Every event of a memory, oldest first.

    Each event says what happened, when, through which surface (cli, mcp, hook:<event>,
    import) and agent, why, and the content hashes before and after. Works for
    forgotten memories too: their history stays, without their text.

    Examples:
      marm history 42
      marm history 42 --json
    """
    store = ctx.store()
    found = review.history(store, id)
    memory = memories.get(store, id)
    if not found and memory is None:
        raise NotFound(f"no memory with id {id}")
    return HistoryResult(id, memory.status if memory else None, found)
