"""``marm backup [FILE]`` and ``marm backup --restore FILE``: a whole-store copy, taken online.

Unlike ``marm export`` (JSON lines, merged back by ``import``), a backup is the database
itself, copied consistently by SQLite while other marm processes keep writing, and a
restore puts the store back exactly as it was then. CLI only: an agent has no business
replacing a store.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from marm import config
from marm.context import Ctx
from marm.errors import BadInput
from marm.ops.registry import Param, op
from marm.store import backup as store_backup
from marm.store.db import now


@dataclass(frozen=True, slots=True)
class BackupResult:
    action: str
    file: str
    memories: int
    schema: int
    previous: str | None = None

    def text(self) -> str:
        if self.action == "backup":
            return f"backed up {self.memories} memories (schema v{self.schema}) to {self.file}"
        return (f"restored {self.memories} memories (schema v{self.schema}) from {self.file}; the previous"
                f" store is kept at {self.previous}; `marm drain` rebuilds the derived state")


def _path(ctx: Ctx, file: str) -> Path:
    path = Path(file).expanduser()
    return path if path.is_absolute() else Path(ctx.cwd) / path


@op("backup", mcp=None, destructive=True)
def backup(
    ctx: Ctx,
    file: Annotated[str | None, Param("where to write it (default: backups/marm-TIME.db in the marm "
                                      "home); with --restore, the backup to restore", argument=True)] = None,
    restore: Annotated[bool, Param("put the store back as it was in FILE: verified first, the current "
                                   "store kept aside, the derived state queued for rebuild")] = False,
) -> BackupResult:
    """Copy the whole store to FILE, consistently, while other marm processes write (mode 0600).

    `marm backup --restore FILE` puts it back (`marm restore ID` is the review verb).

    Examples:
      marm backup
      marm backup /tmp/marm-copy.db
      marm backup --restore /tmp/marm-copy.db
    """
    if restore:
        if not file:
            raise BadInput("backup --restore needs the FILE to restore")
        checked, aside = store_backup.restore(ctx.store(), _path(ctx, file), config.derived_path(ctx.home))
        return BackupResult("restore", str(checked.path), checked.memories, checked.schema, str(aside))
    dest = _path(ctx, file) if file else ctx.home / "backups" / f"marm-{now()[:19].replace(':', '')}.db"
    checked = store_backup.backup(ctx.store(), dest)
    return BackupResult("backup", str(checked.path), checked.memories, checked.schema)
