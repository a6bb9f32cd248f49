"""Hygiene ops: the review queue (``marm review``) and compaction (``marm compact``).

The drain's sweep (``marm.hygiene.drain``) fills the queue: near-duplicates,
reversals and memories whose code changed. A person (or an agent) gives the verdict
here: accept merges the duplicate, supersedes the reversed memory or marks the stale
one doubted; dismiss records that the pair (by content hashes) is fine, for good.
Every verdict goes through the same trust states as ``marm supersede``/``doubt``, so
``marm restore ID`` undoes it and ``marm history ID`` shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from marm.context import Ctx
from marm.errors import BadInput, NotFound
from marm.hygiene import actions, compact as folding
from marm.hygiene.flags import describe
from marm.ops.memory import write_memory
from marm.ops.params import AllProjects, ProjectOpt
from marm.ops.registry import Param, op
from marm.store.db import now
from marm.ops.results import MemoryView, one_line
from marm.store import hygiene, memories
from marm.store.db import Store
from marm.store.memories import Filter
from marm.store.records import Memory


@dataclass(frozen=True, slots=True)
class ReviewItem:
    id: int
    kind: str                      # duplicate | contradiction | stale
    state: str
    old_id: int                    # the memory the verdict acts on
    new_id: int | None             # the duplicate it would merge into / the memory that reverses it
    what: str                      # one line: what the sweep found
    detail: dict[str, Any] = field(default_factory=dict)
    old: MemoryView | None = None
    new: MemoryView | None = None

    def line(self) -> str:
        head = f"[{self.id}] {self.kind}: #{self.old_id} {self.what}"
        lines = [head]
        if self.old:
            lines.append(f"    #{self.old.id}: {one_line(self.old.content, 90)}")
        if self.new:
            lines.append(f"    #{self.new.id}: {one_line(self.new.content, 90)}")
        for f in self.detail.get("files", [])[:5]:
            lines.append(f"    {f['path']}: {f['change']}")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class ReviewQueue:
    project: str | None
    items: list[ReviewItem]
    changed: bool = False
    message: str = ""

    def text(self) -> str:
        if self.message:
            return self.message
        if not self.items:
            return "nothing to review"
        return "\n".join([*(i.line() for i in self.items),
                          "(`marm review accept ITEM` or `marm review dismiss ITEM`)"])


_VERB = {"duplicate": "merge", "contradiction": "supersede", "stale": "doubt"}


def _item(store: Store, p: hygiene.Proposal) -> ReviewItem:
    found = memories.get_many(store, [i for i in (p.old_id, p.new_id) if i is not None])
    old, new = found.get(p.old_id), found.get(p.new_id) if p.new_id is not None else None
    return ReviewItem(p.id, p.kind, p.state, p.old_id, p.new_id, describe(p), p.detail,
                      MemoryView.of(old, 1) if old else None, MemoryView.of(new, 1) if new else None)


def _accept(store: Store, p: hygiene.Proposal, reason: str | None) -> str:
    old = memories.get(store, p.old_id)
    new = memories.get(store, p.new_id) if p.new_id is not None else None
    if old is None or old.status not in memories.VISIBLE_STATUSES:
        raise BadInput(f"memory #{p.old_id} is no longer active; dismiss this item instead")
    if p.kind != "stale" and (new is None or new.status not in memories.VISIBLE_STATUSES):
        raise BadInput(f"memory #{p.new_id} is no longer active; dismiss this item instead")
    why = reason or f"review: {describe(p)}"
    if p.kind == "duplicate":
        assert new is not None
        actions.merge(store, new, old, why)
    elif p.kind == "contradiction":
        assert new is not None
        actions.supersede(store, old, new, why)
    else:
        memories.set_status(store, old.id, "doubted", reason=why, action="memory.doubt",
                            superseded_by=old.superseded_by, valid_to=old.valid_to)
    verb = {"duplicate": f"merged into #{p.new_id}", "contradiction": f"superseded by #{p.new_id}",
            "stale": "doubted"}[p.kind]
    return f"memory #{old.id} is {verb} (`marm restore {old.id}` undoes it)"


@op("review", mcp="marm_review")
def review(
    ctx: Ctx,
    action: Annotated[Literal["list", "accept", "dismiss"],
                      Param("list | accept ITEM | dismiss ITEM", argument=True)] = "list",
    item: Annotated[int | None, Param("the queue item (the number in brackets)", argument=True)] = None,
    kind: Annotated[Literal["duplicate", "contradiction", "stale"] | None,
                    Param("list only this kind", short="-k")] = None,
    project: ProjectOpt = None,
    all_projects: AllProjects = False,
    reason: Annotated[str | None, Param("why, kept in the audit trail", short="-r")] = None,
) -> ReviewQueue:
    """Review what the drain found: near-duplicates, reversed and possibly stale memories.

    Accepting an item merges the duplicate, supersedes the reversed memory or marks the
    stale one doubted (restoring the memory undoes it); dismissing it keeps both, for
    good: a dismissal holds for the texts (their content hashes), so the same pair is
    never proposed again. Captures by hooks that repeat each other are merged without
    asking; what a person wrote never is.

    CLI:
      `marm review` lists the open items; `marm restore ID` undoes an accepted one.
    MCP:
      `action` is list, accept or dismiss; accept and dismiss take the `item` number a
      list gave; marm_restore undoes an accepted one.
    Examples:
      marm review
      marm review --kind duplicate --json
      marm review accept 3 --reason "same fix, logged twice"
      marm review dismiss 4
    """
    store = ctx.store()
    scope = ctx.project(project)
    if action == "list":
        if item is not None:
            raise BadInput("`marm review list` takes no item; use accept ITEM or dismiss ITEM")
        found = hygiene.listing(store, scope, all_projects, kind=kind)
        return ReviewQueue(scope, [_item(store, p) for p in found])
    if item is None:
        raise BadInput(f"`marm review {action}` needs the item number `marm review` shows")
    with store.write():
        p = hygiene.get(store, item)
        if p is None:
            raise NotFound(f"no review item {item}")
        if p.state != "open":
            return ReviewQueue(scope, [_item(store, p)], False, f"item {item} is already {p.state}")
        message = _accept(store, p, reason) if action == "accept" else f"item {item} dismissed: both memories stay"
        decided = hygiene.decide(store, item, "accepted" if action == "accept" else "dismissed", reason)
    return ReviewQueue(scope, [_item(store, decided)], True, message)


@dataclass(frozen=True, slots=True)
class FoldView:
    topic: str
    week: str
    sources: list[int]
    source_chars: int
    summary_chars: int
    summary_id: int | None = None
    summary: str = ""


@dataclass(frozen=True, slots=True)
class CompactResult:
    project: str | None
    dry_run: bool
    older_than_days: float
    folds: list[FoldView]
    restored: list[int] = field(default_factory=list)
    message: str = ""

    def text(self) -> str:
        if self.message:
            return self.message
        if not self.folds:
            return f"no episodes older than {self.older_than_days:g} days to fold"
        before = sum(f.source_chars for f in self.folds)
        after = sum(f.summary_chars for f in self.folds)
        verb = "would fold" if self.dry_run else "folded"
        lines = [f"{verb} {sum(len(f.sources) for f in self.folds)} episodes into {len(self.folds)} summaries"
                 f" ({before:,} -> {after:,} characters)"]
        for f in self.folds:
            into = f" into #{f.summary_id}" if f.summary_id else ""
            lines.append(f"  {f.week} {f.topic}: {len(f.sources)} episodes{into}")
        if not self.dry_run:
            lines.append("(`marm compact --restore SUMMARY_ID` gives the episodes back)")
        return "\n".join(lines)


def _restore(ctx: Ctx, summary_id: int) -> CompactResult:
    store = ctx.store()
    with store.write():
        summary = memories.get(store, summary_id)
        sources = summary.metadata.get("compacted") if summary else None
        if summary is None or not isinstance(sources, list):
            raise NotFound(f"memory #{summary_id} is not a summary made by `marm compact`")
        reasons = summary.metadata.get("reasons", {})
        back = []
        for memory in memories.get_many(store, sources).values():
            if memory.status == "superseded" and memory.superseded_by == summary_id:
                # the row as it was: active, its own earlier status reason, its validity
                memories.set_status(store, memory.id, "active", reason=reasons.get(str(memory.id)),
                                    action="memory.restore", superseded_by=None, valid_to=memory.valid_to,
                                    detail={"compaction_undone": summary_id})
                back.append(memory.id)
        memories.delete(store, summary_id, reason="compaction undone", action="memory.uncompact")
    return CompactResult(summary.project, False, 0, [], sorted(back),
                         f"restored {len(back)} episodes; summary #{summary_id} deleted")


@op("compact")
def compact(
    ctx: Ctx,
    older_than: Annotated[float | None, Param("fold episodes older than this many days "
                                              "(default: the compact.older_than_days setting, 30)")] = None,
    dry_run: Annotated[bool, Param("show what would be folded; change nothing")] = False,
    restore: Annotated[int | None, Param("undo one compaction: give back the episodes of this summary")] = None,
    project: ProjectOpt = None,
) -> CompactResult:
    """Fold old episodes into one summary memory per session and week.

    Extractive: each episode keeps its question, the sentences of its conclusion that
    add the most the store does not already say, and the files it changed. Highlights and
    hand-written memories are never folded. The episodes stay in the store, superseded
    by the summary (recall leaves them out); restoring a summary gives them back
    unchanged.

    Examples:
      marm compact --dry-run
      marm compact --older-than 60
      marm compact --restore 120
    """
    if restore is not None:
        return _restore(ctx, restore)
    days = older_than if older_than is not None else ctx.number("compact.older_than_days")
    scope = ctx.project(project)
    folds = candidates(ctx, scope, days)
    if dry_run:
        return CompactResult(scope, True, days, [_view(f) for f in folds])
    store = ctx.store()
    done = []
    for fold in folds:
        with store.write():
            summary = fold_into(ctx, fold.sources, fold.text, fold.week)
        done.append(_view(fold, summary))
    return CompactResult(scope, False, days, done)


def candidates(ctx: Ctx, scope: str | None, days: float) -> list[folding.Fold]:
    """The folds of ``scope``'s episodes older than ``days`` (each with its extractive text)."""
    if days < 0:
        raise BadInput("--older-than must be zero or more days")
    store = ctx.store()
    cutoff = now(-days * 86400)
    found = memories.get_many(store, hygiene.episodes_before(store, scope, cutoff))
    sessions = {m.session for m in found.values()}
    kept = [m for session in sessions for m in memories.recent(
        store, Filter(project=scope, session=session), limit=2000) if m.kind != "episode"]
    return folding.plan(found.values(), kept)


def fold_into(ctx: Ctx, sources: Sequence[Memory], text: str, week: str, **metadata: Any) -> Memory:
    """Write the summary ``text`` of ``sources`` and make each of them superseded by it,
    content, metadata and validity untouched, so ``marm compact --restore`` gives them
    back byte for byte. Both routes (extractive, agent-written) fold through here. Call
    inside ``store.write()``."""
    store = ctx.store()
    first = sources[0]
    written = write_memory(ctx, text, kind="summary", session=first.session, project=first.project,
                           valid_from=first.valid_from or first.recorded_at,
                           metadata={"compacted": [m.id for m in sources], "week": week,
                                     "reasons": {str(m.id): m.status_reason for m in sources if m.status_reason},
                                     **metadata})
    summary = memories.get(store, written.id)
    assert summary is not None
    if not written.created:
        raise BadInput(f"memory #{summary.id} already holds this text; a summary must be a memory of its own")
    for m in sources:
        memories.set_status(store, m.id, "superseded", reason=f"compacted into #{summary.id}",
                            action="memory.compact", superseded_by=summary.id, valid_to=m.valid_to,
                            detail={"summary": summary.id})
    return summary


def _view(fold: folding.Fold, summary: Memory | None = None) -> FoldView:
    return FoldView(fold.topic, fold.week, [m.id for m in fold.sources], fold.source_chars, len(fold.text),
                    summary.id if summary else None, fold.text)


def briefing_marks(ctx: Ctx, found: list[Memory]) -> tuple[list[Memory], dict[int, str]]:
    """For a briefing: ``found`` without the memories a newer one may reverse (a briefing
    presents what is current), and a mark for each that may be stale or a duplicate."""
    flagged = hygiene.open_flags(ctx.store(), [m.id for m in found])
    kept = [m for m in found if not any(p.kind == "contradiction" for p in flagged.get(m.id, []))]
    return kept, {mid: " [" + "; ".join(describe(p) for p in items) + "]" for mid, items in flagged.items()}
