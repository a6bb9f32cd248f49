"""Concept graph ops: build, recall, and the review verbs (merge, remove, dismiss, review).

Recall needs no model: it normalises the query with plain string rules, looks the
names up in the derived graph and walks it, so it stays fast. The review verbs write
value-keyed verdicts to the durable database (with events) and correct the derived
graph at once; every later extraction and every rebuild applies them again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Annotated, Literal

from marm import config
from marm.code.links import symbols_named
from marm.concepts import duplicates, indexer, walk
from marm.concepts.duplicates import DuplicatePair
from marm.concepts.model import normal_key
from marm.concepts.walk import ConceptView, RelationView
from marm.context import Ctx
from marm.errors import BadInput
from marm.ops.params import AllProjects, ProjectOpt
from marm.ops.registry import Param, op
from marm.ops.results import Done, MemoryView
from marm.scope import display
from marm.store import concept_verdicts, leases, memories
from marm.store.concept_graph import Graph
from marm.store.memories import Filter


def _graph(ctx: Ctx) -> Graph:
    return Graph.open(config.derived_path(ctx.home))


@dataclass(frozen=True, slots=True)
class BuildResult:
    scope: str
    memories: int
    removed: int
    entities: int
    edges: int
    extractor: str
    seconds: float

    def text(self) -> str:
        return (
            f"rebuilt the concept graph for {self.scope} from {self.memories} memories"
            f" ({self.extractor}, {self.seconds:.1f}s); graph now holds {self.entities}"
            f" entities and {self.edges} edges"
        )


@op("concepts", "build", mcp="marm_concept_build", idempotent=True)
def build(
    ctx: Ctx,
    all: Annotated[
        bool, Param("drop the whole concept graph and rebuild it from every memory")
    ] = False,
    project: ProjectOpt = None,
) -> BuildResult:
    """Rebuild the concept graph from scratch (default: the current project and global).

    The graph is derived and disposable; merges and removals you made are kept in the
    durable store and applied again, so a rebuild never brings a removed name back.
    Runs under the drain lease: it waits for no one and fails at once if a drain runs.

    Examples:
      marm concepts build
      marm concepts build --all
    """
    if all and project:
        raise BadInput("use either --all or --project, not both")
    started = time.monotonic()
    store = ctx.store()
    flt = Filter(all_projects=True) if all else Filter(project=ctx.project(project))
    graph = _graph(ctx)
    try:
        with leases.hold(store, ctx.home, "drain", holder="marm concepts build"):
            if all:
                graph.reset()
            stale = graph.source_ids(flt.project, flt.all_projects)
            ids = [m.id for m in memories.recent(store, flt, limit=10**12)]
            todo = list(dict.fromkeys([*ids, *stale]))
            using = indexer.extractor()
            removed = 0
            with ctx.progress(len(todo), "concepts build") as bar:
                for start in range(0, len(todo), 256):
                    part = todo[start : start + 256]
                    removed += indexer.apply(store, graph, part, using).removed
                    bar.advance(len(part))
        stats = graph.stats()
    finally:
        graph.close()
    return BuildResult(
        "every project" if all else display(flt.project),
        len(ids),
        removed,
        stats.entities,
        stats.edges,
        using.name,
        round(time.monotonic() - started, 3),
    )


@dataclass(frozen=True, slots=True)
class CodeLink:
    """A concept that names a code symbol, and where the code graph defines it."""

    concept: str
    qname: str
    kind: str
    path: str
    line: int
    repo: str


@dataclass(frozen=True, slots=True)
class ConceptRecallResult:
    query: str
    project: str | None
    depth: int
    entities: list[ConceptView]
    relations: list[RelationView]
    memories: list[MemoryView]
    note: str | None = None
    code: list[CodeLink] = field(default_factory=list)

    def text(self) -> str:
        if not self.entities:
            return f"no concept matches {self.query!r} in {display(self.project)}" + (
                f" ({self.note})" if self.note else ""
            )
        seeds = [e for e in self.entities if e.hop == 0]
        lines = [", ".join(f"{e.name} ({e.type}, {e.memories} memories)" for e in seeds)]
        lines += [f"  {r.line()}" for r in self.relations]
        if self.memories:
            lines.append("memories:")
            lines += [f"  {m.line()}" for m in self.memories]
        if self.code:
            lines.append("code:")
            lines += [f"  {c.concept} -> {c.qname} ({c.kind}) {c.path}:{c.line}" for c in self.code]
        if self.note:
            lines.append(f"({self.note})")
        return "\n".join(lines)


@op("concepts", "recall", mcp="marm_concept_recall", read_only=True, idempotent=True)
def concept_recall(
    ctx: Ctx,
    query: Annotated[
        str,
        Param('a name or a question naming one ("what depends on the write queue")', argument=True),
    ],
    depth: Annotated[int, Param("hops to walk from the named entities (1-3)")] = 1,
    limit: Annotated[int, Param("most memories to return", short="-n")] = 5,
    project: ProjectOpt = None,
    all_projects: AllProjects = False,
    detail: Annotated[
        Literal[1, 2, 3], Param("memory content length: 1 short, 2 medium, 3 full")
    ] = 1,
) -> ConceptRecallResult:
    """The entity a query names, its typed relations (multi-hop) and the memories behind them.

    Scoped like recall (the current project plus global memories); retracted and
    superseded memories are never shown. Needs no model.

    Examples:
      marm concepts recall "write queue"
      marm concepts recall "what depends on the write queue" --depth 2
    """
    if not 1 <= depth <= 3:
        raise BadInput("--depth takes 1, 2 or 3")
    if limit < 1:
        raise BadInput("--limit must be at least 1")
    if not query.strip():
        raise BadInput("the query is empty")
    scope = None if all_projects else ctx.project(project)
    store = ctx.store()
    if not config.derived_path(ctx.home).exists():
        note = "no concept graph yet: run `marm drain` or `marm concepts build`"
        return ConceptRecallResult(query, scope, depth, [], [], [], note)
    graph = _graph(ctx)
    try:
        found = walk.walk(graph, query, concept_verdicts.load(store), depth, scope, all_projects)
    finally:
        graph.close()
    seeds, hops, edges, entities, behind = found.seeds, found.hops, found.edges, found.entities, found.behind
    visible = walk.visible(store, behind, scope, all_projects)
    relations = []
    seen = set()
    for e in edges:
        ids = [i for i in e.memory_ids if i in visible]
        if not ids or (e.source, e.predicate, e.target) in seen:
            continue  # its memories left since the last drain, or are out of scope
        seen.add((e.source, e.predicate, e.target))
        relations.append(
            RelationView(
                entities[e.source].name, e.predicate, entities[e.target].name, e.weight, ids
            )
        )
    ordered = list(dict.fromkeys(i for i in behind if i in visible))
    views = [
        ConceptView(entities[i].name, entities[i].key, entities[i].type, entities[i].memories, h)
        for i, h in sorted(hops.items(), key=lambda kv: (kv[1], -entities[kv[0]].memories))
        if i in entities
    ]
    missing = None if seeds else "no entity with that name; try a shorter name or `marm recall`"
    return ConceptRecallResult(
        query,
        scope,
        depth,
        views,
        relations,
        [MemoryView.of(visible[i], detail) for i in ordered[:limit]],
        missing,
        _code_links(ctx, views, scope, all_projects),
    )


#: Concept types that may name something the code graph defines.
_CODE_TYPES = ("symbol", "file")


def _code_links(
    ctx: Ctx, views: list[ConceptView], scope: str | None, all_projects: bool
) -> list[CodeLink]:
    """Definitions of the symbols and files the concepts name, in the repositories of
    this project (or every indexed one with --all-projects). Empty without a code graph."""
    names = [v.name for v in views if v.type in _CODE_TYPES]
    links = []
    for name, found in symbols_named(ctx.home, names).items():
        for link in found:
            if all_projects or scope is None or link.repo == scope:
                links.append(CodeLink(name, link.qname, link.kind, link.path, link.line, link.repo))
    return links[:MAX_CODE_LINKS]


MAX_CODE_LINKS = 20


def _key(graph: Graph, text: str) -> str:
    """The entity key a person means by ``text`` (the graph's name for it if it has one)."""
    key = normal_key(text)
    if not key:
        raise BadInput("a concept name cannot be empty")
    for candidate in (key, walk.singular(key)):
        if graph.entities_by_key([candidate]):
            return candidate
    return key


@op("concepts", "merge", idempotent=True)
def merge(
    ctx: Ctx,
    a: Annotated[str, Param("the name to keep", argument=True)],
    b: Annotated[str, Param("the duplicate: from now on it means A", argument=True)],
) -> Done:
    """Merge concept B into A: B becomes an alias of A, now and in every rebuild.

    Examples:
      marm concepts merge write_queue WriteQueue
    """
    store = ctx.store()
    graph = _graph(ctx)
    try:
        keep, alias = _key(graph, a), _key(graph, b)
        verdicts = concept_verdicts.load(store)
        target = verdicts.resolve(keep)
        if target is None:
            raise BadInput(f"{a!r} was removed (suppressed); it cannot absorb another name")
        if target == alias:
            target = keep  # flipping an earlier merge: A becomes the name to keep
        if alias == target:
            raise BadInput("A and B name the same concept")
        concept_verdicts.add_alias(store, alias, target)
        with graph.write():
            moved = graph.merge_entity(alias, target)
    finally:
        graph.close()
    return Done(
        True,
        f"merged {alias!r} into {target!r} ({moved} memories moved)",
        {"alias": alias, "canonical": target, "memories": str(moved)},
    )


@op("concepts", "remove", idempotent=True, destructive=True)
def remove(
    ctx: Ctx,
    name: Annotated[str, Param("the concept to drop from the graph", argument=True)],
    reason: Annotated[str | None, Param("why, kept in the audit trail")] = None,
) -> Done:
    """Remove a concept and never extract it again (a suppression that survives rebuilds).

    The memories that named it stay, and so do their other concepts.

    Examples:
      marm concepts remove "thing" --reason "not a concept"
    """
    graph = _graph(ctx)
    try:
        key = _key(graph, name)
        concept_verdicts.suppress(ctx.store(), key, reason)
        with graph.write():
            named = graph.delete_entity(key)
    finally:
        graph.close()
    where = f"named by {named} memories" if named else "not in the graph now"
    return Done(
        True,
        f"removed {key!r} ({where}); it will not be extracted again",
        {"name": key, "memories": str(named)},
    )


@op("concepts", "dismiss", idempotent=True)
def dismiss(
    ctx: Ctx,
    a: Annotated[str, Param("one concept", argument=True)],
    b: Annotated[str, Param("the other: not the same thing as A", argument=True)],
) -> Done:
    """Say two concepts are not duplicates: `marm concepts review` stops proposing them.

    Examples:
      marm concepts dismiss session sessions
    """
    graph = _graph(ctx)
    try:
        first, second = _key(graph, a), _key(graph, b)
    finally:
        graph.close()
    if first == second:
        raise BadInput("A and B name the same concept")
    concept_verdicts.dismiss(ctx.store(), first, second)
    return Done(
        True,
        f"{first!r} and {second!r} will not be proposed as duplicates again",
        {"a": first, "b": second},
    )


@dataclass(frozen=True, slots=True)
class ReviewResult:
    project: str | None
    pairs: list[DuplicatePair] = field(default_factory=list)

    def text(self) -> str:
        if not self.pairs:
            return f"no likely duplicates in {display(self.project)}"
        lines = [p.line() for p in self.pairs]
        lines.append(
            "merge with `marm concepts merge A B`; keep apart with `marm concepts dismiss A B`"
        )
        return "\n".join(lines)


@op("concepts", "review", read_only=True, idempotent=True)
def review(
    ctx: Ctx,
    limit: Annotated[int, Param("most pairs to list", short="-n")] = 20,
    project: ProjectOpt = None,
    all_projects: AllProjects = False,
) -> ReviewResult:
    """List likely duplicate concepts that nobody has dismissed.

    Candidates have the same letters (write_queue, WriteQueue), differ by a plural, or
    have the same words in another order.

    Examples:
      marm concepts review
      marm concepts review --limit 5
    """
    scope = None if all_projects else ctx.project(project)
    verdicts = concept_verdicts.load(ctx.store())
    if not config.derived_path(ctx.home).exists():
        return ReviewResult(scope, [])
    graph = _graph(ctx)
    try:
        entities = graph.all_entities(scope, all_projects)
    finally:
        graph.close()
    return ReviewResult(scope, duplicates.likely_duplicates(entities, verdicts)[:limit])
