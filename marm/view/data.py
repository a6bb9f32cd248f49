"""What the page shows, gathered through the store and op query functions the CLI uses.

``collect`` returns one JSON-ready dict. Text stays raw (the page renders it with
``textContent``); nothing here escapes anything. Every section is bounded so that a
large store still gives a page that opens at once: the most recent ``limit`` memories,
the ``GRAPH_NODES`` most mentioned concepts, the ``CODE_SYMBOLS`` most central symbols,
and the page is told how much was left out.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from marm import __version__, config
from marm.errors import MarmError
from marm.context import Ctx
from marm.scope import display
from marm.store import events, memories, outbox
from marm.store.memories import Filter
from marm.store.records import Event, Memory

#: Every status: the page filters them itself (retracted and superseded start hidden).
ALL_STATUSES = ("active", "doubted", "superseded", "retracted")
#: Bounds of the sections besides the memory list.
GRAPH_NODES = 300
GRAPH_EDGES = 1500
GRAPH_MENTIONS = 30_000
REVIEW_ROWS = 500
DUPLICATE_PAIRS = 100
CODE_REPOS = 3
CODE_PACKAGES = 40
CODE_SYMBOLS = 40
CODE_NEIGHBOURS = 25

#: The actions a served page may ask for: name -> op registry path. The page sends the
#: op's own parameters; nothing else can be called.
ACTIONS: dict[str, tuple[str, ...]] = {
    "doubt": ("doubt",),
    "retract": ("retract",),
    "restore": ("restore",),
    "supersede": ("supersede",),
    "forget": ("forget",),
    "review": ("review",),
    "concepts merge": ("concepts", "merge"),
    "concepts remove": ("concepts", "remove"),
    "concepts dismiss": ("concepts", "dismiss"),
}


def _event(e: Event) -> dict[str, Any]:
    return {"at": e.at, "action": e.action, "source": e.source, "platform": e.platform,
            "reason": e.reason, "before": e.before_hash, "after": e.after_hash,
            "detail": e.detail or None}


def _memory(m: Memory, history: list[Event]) -> dict[str, Any]:
    return {
        "id": m.id, "content": m.content, "kind": m.kind, "status": m.status,
        "reason": m.status_reason, "superseded_by": m.superseded_by, "session": m.session,
        "project": m.project, "platform": m.platform, "source": m.source,
        "recorded_at": m.recorded_at, "valid_from": m.valid_from, "valid_to": m.valid_to,
        "history": [_event(e) for e in history],
    }


def _in_scope(flt: Filter, project: str | None) -> bool:
    return flt.all_projects or project is None or project == flt.project


def collect(ctx: Ctx, *, project: str | None, all_projects: bool, limit: int,
            serve: bool = False) -> dict[str, Any]:
    """Everything the page shows for one scope (the project plus global memories, or
    every project)."""
    started = time.monotonic()
    store = ctx.store()
    scope = None if all_projects else ctx.project(project)
    flt = Filter(project=scope, all_projects=all_projects, statuses=ALL_STATUSES)
    rows = memories.recent(store, flt, limit)
    listed = [_memory(m, events.for_entity(store, "memory", m.id)) for m in rows]
    in_scope = sum(n for p, n in memories.projects(store) if _in_scope(flt, p))
    data: dict[str, Any] = {
        "version": __version__,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "serve": serve,
        "scope": {"project": scope, "all_projects": all_projects,
                  "label": "every project" if all_projects else display(scope)},
        "limit": limit,
        "total": in_scope,
        "left_out": max(in_scope - len(listed), 0),
        "memories": listed,
        "actions": sorted(ACTIONS) if serve else [],
    }
    data["review"] = _review(ctx, flt, {m["id"] for m in listed})
    data["concepts"] = _concepts(ctx, scope, all_projects)
    data["code"] = _code(ctx, scope, all_projects)
    data["status"] = _status(ctx)
    data["collect_seconds"] = round(time.monotonic() - started, 3)
    return data


def _review(ctx: Ctx, flt: Filter, listed: set[int]) -> dict[str, Any]:
    """The hygiene queue (`marm review`: near-duplicates, reversals, stale code
    references), doubted memories (also those older than the list), likely duplicate
    concepts, parked background tasks."""
    from marm.ops import concepts as concept_ops
    from marm.ops.hygiene import review

    store = ctx.store()
    doubted = memories.recent(store, Filter(flt.project, flt.all_projects, statuses=("doubted",)),
                              REVIEW_ROWS)
    extra = [_memory(m, events.for_entity(store, "memory", m.id)) for m in doubted if m.id not in listed]
    pairs = concept_ops.review(ctx, limit=DUPLICATE_PAIRS, project=flt.project,
                               all_projects=flt.all_projects).pairs
    queue = review(ctx, project=flt.project, all_projects=flt.all_projects).items[:REVIEW_ROWS]
    return {
        "hygiene": [asdict(i) for i in queue],
        "doubted": [m.id for m in doubted],
        "doubted_memories": extra,       # doubted memories the list itself does not carry
        "duplicates": [asdict(p) for p in pairs],
        "parked": [{"kind": k, "target": t, "attempts": a, "error": e}
                   for k, t, a, e in outbox.parked(store)],
    }


def _concepts(ctx: Ctx, scope: str | None, all_projects: bool) -> dict[str, Any]:
    """The most mentioned concepts in scope, the edges between them, and which memories
    name each one."""
    from marm.store.concept_graph import Graph

    path = config.derived_path(ctx.home)
    if not path.exists():
        return {"nodes": [], "edges": [], "mentions": {}, "total": 0,
                "note": "no concept graph yet: run `marm drain` (or `marm concepts build`)"}
    graph = Graph.open(path)
    try:
        everything = graph.all_entities(scope, all_projects)
        top = sorted(everything, key=lambda e: (-e.memories, e.key))[:GRAPH_NODES]
        ids = {e.id for e in top}
        edges = [e for e in graph.edges_of(ids, scope, all_projects, GRAPH_EDGES * 4)
                 if e.source in ids and e.target in ids][:GRAPH_EDGES]
        mentions: dict[int, list[int]] = {}
        for entity_id, memory_id in graph.mention_memories(ids, scope, all_projects, GRAPH_MENTIONS):
            mentions.setdefault(entity_id, []).append(memory_id)
    finally:
        graph.close()
    return {
        "nodes": [{"id": e.id, "key": e.key, "name": e.name, "type": e.type, "memories": e.memories}
                  for e in top],
        "edges": [{"source": e.source, "target": e.target, "predicate": e.predicate,
                   "weight": e.weight, "memory_ids": list(e.memory_ids)} for e in edges],
        "mentions": mentions,
        "total": len(everything),
        "note": None if everything else "the concept graph has no entity in this scope yet",
    }


def _repos(ctx: Ctx, scope: str | None, all_projects: bool) -> list[str]:
    """Indexed repositories of the scope: those marked with its project, or whose root
    is the project."""
    from marm.ops.code import code_projects

    found = code_projects(ctx).projects
    return [p.path for p in found
            if p.indexed_at and (all_projects or p.project == scope or p.path == scope)][:CODE_REPOS]


def _code(ctx: Ctx, scope: str | None, all_projects: bool) -> dict[str, Any]:
    """Per indexed repository: packages by size, the most central symbols, and each of
    those symbols' direct callers and callees."""
    from marm.code import query as q
    from marm.ops.code import code_architecture

    repos: list[dict[str, Any]] = []
    for root in _repos(ctx, scope, all_projects):
        try:
            arch = code_architecture(ctx, limit=CODE_PACKAGES, repo=root)
        except MarmError as exc:
            repos.append({"repo": root, "error": exc.message})
            continue
        graph, tree = q.open_tree(ctx.home, Path(root))
        try:
            central = graph.top_ranked(
                tree.id, CODE_SYMBOLS,
                kinds=("function", "method", "class", "interface", "struct", "trait", "type", "enum"))
            symbols = []
            for row in central:
                steps = q.trace(graph, tree.id, [row], "both", 1)
                symbols.append({
                    "qname": row.qname, "kind": row.kind, "location": f"{row.path}:{row.line}",
                    "signature": row.signature, "rank": round(row.rank, 4),
                    "callers": [_step(s) for s in steps if s.direction == "callers"][:CODE_NEIGHBOURS],
                    "callees": [_step(s) for s in steps if s.direction == "callees"][:CODE_NEIGHBOURS],
                })
        finally:
            graph.close()
        repos.append({
            "repo": arch.repo, "indexed_at": arch.indexed_at, "files": arch.files,
            "lines": arch.lines, "symbols": arch.symbols, "edges": arch.edges,
            "languages": arch.languages, "packages": arch.packages,
            "entry_points": [asdict(s) for s in arch.entry_points], "central": symbols,
        })
    return {"repos": repos,
            "note": None if repos else "no indexed repository in this scope: run `marm code index`"}


def _step(s: Any) -> dict[str, Any]:
    return {"qname": s.qname, "kind": s.kind, "location": s.location, "site": s.site,
            "rule": s.rule, "confidence": s.confidence}


def _status(ctx: Ctx) -> dict[str, Any]:
    from marm.ops.system import status

    result = asdict(status(ctx))
    result.pop("settings", None)  # the page shows state, not configuration
    return result
