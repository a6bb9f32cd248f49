"""Applying memories to the derived graph: the one path the drain and a build share.

For every memory id: take its previous contribution out, then, if the memory still
exists and is active or doubted, extract it and add the new contribution, with every
name resolved through the review verdicts. What the memory's source stated outright
(an imported knowledge graph's entities and relations, kept in its metadata under
``stated``) is added to what the extractor found, so such an edge is in the graph
exactly as the source had it, after every rebuild. A retracted, superseded or deleted memory
therefore leaves the graph. One batch is one transaction of the derived database, and
running it twice leaves the same graph, so a drain killed anywhere loses and doubles
nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from marm.concepts import spacy_model
from marm.concepts.model import TYPE_RANK, Extraction, Mention, Relation, finish, normal_key
from marm.concepts.rules import RuleExtractor
from marm.store import concept_verdicts, memories
from marm.store.concept_graph import Graph
from marm.store.db import Store

log = logging.getLogger("marm.concepts")


class Extractor(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    def extract(self, texts: Iterable[str]) -> Iterator[Extraction]: ...


def extractor() -> Extractor:
    """The spaCy extractor when its pipeline is installed, else the rule-based one."""
    if spacy_model() is None:
        return RuleExtractor()
    try:
        from marm.concepts import nlp  # start-up cost: spaCy loads only when extraction runs

        loaded = nlp.load()
    except (ImportError, OSError, ValueError) as exc:
        log.warning("spaCy pipeline unusable, using the rule-based extractor: %s", exc)
        return RuleExtractor()
    return loaded if loaded is not None else RuleExtractor()


@dataclass
class Applied:
    added: int = 0  # memories whose contribution is in the graph now
    removed: int = 0  # memories whose contribution left (gone, retracted, superseded)


def apply(store: Store, graph: Graph, memory_ids: Sequence[int], using: Extractor) -> Applied:
    """Bring the graph's contribution of ``memory_ids`` up to date with the store."""
    found = memories.get_many(store, memory_ids)
    live = [
        found[i]
        for i in dict.fromkeys(memory_ids)
        if i in found and found[i].status in memories.VISIBLE_STATUSES
    ]
    extractions = list(using.extract(m.content for m in live)) if live else []
    verdicts = concept_verdicts.load(store)
    result = Applied(added=len(live), removed=len(set(memory_ids)) - len(live))
    with graph.write():
        for memory_id in dict.fromkeys(memory_ids):
            graph.remove_memory(memory_id)
        for memory, raw in zip(live, extractions, strict=True):
            graph.add_memory(
                memory.id,
                memory.project,
                memory.content_hash,
                using.name,
                finish(_with_stated(raw, memory.metadata), verdicts.resolve),
            )
    return result


def _with_stated(raw: Extraction, metadata: dict) -> Extraction:
    """``raw`` plus the entities and relations the memory's metadata states (see
    ``marm.importers.stated``): full salience and weight, the relation's own name as
    the predicate (``works_at``, ``depends_on``), the entity's type where the graph has
    that type, else ``concept``."""
    given = metadata.get("stated") if isinstance(metadata, dict) else None
    if not isinstance(given, dict):
        return raw
    mentions: list[Mention] = []
    for e in given.get("entities") or []:
        name = str(e.get("name") or "").strip() if isinstance(e, dict) else ""
        kind = str(e.get("type") or "").lower()
        if normal_key(name):
            mentions.append(Mention(normal_key(name), name, kind if kind in TYPE_RANK else "concept", 1.0))
    relations = [
        Relation(normal_key(str(r["from"])), normal_key(str(r["type"])).replace(" ", "_").replace("-", "_"),
                 normal_key(str(r["to"])), 1.0)
        for r in given.get("relations") or []
        if isinstance(r, dict) and all(normal_key(str(r.get(k) or "")) for k in ("from", "type", "to"))
    ]
    return Extraction(raw.mentions + tuple(mentions), raw.relations + tuple(relations))
