"""The concepts drain under retraction, deletion and being killed mid-batch."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from marm import config
from marm import drain as drain_engine
from marm.concepts.drain import HANDLER
from marm.ops.memory import write_memory
from marm.store import memories, outbox
from marm.store.concept_graph import Graph

pytestmark = pytest.mark.slow

SUBJECTS = [
    "indexer",
    "exporter",
    "scheduler",
    "uploader",
    "billing worker",
    "search service",
    "session cache",
    "auth gateway",
    "report builder",
    "mail sender",
]
OBJECTS = [
    "task queue",
    "ledger table",
    "config loader",
    "retry policy",
    "event bus",
    "metrics agent",
    "lock manager",
    "blob store",
    "feature flag",
    "rate limiter",
]


def _notes(n: int) -> list[str]:
    out = []
    for i in range(n):
        s, o = SUBJECTS[i % 10], OBJECTS[(i * 7 + i // 10) % 10]
        out.append(
            f"Note {i}: the {s} depends on the {o} and uses module_{i % 37}.py; "
            f"a stale {o} causes a timeout in the {s}."
        )
    return out


def _snapshot(home):
    graph = Graph.open(config.derived_path(home))
    try:
        return {m: graph.contribution(m) for m in graph.source_ids()}, graph.stats()
    finally:
        graph.close()


def test_retracted_and_deleted_memories_leave_at_the_next_drain(ctx):
    keep = write_memory(ctx, "The indexer depends on the task queue.").id
    retracted = write_memory(ctx, "The exporter depends on the task queue.").id
    deleted = write_memory(ctx, "The uploader depends on the task queue.").id
    superseded = write_memory(ctx, "The mailer depends on the task queue.").id
    drain_engine.run(ctx, kinds=["concepts"], sweeps=False)
    before, _ = _snapshot(ctx.home)
    assert set(before) == {keep, retracted, deleted, superseded}

    store = ctx.store()
    with store.write():
        memories.set_status(store, retracted, "retracted", reason="wrong", action="memory.retract")
        memories.set_status(
            store,
            superseded,
            "superseded",
            reason="newer",
            action="memory.supersede",
            superseded_by=keep,
        )
    memories.delete(store, deleted, reason="test")
    summary = drain_engine.run(ctx, kinds=["concepts"], sweeps=False)
    assert summary.kinds["concepts"].done == 3

    after, _ = _snapshot(ctx.home)
    assert set(after) == {keep}
    assert after[keep] == before[keep]
    graph = Graph.open(config.derived_path(ctx.home))
    try:
        keys = {e.key for e in graph.all_entities(None, True)}
    finally:
        graph.close()
    assert {"indexer", "task queue"} <= keys
    assert not {"exporter", "uploader", "mailer"} & keys


def test_drain_switched_off_by_auto_concepts(ctx):
    write_memory(ctx, "The indexer depends on the task queue.")
    ctx.env = {**ctx.env, "MARM_AUTO_CONCEPTS": "off"}
    summary = drain_engine.run(ctx, kinds=["concepts"], sweeps=False)
    assert summary.kinds["concepts"].skipped == "switched off"
    assert summary.kinds["concepts"].left == 1
    ctx.env = {**ctx.env, "MARM_AUTO_CONCEPTS": "on"}
    assert drain_engine.run(ctx, kinds=["concepts"], sweeps=False).kinds["concepts"].done == 1


def test_a_batch_processed_but_never_completed_is_redone_without_doubling(ctx):
    ids = [write_memory(ctx, t).id for t in _notes(40)]
    store = ctx.store()
    tasks = outbox.claim(store, "concepts", 25, lease_seconds=-1)  # lease already expired
    assert HANDLER.process(ctx, tasks) == {}
    partial, _ = _snapshot(ctx.home)
    assert len(partial) == 25  # "killed" before the tasks were deleted

    summary = drain_engine.run(ctx, kinds=["concepts"], sweeps=False)
    assert summary.kinds["concepts"].done == 40 and outbox.pending(store, "concepts") == 0
    resumed, stats = _snapshot(ctx.home)
    assert set(resumed) == set(ids)
    for memory_id in ids[:25]:
        assert resumed[memory_id] == partial[memory_id]


def test_a_drain_killed_mid_batch_resumes_without_loss_or_doubling(ctx, tmp_path):
    ids = [write_memory(ctx, t).id for t in _notes(5 * 64)]  # five of the drain's batches
    ctx.close()
    derived = config.derived_path(ctx.home)
    proc = subprocess.Popen(
        [sys.executable, "-m", "marm", "drain", "--kind", "concepts", "--json"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    done = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if derived.exists():
            try:
                with sqlite3.connect(derived, timeout=1) as conn:
                    done = conn.execute("SELECT count(*) FROM concept_sources").fetchone()[0]
            except sqlite3.OperationalError:
                done = 0
            if done:
                break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 0 < done < len(ids), "the drain should have been killed part-way"

    store = ctx.store()
    left = outbox.pending(store, "concepts")
    assert 0 < left <= len(ids)  # all of them when killed before the first batch completed
    # The killed drain's task leases would expire after five minutes; let that time pass.
    with store.write() as conn:
        conn.execute("UPDATE outbox SET lease_until = NULL WHERE kind = 'concepts'")
    summary = drain_engine.run(ctx, kinds=["concepts"], sweeps=False)
    assert summary.kinds["concepts"].failed == 0 and outbox.pending(store, "concepts") == 0
    resumed, stats = _snapshot(ctx.home)
    assert set(resumed) == set(ids)

    from marm.ops.concepts import build

    build(ctx, all=True)  # from scratch, for comparison
    rebuilt, rebuilt_stats = _snapshot(ctx.home)
    assert resumed == rebuilt
    assert (stats.entities, stats.edges, stats.memories) == (
        rebuilt_stats.entities,
        rebuilt_stats.edges,
        rebuilt_stats.memories,
    )
