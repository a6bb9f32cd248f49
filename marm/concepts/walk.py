"""Walking the concept graph: from the words of a query to the entities it names, their
typed relations over a few hops, and the memories behind them.

Read-only and bounded (``MAX_SEEDS``, ``EDGES_PER_HOP``, ``MAX_ENTITIES``). The graph can
lag a status change of a memory, so every memory id a walk yields is checked against the
durable store (``visible``) before anyone sees it. ``graph_context`` is the small,
separate view a recall may attach: it never changes the recall's ranking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from marm import config
from marm.concepts.model import PREDICATES, RELATED, normal_key
from marm.concepts.rules import VERB_FORMS
from marm.store import concept_verdicts, memories
from marm.store.concept_graph import Edge, Entity, Graph
from marm.store.db import Store
from marm.store.records import Memory

#: Bounds of one recall: seeds, edges followed per hop, entities reached.
MAX_SEEDS = 5
EDGES_PER_HOP = 30
MAX_ENTITIES = 60


@dataclass(frozen=True, slots=True)
class ConceptView:
    name: str
    key: str
    type: str
    memories: int  # memories in scope that name it
    hop: int  # 0 for what the query named, 1.. for what the walk reached


@dataclass(frozen=True, slots=True)
class RelationView:
    source: str
    predicate: str
    target: str
    weight: float
    memory_ids: list[int]

    def line(self) -> str:
        ids = ", ".join(f"#{i}" for i in self.memory_ids[:6])
        return f"{self.source} --{self.predicate}--> {self.target}  [{ids}]"


_WORD = re.compile(r"[^\s]+")


def singular(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-3] + "y" if word.endswith("ies") else word[:-1]
    return word


def candidates(query: str) -> list[str]:
    """Names the query may mean, longest first: the whole query, then every run of its
    words (so "what depends on the write queue?" tries "write queue")."""
    words = [w for w in (normal_key(w) for w in _WORD.findall(query)) if w]
    out: list[str] = [normal_key(query)]
    for n in range(len(words), 0, -1):
        for i in range(len(words) - n + 1):
            gram = words[i : i + n]
            out.append(" ".join(gram))
            out.append(" ".join([*gram[:-1], singular(gram[-1])]))
    return list(dict.fromkeys(k for k in out if len(k) >= 2))


def seeds(
    graph: Graph,
    query: str,
    verdicts: concept_verdicts.Verdicts,
    project: str | None,
    all_projects: bool,
) -> list[Entity]:
    names = candidates(query)
    resolved = list(dict.fromkeys(r for k in names if (r := verdicts.resolve(k))))
    found = {e.key: e for e in graph.entities_by_key(resolved, project, all_projects)}
    seeds: list[Entity] = []
    for key in resolved:  # longest names first; skip words of a name already taken
        if key in found and not any(f" {key} " in f" {s.key} " for s in seeds):
            seeds.append(found[key])
    if not seeds:
        words = [w for w in normal_key(query).split() if len(w) > 2]
        seeds = graph.entities_like(
            [normal_key(query)], project, all_projects, MAX_SEEDS
        ) or graph.entities_like(words, project, all_projects, MAX_SEEDS)
    return seeds[:MAX_SEEDS]


def focus(query: str) -> set[str]:
    """Predicates the query asks about ("what depends on ..." -> depends_on)."""
    return {PREDICATES[VERB_FORMS[w]][0] for w in normal_key(query).split() if w in VERB_FORMS}


@dataclass(frozen=True, slots=True)
class Walk:
    """What a walk from the entities a query names reached: the seeds, every entity with
    its hop, the edges between reached entities, and the memories behind them (in order)."""

    seeds: list[Entity]
    hops: dict[int, int]
    edges: list[Edge]
    entities: dict[int, Entity]
    behind: list[int]


def walk(
    graph: Graph,
    query: str,
    verdicts: concept_verdicts.Verdicts,
    depth: int,
    scope: str | None,
    all_projects: bool,
) -> Walk:
    """Breadth-first from the seeds, ``depth`` hops, edges of the asked-about predicate first."""
    found_seeds = seeds(graph, query, verdicts, scope, all_projects)
    hops = {e.id: 0 for e in found_seeds}
    edges = []
    frontier = list(hops)
    asked = focus(query)
    for hop in range(1, depth + 1):
        if not frontier or len(hops) >= MAX_ENTITIES:
            break
        found = graph.edges_of(frontier, scope, all_projects, EDGES_PER_HOP)
        found.sort(key=lambda e: (e.predicate not in asked, e.predicate == RELATED, -e.weight))
        frontier = []
        for edge in found:
            for end in (edge.source, edge.target):
                if end not in hops and len(hops) < MAX_ENTITIES:
                    hops[end] = hop
                    frontier.append(end)
            if edge.source in hops and edge.target in hops:
                edges.append(edge)
    entities = graph.entities(hops, scope, all_projects)
    behind = [mid for e in edges for mid in e.memory_ids]
    behind += [mid for _, mid in graph.mention_memories([e.id for e in found_seeds], scope, all_projects, 50)]
    return Walk(found_seeds, hops, edges, entities, behind)


@dataclass(frozen=True, slots=True)
class GraphContext:
    """What the concept graph knows about a recall's results: read-only, bounded, and
    never part of the ranking."""

    entities: list[ConceptView]
    relations: list[RelationView]


def graph_context(
    home: Path,
    store: Store,
    memory_ids: list[int],
    project: str | None,
    all_projects: bool,
    entities: int = 8,
    relations: int = 12,
) -> GraphContext | None:
    """The entities the given memories name and their typed relations, within scope.
    None when no graph has been built yet (nothing is created by asking)."""
    path = config.derived_path(home)
    if not memory_ids or not path.exists():
        return None
    graph = Graph.open(path)
    try:
        ids = graph.entities_of_memories(memory_ids, entities)
        found = graph.entities(ids, project, all_projects)
        edges = [
            e
            for e in graph.edges_of(ids, project, all_projects, relations * 3)
            if e.predicate != RELATED
        ]
        named = graph.entities(
            {x for e in edges for x in (e.source, e.target)} - set(found), project, all_projects
        )
    finally:
        graph.close()
    everything = {**named, **found}
    found_memories = visible(store, [m for e in edges for m in e.memory_ids], project, all_projects)
    views = [
        RelationView(
            everything[e.source].name, e.predicate, everything[e.target].name, e.weight, behind
        )
        for e in edges
        if (behind := [m for m in e.memory_ids if m in found_memories])
    ][:relations]
    return GraphContext(
        [
            ConceptView(found[i].name, found[i].key, found[i].type, found[i].memories, 0)
            for i in ids
            if i in found
        ],
        views,
    )


def visible(
    store: Store, ids: list[int], project: str | None, all_projects: bool
) -> dict[int, Memory]:
    """The memories a reader in this scope may see (the graph can lag a status change)."""
    found = memories.get_many(store, ids)
    return {
        i: m
        for i, m in found.items()
        if m.status in memories.VISIBLE_STATUSES
        and (all_projects or m.project is None or m.project == project)
    }
