"""Sync ops: remotes, sharing a project, and syncing with a PostgreSQL server or a
directory (see ``marm.sync`` for the protocol).

The local store stays the working copy: every other command is local and works
offline; ``marm sync`` pushes this store's events of the shared projects, then pulls
and applies the other stores' events. Nothing syncs until a project is shared.
CLI-only: an agent has no business adding remotes or moving a project's memory off the
machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from marm.errors import BadInput, NotFound
from marm.context import Ctx
from marm.ops.memory import ProjectOpt
from marm.ops.registry import Param, op
from marm.ops.results import Done
from marm.scope import display
from marm.store import perms, sync_state

RemoteName = Annotated[str, Param("the remote's name, e.g. team", argument=True)]


def _engine():  # noqa: ANN202 - the module itself
    from marm.sync import engine  # keeps `marm remote list` as light as `marm log`

    return engine


def _batch(ctx: Ctx) -> int:
    """The ``sync.batch`` setting as a count (one out of range is refused by name)."""
    return int(ctx.number("sync.batch"))


@op("remote", "add")
def remote_add(
    ctx: Ctx,
    name: RemoteName,
    url: Annotated[str, Param("postgresql://USER@HOST/DB (no password: it comes from PGPASSWORD, "
                              "~/.pgpass or a service file) or dir:PATH", argument=True)],
) -> Done:
    """Add a remote to sync with: a PostgreSQL URL or a directory (dir:PATH).

    A URL with a password is refused: marm never stores a credential. A dir: path is
    resolved against the current directory.

    Examples:
      marm remote add team postgresql://alice@db.internal/marm
      marm remote add team dir:../team-memory
    """
    url = _engine().check_url(url.strip())
    if url.startswith("dir:"):
        url = "dir:" + str((ctx.cwd / Path(url[4:]).expanduser()).resolve())
    if not name.strip() or any(c.isspace() for c in name):
        raise BadInput("a remote name is one word")
    store = ctx.store()
    with store.write():
        if sync_state.remote(store, name) is not None:
            raise BadInput(f"a remote named {name!r} exists; `marm remote remove {name}` first")
        sync_state.add_remote(store, name, url)
    return Done(True, f"remote {name} -> {url}", {"name": name, "url": url})


@dataclass(frozen=True, slots=True)
class RemoteList:
    remotes: list[dict[str, object]]
    shared: dict[str, str] = field(default_factory=dict)   # local project -> shared name

    def text(self) -> str:
        lines = [f"{r['name']:<12} {r['url']}" for r in self.remotes] or ["no remotes (`marm remote add NAME URL`)"]
        lines += [f"shared     {display(p)} as {n}" for p, n in self.shared.items()] or ["no project is shared"]
        return "\n".join(lines)


@op("remote", "list", read_only=True, idempotent=True)
def remote_list(ctx: Ctx) -> RemoteList:
    """List the remotes and the shared projects.

    Examples:
      marm remote list
    """
    store = ctx.store()
    rows: list[dict[str, object]] = [{"name": r.name, "url": r.url, "last_push_at": r.last_push_at, "last_pull_at": r.last_pull_at}
            for r in sync_state.remotes(store)]
    return RemoteList(rows, sync_state.shares(store))


@op("remote", "remove", destructive=True, idempotent=True)
def remote_remove(ctx: Ctx, name: RemoteName) -> Done:
    """Remove a remote (what was synced stays here and there).

    Examples:
      marm remote remove team
    """
    store = ctx.store()
    with store.write():
        if not sync_state.remove_remote(store, name):
            raise NotFound(f"no remote named {name!r}")
    return Done(True, f"remote {name} removed", {"name": name})


@op("share", idempotent=True)
def share(
    ctx: Ctx,
    project: ProjectOpt = None,
    name: Annotated[str | None, Param("its name on the remotes, the same in every checkout "
                                      "(default: the repository's folder name)")] = None,
    stop: Annotated[bool, Param("stop sharing it (what was pushed stays on the remotes)")] = False,
) -> Done:
    """Share a project's memory with the remotes: nothing syncs until a project is shared.

    Checkouts of one repository at different paths meet under one name (--name,
    default the folder name). Memories of projects that are not shared, and global
    ones, never leave this machine.

    Examples:
      marm share --name api
      marm share --stop
    """
    key = ctx.project(project)
    if key is None:
        raise BadInput("not in a project: run it in a git repository or give --project")
    store = ctx.store()
    with store.write():
        if stop:
            changed = sync_state.unshare(store, key)
            return Done(changed, f"{display(key)} is no longer shared" if changed else f"{display(key)} was not shared")
        shared_name = (name or os.path.basename(key.rstrip("/\\")) or key).strip()
        current = sync_state.shares(store)
        if current.get(key) == shared_name:
            return Done(False, f"{display(key)} is already shared as {shared_name}")
        if key in current or shared_name in current.values():
            raise BadInput(f"{display(key)} or the name {shared_name!r} is already shared; "
                           "`marm share --stop` it first")
        sync_state.share(store, key, shared_name)
        sync_state.rewind(store)  # what was written before sharing travels at the next sync
    return Done(True, f"{display(key)} is shared as {shared_name}; `marm sync` sends it",
                {"project": key, "name": shared_name})


@dataclass(frozen=True, slots=True)
class SyncResult:
    remotes: list[dict[str, object]]
    detached: bool = False

    def text(self) -> str:
        if self.detached:
            return "sync started in the background"
        if not self.remotes:
            return "no remotes (`marm remote add NAME URL`)"
        lines = []
        for r in self.remotes:
            applied = r.get("applied")
            detail = ", ".join(f"{n} {k}" for k, n in sorted(applied.items())) if isinstance(applied, dict) else ""
            lines.append(f"{r['remote']}: pushed {r['pushed']} ({r['new_on_remote']} new there), "
                         f"pulled {r['pulled']}" + (f" ({detail})" if detail else "")
                         + f" in {r['seconds']:.2f}s")
        return "\n".join(lines)


def start_detached(ctx: Ctx, name: str | None = None) -> int:
    """Start ``marm sync`` in a detached process (session end, cron) and return its pid;
    its output goes to ``logs/sync.log`` in the marm home."""
    log_dir = ctx.home / "logs"
    log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(perms.open_append(log_dir / "sync.log"), "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "marm", "sync", *([name] if name else [])], cwd=str(ctx.cwd),
            env={**os.environ, **dict(ctx.env)}, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            start_new_session=True, close_fds=True,
        )
    return proc.pid


def wants_sync(ctx: Ctx) -> bool:
    """Whether a session end should start a sync: a remote and a shared project exist."""
    store = ctx.store()
    return bool(sync_state.remotes(store)) and bool(sync_state.shares(store))


@op("sync")
def sync(
    ctx: Ctx,
    name: Annotated[str | None, Param("the remote (default: every remote)", argument=True)] = None,
    detach: Annotated[bool, Param("run in the background and return at once (session end, cron)")] = False,
) -> SyncResult:
    """Push this store's events of the shared projects, then pull the others'.

    Pulled memories, verdicts (doubt, retract, supersede, restore), forgets and concept
    verdicts are applied like local ones; concurrent verdicts on one memory: the last
    one given wins. Vectors and graphs are rebuilt here by the drain.

    Examples:
      marm sync
      marm sync team --detach
    """
    store = ctx.store()
    names = [name] if name else [r.name for r in sync_state.remotes(store)]
    if name and sync_state.remote(store, name) is None:
        raise NotFound(f"no remote named {name!r}; `marm remote add {name} URL` first")
    if detach:
        start_detached(ctx, name)
        return SyncResult([], detached=True)
    engine = _engine()
    batch = _batch(ctx)
    out = []
    for n in names:
        report = engine.sync(store, n, batch=batch)
        out.append({"remote": report.remote, "pushed": report.pushed, "new_on_remote": report.new_on_remote,
                    "pulled": report.pulled, "applied": report.applied, "seconds": round(report.seconds, 4)})
    return SyncResult(out)
