"""Background work ops: the drain."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any

from marm import drain as drain_engine
from marm.context import Ctx
from marm.errors import BadInput
from marm.ops.registry import Param, op
from marm.store import outbox


@dataclass(frozen=True, slots=True)
class DrainResult:
    detached_pid: int | None
    seconds: float
    stopped: str
    kinds: dict[str, dict[str, Any]] = field(default_factory=dict)
    sweeps: dict[str, dict[str, Any]] = field(default_factory=dict)
    retried: int = 0

    def text(self) -> str:
        if self.detached_pid:
            return f"drain started in the background (pid {self.detached_pid})"
        lines = [f"drain finished in {self.seconds:.1f}s ({self.stopped})"]
        for kind, k in self.kinds.items():
            if k.get("skipped"):
                lines.append(f"  {kind}: skipped, {k['skipped']} ({k['left']} pending)")
            else:
                lines.append(f"  {kind}: {k['done']} done, {k['failed']} failed"
                             f" ({k['parked']} parked), {k['left']} left")
        for name, s in self.sweeps.items():
            lines.append(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in s.items()))
        return "\n".join(lines)


@op("drain")
def drain(
    ctx: Ctx,
    max_seconds: Annotated[float, Param("stop after this many seconds")] = 300,
    limit: Annotated[int | None, Param("stop after this many tasks")] = None,
    kind: Annotated[str | None, Param("only this task kind (embed, concepts)")] = None,
    detach: Annotated[bool, Param("return at once; a detached process does the work")] = False,
    retry_parked: Annotated[bool, Param("put parked (failed 3 times) tasks back first")] = False,
) -> DrainResult:
    """Work through queued background tasks (embeddings, concepts, code re-index).

    Runs under a lease: a second drain exits at once saying who holds it. Safe to run
    from cron, e.g. every 10 minutes: `*/10 * * * * marm drain --max-seconds 300`.
    """
    if max_seconds <= 0:
        raise BadInput("--max-seconds must be positive")
    if kind is not None and kind not in drain_engine.HANDLER_MODULES:
        raise BadInput(f"unknown task kind {kind!r}; known: {', '.join(drain_engine.HANDLER_MODULES)}")
    retried = outbox.retry_parked(ctx.store(), kind) if retry_parked else 0
    if detach:
        return DrainResult(drain_engine.detach(ctx, max_seconds), 0.0, "detached", retried=retried)
    summary = drain_engine.run(ctx, max_seconds=max_seconds, limit=limit,
                               kinds=[kind] if kind else None)
    return DrainResult(None, summary.seconds, summary.stopped,
                       {k: asdict(v) for k, v in summary.kinds.items()}, summary.sweeps, retried)
