"""The hook-run log: one small JSON line per ``marm hook`` run, so what marm costs is
visible (``marm stats``) instead of guessed.

It is a plain file in MARM_HOME, not the store: an inactive directory's hook writes no
store row, and a log line must never wait for the database's write lock. Bounded: when
it passes ``MAX_BYTES`` it becomes ``hooks.log.1`` (replacing the previous one), so the
two never hold more than twice that. Mode 0600: project names and session ids are the
user's business. Appends of one short line with ``O_APPEND`` do not interleave.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from marm import config
from marm.context import Ctx
from marm.store import memories
from marm.store.db import now

NAME = "hooks.log"
#: Size at which the log is rotated (about 1,500 records of ~170 bytes).
MAX_BYTES = 256 * 1024


def log_path(home: Path) -> Path:
    return home / NAME


def memory_mark(ctx: Ctx) -> int:
    """The newest memory id before a handler runs."""
    return memories.newest_id(ctx.store())


def captured_since(ctx: Ctx, mark: int) -> tuple[int, int]:
    """(memories this hook's source wrote since ``mark``, the newest id now)."""
    store = ctx.store()
    return memories.added_since(store, mark, store.actor.source), memories.newest_id(store)


def store_bytes(home: Path) -> int:
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.stat(f"{config.database_path(home)}{suffix}").st_size
        except OSError:
            pass
    return total


def append(home: Path, record: dict[str, Any]) -> None:
    """Add one record (``at`` is set here); rotate first when the log is full."""
    path = log_path(home)
    line = json.dumps({"at": now(), **record},
                      ensure_ascii=False, separators=(",", ":")) + "\n"
    home.mkdir(parents=True, exist_ok=True)
    try:
        if path.stat().st_size + len(line) > MAX_BYTES:
            os.replace(path, path.with_name(NAME + ".1"))
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def read(home: Path) -> list[dict[str, Any]]:
    """Every record still kept, oldest first (a torn or foreign line is skipped)."""
    out: list[dict[str, Any]] = []
    for path in (log_path(home).with_name(NAME + ".1"), log_path(home)):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "event" in record and "at" in record:
                out.append(record)
    return out
