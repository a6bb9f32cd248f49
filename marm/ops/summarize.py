"""``marm summarize``: the agent-written route of compaction (issue 19, deliverable 4).

``marm compact`` folds old episodes into an extractive summary by itself. This op lets
an agent (or a person) write the summary instead, in MARM's flow: list the clusters of
old episodes (each with its sources' text), stage a summary for one, then apply or
discard it. An apply folds exactly like ``marm compact``: the sources become superseded
by the summary with their text, metadata and validity untouched, so ``marm compact
--restore SUMMARY`` gives them back byte for byte, and each step is in their history.

MARM's fault is left out: it pushed "please summarise cluster N" into the results of
unrelated tool calls. Here nothing is pushed; the tool's description says what it is for,
an agent calls it when it chooses, and its results are data only.

A cluster is one fold of the extractive plan (a session's episodes of one ISO week, at
most ``FOLD_MAX`` consecutive ones); its number is its first episode's id. A staged
summary keeps the sources' content hashes: if any source changed or was folded since,
the apply is refused and the staged summary marked stale. A summary nobody applies or
discards is discarded after ``summarize.staged_days`` (14) days, when clusters are
listed or by the drain's hygiene sweep.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from marm.context import Ctx
from marm.errors import BadInput, NotFound
from marm.hygiene import compact as folding
from marm.ops.hygiene import candidates, fold_into
from marm.ops.params import ProjectOpt
from marm.ops.registry import Param, op
from marm.ops.results import one_line
from marm.store import memories, summaries
from marm.store.records import Memory
from marm.text import clean_name

#: Clusters a list returns at most (each carries its sources' full text).
LIST_LIMIT = 5


@dataclass(frozen=True, slots=True)
class Source:
    id: int
    recorded_at: str
    content: str


@dataclass(frozen=True, slots=True)
class Cluster:
    id: int                        # the number stage/apply/discard take: its first episode's id
    session: str | None
    week: str
    sources: list[Source]
    source_chars: int
    state: str                     # unsummarized | staged
    summary: str | None = None     # the staged summary, when one waits


@dataclass(frozen=True, slots=True)
class SummarizeResult:
    project: str | None
    action: str
    clusters: list[Cluster]
    total: int = 0                 # clusters waiting in all (a list returns at most `limit`)
    changed: bool = False
    summary_id: int | None = None  # the summary memory an apply wrote
    message: str = ""

    def text(self) -> str:
        lines = [self.message] if self.message else []
        if self.action == "list" and not self.clusters:
            lines.append("no cluster of old episodes to summarize")
        full = len(self.clusters) == 1
        for c in self.clusters:
            state = f"staged summary of {len(c.summary or ''):,} characters" if c.summary else "no summary yet"
            lines.append(f"[{c.id}] {c.week} session {c.session or '-'}: {len(c.sources)} episodes, "
                         f"{c.source_chars:,} characters; {state}")
            for s in c.sources:
                if full:
                    lines.extend([f"  #{s.id} {s.recorded_at[:10]}:", *("    " + x for x in s.content.splitlines())])
                else:
                    lines.append(f"  #{s.id} {s.recorded_at[:10]}: {one_line(s.content, 90)}")
            if c.summary and full:
                lines.extend(["  staged summary:", *("    " + x for x in c.summary.splitlines())])
        if self.action == "list" and self.total > len(self.clusters):
            lines.append(f"({self.total - len(self.clusters)} more clusters)")
        return "\n".join(lines)


def _cluster(found: dict[int, Memory], ids: list[int], session: str | None, week: str,
             summary: str | None) -> Cluster:
    sources = [Source(i, found[i].recorded_at, found[i].content) for i in ids if i in found]
    return Cluster(ids[0], session, week, sources, sum(len(s.content) for s in sources),
                   "staged" if summary is not None else "unsummarized", summary)


def _clusters(ctx: Ctx, scope: str | None, days: float) -> list[Cluster]:
    """The staged clusters (their sources as staged), then the folds of the plan whose
    episodes no staged summary holds, by first episode."""
    store = ctx.store()
    waiting = summaries.waiting(store, scope)
    held = {i for w in waiting for i, _ in w.sources}
    fresh = [f for f in candidates(ctx, scope, days) if not held & {m.id for m in f.sources}]
    found = memories.get_many(store, [i for w in waiting for i, _ in w.sources])
    found.update({m.id: m for f in fresh for m in f.sources})
    out = [_cluster(found, [i for i, _ in w.sources], w.session, w.week, w.summary) for w in waiting]
    out += [_cluster(found, [m.id for m in f.sources], f.topic, f.week, None) for f in fresh]
    return sorted(out, key=lambda c: c.id)


def _fold_of(ctx: Ctx, scope: str | None, days: float, cluster: int) -> folding.Fold:
    for f in candidates(ctx, scope, days):
        if f.sources[0].id == cluster:
            return f
    raise NotFound(f"no cluster {cluster} of episodes older than {days:g} days here; "
                   "`marm summarize` lists them")


def _summary_text(summary: str | None, source_chars: int) -> str:
    if summary is None or not summary.strip():
        raise BadInput("`marm summarize stage CLUSTER` needs the summary text (--summary TEXT, or - for stdin)")
    text = summary.strip()
    if len(text) >= source_chars:
        raise BadInput(f"the summary has {len(text):,} characters, its episodes {source_chars:,}: "
                       "a summary must be shorter than what it replaces")
    return text


@op("summarize", mcp="marm_summarize")
def summarize(
    ctx: Ctx,
    action: Annotated[Literal["list", "stage", "apply", "discard"],
                      Param("list | stage CLUSTER | apply CLUSTER | discard CLUSTER", argument=True)] = "list",
    cluster: Annotated[int | None, Param("the cluster (the number in brackets)", argument=True)] = None,
    summary: Annotated[str | None, Param("the summary to stage, in your words", stdin=True)] = None,
    older_than: Annotated[float | None, Param("clusters of episodes older than this many days "
                                              "(default: the compact.older_than_days setting, 30)")] = None,
    limit: Annotated[int, Param("most clusters a list returns, each with its episodes' text",
                                short="-n")] = LIST_LIMIT,
    project: ProjectOpt = None,
    reason: Annotated[str | None, Param("why, kept in the audit trail", short="-r")] = None,
) -> SummarizeResult:
    """Write the summary of a cluster of old episodes yourself, instead of compaction's extract.

    A cluster is one session's episodes of one week, older than `older_than` days. List
    the clusters (each with its episodes' text), stage a summary for one, then apply it:
    the episodes are folded into the summary exactly as compaction folds them
    (superseded by it, unchanged, restorable). Discarding drops a staged summary; the
    episodes stay as they are. An apply is refused when an episode changed since the
    summary was staged.

    CLI:
      `marm summarize` lists the clusters; `marm summarize list CLUSTER` shows one in
      full; `marm compact --restore SUMMARY_ID` undoes an apply.
    MCP:
      `action` is list, stage, apply or discard; stage, apply and discard take the
      `cluster` number a list gave, stage also the `summary` text. Keep in the summary
      what a later question would look for: decisions, causes, fixes, names of files,
      commands and numbers. marm_restore on an episode gives it back alone.
    Examples:
      marm summarize
      marm summarize list 412 --json
      marm summarize stage 412 --summary "Moved the retry logic into the queue worker; ..."
      marm summarize apply 412
      marm summarize discard 412 --reason "missed the migration fix"
    """
    store = ctx.store()
    scope = ctx.project(project)
    days = older_than if older_than is not None else ctx.number("compact.older_than_days")
    reason = clean_name(reason) if reason else reason
    if action == "list":
        if limit < 1:
            raise BadInput("--limit must be 1 or more")
        summaries.expire_after(store, ctx.number("summarize.staged_days"))
        listed = _clusters(ctx, scope, days)
        shown = [c for c in listed if cluster is None or c.id == cluster]
        if cluster is not None and not shown:
            raise NotFound(f"no cluster {cluster} here; `marm summarize` lists them")
        return SummarizeResult(scope, action, shown[:limit], len(shown))
    if cluster is None:
        raise BadInput(f"`marm summarize {action}` needs the cluster number `marm summarize` shows")
    if action == "stage":
        with store.write():
            waiting = summaries.staged(store, cluster)
            if waiting is not None and waiting.project == scope:
                held = memories.get_many(store, [i for i, _ in waiting.sources])
                sources = [held[i] for i, _ in waiting.sources if i in held]
                session, week = waiting.session, waiting.week
            else:
                fold = _fold_of(ctx, scope, days, cluster)
                sources, session, week = list(fold.sources), fold.topic, fold.week
            text = _summary_text(summary, sum(len(m.content) for m in sources))
            summaries.stage(store, cluster, scope, session, week, [(m.id, m.content_hash) for m in sources], text)
            staged = _cluster({m.id: m for m in sources}, [m.id for m in sources], session, week, text)
        return SummarizeResult(scope, action, [staged], 1, True,
                               message=f"summary staged for cluster {cluster} ({len(text):,} characters "
                                       f"for {staged.source_chars:,})")
    if summary is not None:
        raise BadInput(f"`marm summarize {action}` takes no summary")
    with store.write():
        waiting = summaries.staged(store, cluster)
        if waiting is None or waiting.project != scope:
            raise NotFound(f"no summary is staged for cluster {cluster} here")
        ids = [i for i, _ in waiting.sources]
        found = memories.get_many(store, ids)
        view = _cluster(found, ids, waiting.session, waiting.week, waiting.summary)
        if action == "discard":
            summaries.decide(store, waiting, "discarded", reason)
            return SummarizeResult(scope, action, [view], 1, True,
                                   message=f"staged summary of cluster {cluster} discarded; its episodes stay")
        changed = [i for i, h in waiting.sources
                   if i not in found or found[i].content_hash != h or found[i].status != "active"]
        if not changed:
            written = fold_into(ctx, [found[i] for i in ids], waiting.summary, waiting.week,
                                staged_summary=waiting.id, written_by=ctx.source)
            summaries.decide(store, waiting, "applied", reason, written.id)
    if changed:
        with store.write():
            summaries.decide(store, waiting, "stale", f"episodes changed since staged: {changed}")
        raise BadInput(f"episode #{changed[0]} of cluster {cluster} changed or was folded since the summary "
                       "was staged; the summary is stale: list the clusters and stage a new one")
    return SummarizeResult(scope, action, [view], 1, True, written.id,
                           f"cluster {cluster}: {len(ids)} episodes folded into summary #{written.id} "
                           f"(`marm compact --restore {written.id}` gives them back)")
