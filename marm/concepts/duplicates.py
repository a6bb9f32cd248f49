"""Likely duplicate concepts for a person to review: ``marm concepts review``.

Two entities are candidates when they have the same letters (write_queue, WriteQueue),
differ by a plural, or have the same words in another order. A pair someone dismissed
(``marm concepts dismiss``) is never offered again: the verdict lives in the durable store.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from marm.concepts.walk import singular
from marm.store import concept_verdicts
from marm.store.concept_graph import Entity


@dataclass(frozen=True, slots=True)
class DuplicatePair:
    a: str
    b: str
    a_name: str
    b_name: str
    reason: str
    memories: int

    def line(self) -> str:
        return f"{self.a_name}  ~  {self.b_name}   ({self.reason}; {self.memories} memories)"


def _squash(key: str) -> str:
    return singular(re.sub(r"[^0-9a-z]", "", key))


def likely_duplicates(entities: Iterable[Entity], verdicts: concept_verdicts.Verdicts) -> list[DuplicatePair]:
    """Undismissed candidate pairs, the most-mentioned first."""
    groups: dict[tuple[str, str], list[Entity]] = defaultdict(list)
    for e in entities:
        groups[("same letters", _squash(e.key))].append(e)
        words = e.key.split()
        if len(words) > 1:
            groups[("same words", " ".join(sorted(singular(w) for w in words)))].append(e)
    pairs: dict[tuple[str, str], DuplicatePair] = {}
    for (reason, _), members in groups.items():
        for i, x in enumerate(members):
            for y in members[i + 1 :]:
                a, b = concept_verdicts.pair(x.key, y.key)
                if (a, b) in pairs or verdicts.is_dismissed(a, b):
                    continue
                first, second = (x, y) if x.key == a else (y, x)
                pairs[(a, b)] = DuplicatePair(a, b, first.name, second.name, reason, x.memories + y.memories)
    return sorted(pairs.values(), key=lambda p: (-p.memories, p.a, p.b))
