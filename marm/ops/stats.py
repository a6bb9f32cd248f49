"""``marm stats``: what the hooks cost, read back from the hook-run log.

marm spends no LLM tokens of its own, but what it injects lands in the agent's context:
this says how much (characters, and tokens estimated at four characters each), how long
the hooks take (p50/p95 wall time of each event, measured inside the hook process, so
Python's own start-up is not in it), what they captured, and how the store grew.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Annotated, Any

from marm.context import Ctx
from marm.errors import BadInput
from marm.ops import hooklog
from marm.ops.registry import Param, op

#: Characters per token, the usual estimate for English text and code.
CHARS_PER_TOKEN = 4
_SINCE = re.compile(r"^(\d+)\s*([mhdw])$")
#: The hook events in the order a session meets them (``marm.hooks.event.EVENTS``).
EVENTS = ("session-start", "prompt", "post-tool", "stop", "pre-compact", "session-end")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _cutoff(since: str) -> datetime | None:
    if since == "all":
        return None
    m = _SINCE.match(since.strip())
    if not m:
        raise BadInput(f"--since takes a number and a unit (30m, 24h, 7d, 2w) or 'all', not {since!r}")
    return datetime.now(timezone.utc) - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})


@dataclass(frozen=True, slots=True)
class StatsResult:
    since: str
    project: str | None
    runs: int
    events: dict[str, dict[str, float]]
    injected: dict[str, dict[str, float]]
    captures: dict[str, float]
    store: dict[str, int] = field(default_factory=dict)

    def text(self) -> str:
        from marm.scope import display

        scope = display(self.project) if self.project else "every project"
        lines = [f"hook runs in the last {self.since} for {scope}: {self.runs}"]
        for event, e in self.events.items():
            lines.append(f"  {event:<14} {int(e['count']):>6} runs ({int(e['inactive'])} inactive)  "
                         f"p50 {e['p50_ms']:.0f} ms  p95 {e['p95_ms']:.0f} ms")
        for event, i in self.injected.items():
            lines.append(f"injected at {event}: {int(i['chars'])} characters (~{int(i['tokens'])} tokens) in "
                         f"{int(i['runs'])} runs, {i['chars_per_run']:.0f} characters (~{i['tokens_per_run']:.0f}"
                         f" tokens) per run")
        c = self.captures
        lines.append(f"captured: {int(c['memories'])} memories in {int(c['sessions'])} sessions "
                     f"({c['per_session']:.1f} per session)")
        if self.store:
            lines.append(f"store: {self.store['growth_bytes'] / 1024:+.0f} KiB over the window "
                         f"(now {self.store['bytes_now'] / 1024:.0f} KiB)")
        return "\n".join(lines)


@op("stats", read_only=True, idempotent=True)
def stats(
    ctx: Ctx,
    project: Annotated[str | None, Param("only this project's hook runs: a name or a path "
                                         "(default: every project)", short="-p")] = None,
    since: Annotated[str, Param("only runs this recent: 30m, 24h, 7d, 2w, or all")] = "7d",
) -> StatsResult:
    """What the hooks cost: runs, wall time, characters injected, captures, store growth.

    Examples:
      marm stats
      marm stats --since 24h --project api
    """
    cutoff = _cutoff(since)
    wanted = ctx.project(project) if project else None
    records = hooklog.read(ctx.home)
    if cutoff is not None:
        floor = cutoff.strftime("%Y-%m-%dT%H:%M:%S")
        records = [r for r in records if str(r["at"]) >= floor]
    if wanted is not None:
        records = [r for r in records if r.get("project") == wanted]
    return summarise(records, since, wanted, hooklog.store_bytes(ctx.home))


def summarise(records: list[dict[str, Any]], since: str, project: str | None, bytes_now: int) -> StatsResult:
    events: dict[str, dict[str, float]] = {}
    for event in (*EVENTS, *sorted({str(r["event"]) for r in records} - set(EVENTS))):
        runs = [r for r in records if r["event"] == event]
        if not runs:
            continue
        ms = [float(r.get("ms", 0)) for r in runs]
        events[event] = {"count": len(runs), "inactive": sum(1 for r in runs if not r.get("active", True)),
                         "p50_ms": round(percentile(ms, 50), 1), "p95_ms": round(percentile(ms, 95), 1)}
    injected: dict[str, dict[str, float]] = {}
    for event in ("prompt", "session-start"):
        runs = [r for r in records if r["event"] == event]
        if not runs:
            continue
        chars = sum(int(r.get("chars", 0)) for r in runs)
        injected[event] = {
            "runs": len(runs), "injections": sum(1 for r in runs if r.get("chars")),
            "chars": chars, "tokens": tokens(chars),
            "chars_per_run": round(chars / len(runs), 1), "tokens_per_run": round(tokens(chars) / len(runs), 1),
        }
    captured = sum(int(r.get("captured", 0)) for r in records)
    sessions = len({r["session"] for r in records if r.get("session") and r.get("active", True)})
    captures = {"memories": captured, "sessions": sessions,
                "per_session": round(captured / sessions, 2) if sessions else 0.0}
    sizes = [int(r["db_bytes"]) for r in records if "db_bytes" in r]
    store = {"bytes_first": sizes[0], "bytes_last": sizes[-1], "growth_bytes": sizes[-1] - sizes[0],
             "bytes_now": bytes_now} if sizes else {}
    return StatsResult(since, project, len(records), events, injected, captures, store)
