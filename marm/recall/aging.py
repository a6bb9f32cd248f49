"""Episodes age in ranking; highlights and hand-written memories do not.

An episode is one turn kept nearly verbatim: what it says about the code and the plan
goes out of date as the project moves, while a highlight (a decision, a fix, a lesson)
or a memory a person wrote is kept because it should hold until someone says
otherwise. So an episode's fused score is multiplied by a weight that halves every
``half_life_days`` of validity age (``recall.episode_half_life_days``, 180 by
default) and stays at half from then on (``FLOOR``): gentle, so an old episode that is
the best answer still comes back, above recall's relative floor.
"""

from __future__ import annotations

from datetime import datetime

from marm.recall import dates
from marm.store.records import Memory

EPISODE_HALF_LIFE_DAYS = 180.0
FLOOR = 0.5


def episode_age_weight(memory: Memory, now: datetime, half_life_days: float) -> float:
    """The factor on ``memory``'s score: 1 for everything but an episode captured by a hook."""
    if memory.kind != "episode" or not memory.source.startswith("hook:") or half_life_days <= 0:
        return 1.0
    when = dates.parse_stamp(memory.valid_from or memory.recorded_at)
    if when is None:
        return 1.0
    age = max(0.0, (now - when).total_seconds() / 86400)
    return max(FLOOR, 0.5 ** (age / half_life_days))


def aged(pool: list[tuple[float, int]], seen: dict[int, Memory], now: datetime,
         half_life_days: float) -> list[tuple[float, int]]:
    """``pool`` (score, id) with each episode's score weighted by its age, best first."""
    out = [(score * episode_age_weight(seen[mid], now, half_life_days), mid) if mid in seen else (score, mid)
           for score, mid in pool]
    return sorted(out, key=lambda sm: (-sm[0], -sm[1]))
