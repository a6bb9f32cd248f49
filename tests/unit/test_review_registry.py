"""Every op that may change the store appends an event: this walks the whole registry.

Each op that is not ``read_only`` runs once on a populated store with the arguments in
``ARGS`` and must leave the events table longer than it found it. An op added later
without an entry here fails with a message saying what to add.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from marm.context import Ctx
from marm.ops import load
from marm.ops.memory import write_memory
from marm.ops.notebook import notebook_op
from marm.ops.review import doubt
from marm.ops.transfer import export
from marm.store import events
from tests.helpers import git_init


@dataclass(frozen=True)
class Seeds:
    """What the populated store holds, for building an op's arguments."""

    first: int          # an active memory
    second: int         # another active memory
    doubted: int        # a doubted memory
    export_file: Path   # an export of another store, with memories this one lacks
    cwd: Path           # where the ops run (outside any repository)


#: op name -> its arguments on the seeded store (the parameters it does not list keep
#: their defaults).
ARGS: dict[str, Callable[[Seeds], dict[str, Any]]] = {
    "log": lambda s: {"text": "DECISION: the walk writes one more memory"},
    "delete": lambda s: {"type": "memory", "target": str(s.first), "reason": "walk"},
    "notebook": lambda s: {"action": "add", "name": "walk-entry", "content": "be brief"},
    "session use": lambda s: {"name": "walk-session"},
    "config set": lambda s: {"key": "capture", "value": "off"},
    "doubt": lambda s: {"id": s.first, "reason": "walk"},
    "retract": lambda s: {"id": s.first, "reason": "walk"},
    "supersede": lambda s: {"old": s.first, "by": s.second},
    "restore": lambda s: {"id": s.doubted},
    "forget": lambda s: {"id": s.first},
    "import": lambda s: {"paths": [str(s.export_file)]},
    "hook": lambda s: {"event": "stop", "agent": "claude", "payload": json.dumps({
        "session_id": "walk", "cwd": str(s.cwd), "hook_event_name": "Stop",
        "last_assistant_message": "We decided to keep the build cache in a volume. Fixed the "
                                  "stale cache bug by keying entries on the lockfile hash."})},
    "init": lambda s: {"claude": True, "project": True},  # the scratch dir, never ~/.claude
    "concepts merge": lambda s: {"a": "build cache", "b": "cache of builds"},
    "concepts remove": lambda s: {"name": "misc", "reason": "walk"},
    "concepts dismiss": lambda s: {"a": "build cache", "b": "cache"},
    "embed": lambda s: {"reindex": True, "all_memories": True},
    "code index": lambda s: {"path": _repo(s.cwd)},
    "code forget": lambda s: {"path": _indexed(s.cwd)},
    "remote add": lambda s: {"name": "walk", "url": f"dir:{s.cwd / 'walk-remote'}"},
    "remote remove": lambda s: {"name": _remote(s.cwd)},
    "share": lambda s: {"project": "walk-project"},
    "sync": lambda s: {"name": _remote(s.cwd)},
    "backup": lambda s: {"file": str(s.cwd / "walk-backup.db")},
    "review": lambda s: {"action": "dismiss", "item": _queued(s)},
    "compact": lambda s: _old_episodes(s),
    "summarize": lambda s: {"action": "stage", "cluster": _old_cluster(s), "summary": "the walk took two steps",
                            "older_than": 1},
}


def _queued(s: Seeds) -> int:
    """A review item (a proposed duplicate of the two active memories)."""
    from marm.store import hygiene, memories

    queuer = Ctx(cwd=s.cwd, env=dict(os.environ))
    try:
        store = queuer.store()
        a, b = memories.get(store, s.first), memories.get(store, s.second)
        with store.write():
            item = hygiene.propose(store, "duplicate", a.project, b.id, a.id, a.content_hash, b.content_hash, {})
        return item.id
    finally:
        queuer.close()


def _old_episodes(s: Seeds) -> dict[str, Any]:
    """Two episodes of one session, recorded two days ago: `marm compact` folds them."""
    writer = Ctx(cwd=s.cwd, env=dict(os.environ))
    try:
        for n in (1, 2):
            write_memory(writer, f"Asked: walk step {n}?\nConcluded: The walk took step {n}.", kind="episode",
                         session="walk", recorded_at="2000-01-0%dT00:00:00.000000Z" % (n + 2))
    finally:
        writer.close()
    return {"older_than": 1}


def _old_cluster(s: Seeds) -> int:
    """The cluster `marm summarize` offers for the two old episodes (its first one's id)."""
    from marm.ops.summarize import summarize

    _old_episodes(s)
    lister = Ctx(cwd=s.cwd, env=dict(os.environ))
    try:
        return summarize(lister, older_than=1).clusters[0].id
    finally:
        lister.close()


def _remote(cwd: Path) -> str:
    """A dir: remote to remove or sync with."""
    from marm.ops.sync import remote_add

    adder = Ctx(cwd=cwd, env=dict(os.environ))
    try:
        remote_add(adder, "walk", f"dir:{cwd / 'walk-remote'}")
    finally:
        adder.close()
    return "walk"


def _repo(cwd: Path) -> str:
    """A small git repository to index."""
    repo = git_init(cwd / "repo")
    (repo / "walk.py").write_text("def walk():\n    return 1\n")
    return str(repo)


def _indexed(cwd: Path) -> str:
    """Index a repository first, so that there is a code graph to forget."""
    from marm.ops.code import code_index

    repo = _repo(cwd)
    indexer = Ctx(cwd=cwd, env=dict(os.environ))
    try:
        code_index(indexer, path=repo)
    finally:
        indexer.close()
    return repo

#: Ops that are not read_only yet append no event, each with the reason.
EXEMPT: dict[str, str] = {
    "drain": "works through tasks already queued (and recorded) by the writes that queued "
             "them; it changes only outbox bookkeeping, leases and derived data (vectors, graphs)",
    "mcp": "serves the other ops as tools; each of those records its own events",
    "view": "writes a page file outside the store, or serves a page whose actions are other "
            "ops (doubt, retract, ...), each recording its own events",
    "concepts build": "rebuilds the disposable derived graph from the store; the durable store "
                      "(memories, verdicts) is only read",
}

MUTATING = sorted(o.name for o in load().values() if not o.read_only)
WALKED = [name for name in MUTATING if name not in EXEMPT]


@pytest.fixture
def seeds(ctx: Ctx, tmp_path: Path) -> Seeds:
    first = write_memory(ctx, "the walk's first memory mentions the build cache").id
    second = write_memory(ctx, "the walk's second memory mentions the build cache too").id
    doubted = write_memory(ctx, "the walk's doubted memory").id
    doubt(ctx, doubted)
    write_memory(ctx, "2025-02-03-walk-a dated entry about the cache")
    notebook_op(ctx, "add", "style", "answer in short sentences")
    other = Ctx(cwd=ctx.cwd, env={**os.environ, "MARM_HOME": str(tmp_path / "other-home")})
    try:
        write_memory(other, "a memory only the other store has")
        path = tmp_path / "other.jsonl"
        path.write_text("".join(line + "\n" for line in export(other).document()))
    finally:
        other.close()
    return Seeds(first, second, doubted, path, ctx.cwd)


@pytest.mark.parametrize("name", WALKED)
def test_every_mutating_op_appends_an_event(name: str, ctx: Ctx, seeds: Seeds) -> None:
    registry = {o.name: o for o in load().values()}
    if name not in ARGS:
        pytest.fail(
            f"op `{name}` is not read_only, so it must append an event, but "
            f"{Path(__file__).name} has no arguments to run it with: add an entry for it to "
            f"ARGS (or to EXEMPT, with the reason it appends no event)"
        )
    store = ctx.store()
    before = events.count(store)
    registry[name].func(ctx, **ARGS[name](seeds))
    assert events.count(store) > before, f"op `{name}` changed the store without appending an event"


def test_the_tables_name_only_ops_that_exist_and_mutate() -> None:
    assert not (set(ARGS) | set(EXEMPT)) - set(MUTATING), "ARGS/EXEMPT name ops that are gone or read_only"
