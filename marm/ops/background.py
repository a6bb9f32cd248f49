"""Background work: the ``drain`` op, and what a long-lived server does between calls.

``marm mcp`` stays up for the whole agent session, so it is the natural place to embed:
``BackgroundDrain`` runs a bounded drain of ``embed`` tasks in a thread once the client
has been quiet for a moment, and ``DatabaseAnchor`` keeps the database open so that a
call closing its connection never checkpoints the WAL. The policy lives here, below
the face: the MCP server only says when a call starts and when a write succeeded.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

from marm import config
from marm import drain as drain_engine
from marm.context import Ctx
from marm.errors import BadInput, Busy, MarmError
from marm.ops.registry import Param, op
from marm.store import Store, code_repos, outbox

log = logging.getLogger("marm.mcp")


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

    Examples:
      marm drain
      marm drain --max-seconds 60 --kind embed
      marm drain --retry-parked
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


def hand_off(ctx: Ctx) -> int | None:
    """Start a detached drain when anything waits (queued tasks, dirty repositories).

    Returns its pid, or None when there was nothing to do."""
    store = ctx.store()
    if any(v["pending"] for v in outbox.counts(store).values()) or code_repos.dirty(store):
        return drain_engine.detach(ctx)
    return None


# -- upkeep of a long-lived server (``marm mcp``) -----------------------------------

#: Upper bound of one background embedding drain.
DRAIN_SECONDS = 30.0
#: Quiet time after the last call before the background drain starts ...
IDLE_SECONDS = 0.75
#: ... but never later than this after the first write that asked for it.
MAX_DELAY_SECONDS = 5.0


class BackgroundDrain:
    """Embeds new memories in a background thread, once the client has gone quiet.

    ``kick()`` after a write asks for a drain; ``touch()`` on every call pushes it back, so
    the drain runs ``idle`` seconds after the last call (and at the latest ``max_delay``
    seconds after the first write that asked for it). That keeps it out of the way of
    a recall made right after a write: such a recall embeds the few pending memories
    itself, whereas a drain that had just claimed them would leave the new memory without
    a vector for that recall. One drain thread at a time; a write during a drain asks for
    another round. Another process holding the drain lease (``Busy``) is not an error:
    that drain embeds them.
    """

    def __init__(self, cwd: Path, env: Mapping[str, str], idle: float = IDLE_SECONDS,
                 max_delay: float = MAX_DELAY_SECONDS, max_seconds: float = DRAIN_SECONDS) -> None:
        self.cwd, self.env, self.max_seconds = cwd, env, max_seconds
        self.idle, self.max_delay = idle, max_delay
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._wanted = False
        self._due = self._latest = 0.0
        self._unavailable = False

    def kick(self) -> None:
        with self._lock:
            if self._unavailable:
                return
            now = time.monotonic()
            if not self._wanted:
                self._wanted, self._latest = True, now + self.max_delay
            self._due = min(now + self.idle, self._latest)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="marm-embed-drain",
                                                daemon=True)
                self._thread.start()

    def touch(self) -> None:
        with self._lock:
            if self._wanted:
                self._due = min(max(self._due, time.monotonic() + self.idle), self._latest)

    def finish(self, timeout: float, run_pending: bool = True) -> None:
        """Run a wanted drain now (or drop it), and wait up to ``timeout`` for the thread."""
        with self._lock:
            if run_pending:
                self._due = self._latest = 0.0  # a late touch() cannot push it back again
            else:
                self._wanted = False
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._wanted:
                    self._thread = None
                    return
                wait = self._due - time.monotonic()
                if wait <= 0:
                    self._wanted = False
            if wait > 0:
                time.sleep(min(wait, 0.1))  # short naps: ``finish`` may bring the drain forward
                continue
            if drain_engine.load_handler("embed") is None:  # embeddings are not part of this build
                with self._lock:
                    self._unavailable, self._thread = True, None
                return
            ctx = Ctx(source="mcp", cwd=self.cwd, env=dict(self.env))
            try:
                drain_engine.run(ctx, kinds=["embed"], max_seconds=self.max_seconds, sweeps=False)
            except Busy:
                pass  # another process is draining; it embeds these too
            except Exception:  # noqa: BLE001 - background work must not take the server down
                log.exception("background embedding drain failed")
            finally:
                ctx.close()


class DatabaseAnchor:
    """One connection a long-lived server keeps open for its whole life.

    Each call opens and closes its own connection (calls run on worker threads), and
    closing the last connection to a WAL database checkpoints it, an fsync of tens of
    milliseconds that would otherwise land on every write. A failure to open is left
    to the call's own open, which reports it.
    """

    def __init__(self) -> None:
        self._store: Store | None = None
        self._lock = threading.Lock()

    def hold(self, ctx: Ctx) -> None:
        if self._store is not None:
            return
        with self._lock:
            if self._store is None:
                try:
                    self._store = Store.open(config.database_path(ctx.home))
                except MarmError:
                    pass

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
