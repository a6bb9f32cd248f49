"""``marm hook EVENT --agent NAME``: the process an agent starts for each hook.

It fails open: whatever goes wrong (bad or empty input, no usable ``cwd``, a data
directory that cannot be written, a bug, running out of time) it exits 0 with one line
on stderr and nothing on stdout, so the agent carries on as if marm were not there.
The CLI hands ``marm hook ...`` here before building its command tree, so a hook pays
for Python, SQLite and its own handler, not for the whole CLI.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from marm.context import Ctx
from marm.errors import BadInput, MarmError
from marm.hooks import adapters
from marm.hooks.event import AGENTS, EVENTS
from marm.hooks.handlers import HANDLERS
from marm.ops import hooklog
from marm.ops.projects import activity

#: Seconds an event may take before it gives up (and fails open): a safety net under
#: the timeout ``marm init`` configures in the agent (``install.TIMEOUT``), generous
#: enough that parallel hooks on a busy machine still finish their write. SessionEnd is
#: tight: Claude Code gives all SessionEnd hooks ~1.5 s together.
BUDGET = {"session-start": 5.0, "prompt": 5.0, "post-tool": 3.0, "stop": 8.0,
          "pre-compact": 10.0, "session-end": 1.2}


class OutOfTime(Exception):
    pass


def respond(event: str, agent: str, raw: str, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The agent's answer to one payload (None: print nothing). Raises on bad input."""
    if event not in EVENTS:
        raise BadInput(f"unknown hook event {event!r}; use one of {', '.join(EVENTS)}")
    if agent not in AGENTS:
        raise BadInput(f"unknown agent {agent!r}; use one of {', '.join(AGENTS)}")
    ev = adapters.parse(agent, event, raw)
    if not ev.cwd or not Path(ev.cwd).is_dir():
        raise BadInput("the hook payload has no usable cwd")
    ctx = Ctx(source=f"hook:{event}", platform=agent, cwd=Path(ev.cwd), env=env)
    started = time.perf_counter()
    record: dict[str, Any] = {"event": event, "agent": agent, "session": ev.session_id, "active": False,
                              "chars": 0, "captured": 0}
    context = None
    try:
        # A hook waits for the write lock only as long as its budget allows.
        ctx.store().set_busy_timeout(BUDGET[event])
        here = activity(ctx)
        record["project"] = here.project
        if not here.active:  # exit at once: nothing stored, nothing injected, no model
            if env.get("MARM_DEBUG"):
                print(f"marm hook: {event}: inactive: {here.reason}", file=sys.stderr)
        else:
            record["active"] = True
            mark = hooklog.memory_mark(ctx)
            context = HANDLERS[event](ctx, ev)
            record["chars"] = len(context or "")
            record["captured"], record["newest"] = hooklog.captured_since(ctx, mark)
    except BaseException:
        record["error"] = True
        raise
    finally:
        ctx.close()
        record["ms"] = round((time.perf_counter() - started) * 1000, 1)
        _log(ctx, record)
    return adapters.render(agent, event, context)


def _log(ctx: Ctx, record: dict[str, Any]) -> None:
    """One line in the hook-run log; a log that cannot be written never fails the hook."""
    try:
        record["db_bytes"] = hooklog.store_bytes(ctx.home)
        hooklog.append(ctx.home, record)
    except OSError:
        pass


def _arguments(argv: list[str]) -> tuple[str, str, str]:
    """(event, agent, payload) from the same arguments the ``hook`` op declares."""
    event, agent, payload, rest = None, "claude", "-", list(argv)
    while rest:
        word = rest.pop(0)
        if word in ("--agent", "-a", "--payload") and rest:
            value = rest.pop(0)
            agent, payload = (value, payload) if word != "--payload" else (agent, value)
        elif word.startswith(("--agent=", "--payload=")):
            name, value = word.split("=", 1)
            agent, payload = (value, payload) if name == "--agent" else (agent, value)
        elif event is None and not word.startswith("-"):
            event = word
        elif word not in ("--json", "--text"):
            raise BadInput(f"unexpected argument {word!r}")
    if event is None:
        raise BadInput("which event? marm hook EVENT --agent claude|codex|gemini")
    return event, agent, payload


def _out_of_time(signum: int, frame: Any) -> None:
    raise OutOfTime


def main(argv: list[str]) -> int:
    """Run one hook; always returns 0."""
    try:
        event, agent, payload = _arguments(argv)
        if hasattr(signal, "setitimer"):
            signal.signal(signal.SIGALRM, _out_of_time)
            signal.setitimer(signal.ITIMER_REAL, BUDGET.get(event, 2.0))
        raw = sys.stdin.buffer.read().decode("utf-8") if payload == "-" else payload
        output = respond(event, agent, raw, dict(os.environ))
        if hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, 0)
    except OutOfTime:
        return _fail("gave up: over the time budget")
    except MarmError as exc:
        return _fail(exc.message)
    except UnicodeDecodeError:
        return _fail("the hook payload is not UTF-8")
    except Exception as exc:  # noqa: BLE001 - a hook never blocks the agent
        return _fail(f"internal error: {type(exc).__name__}: {exc}")
    if output is not None:
        import orjson

        try:
            sys.stdout.buffer.write(orjson.dumps(output) + b"\n")
            sys.stdout.flush()
        except OSError:  # the agent stopped listening; nothing left to tell it
            pass
    return 0


def _fail(message: str) -> int:
    if os.environ.get("MARM_DEBUG"):
        import traceback

        traceback.print_exc()
    print(f"marm hook: {' '.join(message.split())}", file=sys.stderr)
    return 0
