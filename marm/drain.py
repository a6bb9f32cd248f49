"""The drain: works through the durable outbox under the ``drain`` lease.

Each task kind has a handler in its own module (``HANDLER_MODULES``), imported only
when a drain runs, so the modules may import models and parsers at the top. A handler
processes a batch and says, per task, whether it failed; the drain deletes finished
tasks and records failures (a task is parked after three). Handlers must be
idempotent: a drain killed between a handler's write and the task's deletion runs the
task again, and that must leave the same result, not a second one.

Sweeps (``SWEEP_MODULES``) are periodic jobs that are not outbox tasks, such as
re-indexing repositories that hooks marked dirty; they run after the tasks, in the
time that is left, each under a lease of its own if it needs one.

Upkeep of the store, also under the lease: first, vector files that lost committed
rows are dropped and their memories queued again (``vectors.repair``); last, once the
outbox is empty, files with many dead rows are compacted and the database's free
pages reclaimed (``space.reclaim``).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from marm.context import Ctx
from marm.store import derived, leases, outbox, perms, space, vectors
from marm.store.records import Task

#: Outbox task kind -> module exposing ``HANDLER: Handler``.
HANDLER_MODULES: dict[str, str] = {
    "embed": "marm.embed.drain",
    "concepts": "marm.concepts.drain",
}
#: Modules exposing ``sweep(ctx, deadline) -> dict`` (a summary for the drain's result).
SWEEP_MODULES: tuple[str, ...] = ("marm.code.drain", "marm.hygiene.drain")


@dataclass(frozen=True)
class Handler:
    kind: str
    batch: int
    #: Process a batch; return ``{task.id: error message}`` for the tasks that failed.
    process: Callable[[Ctx, list[Task]], dict[int, str]]
    #: Whether this kind should run now (a runtime switch such as ``auto_concepts``).
    enabled: Callable[[Ctx], bool] = lambda ctx: True


@dataclass
class KindSummary:
    done: int = 0
    failed: int = 0
    parked: int = 0
    left: int = 0
    skipped: str | None = None


@dataclass
class DrainSummary:
    seconds: float = 0.0
    kinds: dict[str, KindSummary] = field(default_factory=dict)
    sweeps: dict[str, dict[str, Any]] = field(default_factory=dict)
    stopped: str = "empty"     # empty | time | limit


def load_handler(kind: str) -> Handler | None:
    module = HANDLER_MODULES.get(kind)
    if module is None:
        return None
    try:
        return importlib.import_module(module).HANDLER
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return None  # that capability is not part of this build
        raise


def run(
    ctx: Ctx,
    *,
    max_seconds: float = 300,
    limit: int | None = None,
    kinds: list[str] | None = None,
    sweeps: bool = True,
) -> DrainSummary:
    """Drain under the lease; raises ``Busy`` at once if another drain holds it."""
    store = ctx.store()
    started = time.monotonic()
    deadline = started + max_seconds
    summary = DrainSummary()
    budget = limit if limit is not None else 10**12
    with leases.hold(store, ctx.home, "drain", holder=f"marm drain ({ctx.source})") as lease:
        outbox.release_orphans(store, kinds or list(HANDLER_MODULES))  # a killed drain's claims
        vectors.repair(store, ctx.home)  # a vector file that lost rows: its memories are queued again
        for kind in kinds or list(HANDLER_MODULES):
            derived.requeue_after_move(store, ctx.home)  # a derived.db moved aside: rebuild it
            ks = summary.kinds.setdefault(kind, KindSummary())
            handler = load_handler(kind)
            if handler is None:
                ks.skipped = "not available in this build"
            elif not handler.enabled(ctx):
                ks.skipped = "switched off"
            else:
                budget = _drain_kind(ctx, handler, ks, deadline, budget, lease)
                if time.monotonic() >= deadline:
                    summary.stopped = "time"
                elif budget <= 0:
                    summary.stopped = "limit"
            ks.left = outbox.pending(store, kind)
        if sweeps and summary.stopped == "empty":
            for module in SWEEP_MODULES:
                try:
                    sweep = importlib.import_module(module).sweep
                except ModuleNotFoundError:
                    continue
                summary.sweeps[module.rsplit(".", 2)[-2]] = sweep(ctx, deadline)
        if summary.stopped == "empty":
            vectors.compact(store, ctx.home)
            space.reclaim(store)
    summary.seconds = round(time.monotonic() - started, 3)
    return summary


def _drain_kind(ctx: Ctx, handler: Handler, ks: KindSummary, deadline: float, budget: int,
                lease: leases.Lease) -> int:
    store = ctx.store()
    total = outbox.pending(store, handler.kind)
    with ctx.progress(total, f"{handler.kind}") as bar:
        while budget > 0 and time.monotonic() < deadline:
            tasks = outbox.claim(store, handler.kind, min(handler.batch, budget))
            if not tasks:
                break
            try:
                errors = handler.process(ctx, tasks)
            except Exception as exc:  # noqa: BLE001 - a failing batch is recorded, not fatal
                errors = {t.id: f"{type(exc).__name__}: {exc}" for t in tasks}
            finished = [t for t in tasks if t.id not in errors]
            with store.write():
                outbox.complete(store, finished)
            for t in tasks:
                if t.id in errors:
                    ks.failed += 1
                    ks.parked += outbox.fail(store, t, errors[t.id])
            ks.done += len(finished)
            budget -= len(tasks)
            bar.advance(len(tasks))
            lease.heartbeat(kind=handler.kind, done=ks.done, failed=ks.failed, total=total)
    return budget


def detach(ctx: Ctx, max_seconds: float = 300) -> int:
    """Start ``marm drain`` in a detached process and return its pid at once."""
    import subprocess

    log_dir = ctx.home / "logs"
    log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(perms.open_append(log_dir / "drain.log"), "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "marm", "drain", "--json", "--max-seconds", str(max_seconds)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=str(ctx.cwd),
            env={**os.environ, **dict(ctx.env)}, start_new_session=True, close_fds=True,
        )
    return proc.pid
