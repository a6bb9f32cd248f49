"""Stores sharing a project converge, whatever the order of their syncs, over a real
PostgreSQL server and over a dir: remote: writes, doubts, retractions, supersessions,
restores, forgets and concept verdicts all travel."""

from __future__ import annotations

import pytest

from marm.errors import Refused
from marm.ops import review as review_ops
from marm.ops.memory import write_memory
from marm.store import concept_verdicts
from tests.sync.helpers import PROJECT

ORDERS = ["012", "210", "102"]
DEPLOY = "2026-03-02-deploy-blue green deploys behind the load balancer"


def _round(s, order: str) -> None:
    for ch in order:
        s.sync(int(ch))


@pytest.mark.parametrize("order", ORDERS)
def test_three_stores_converge_whatever_the_order(stores, order):
    s = stores(3)
    s.log(0, "DECISION: the API speaks JSON over HTTP/2")
    s.log(0, "NOTE: the staging database is reset nightly")
    s.log(1, "FIX: retry the flaky socket with backoff")
    s.log(1, DEPLOY)
    s.log(2, "DECISION: use PostgreSQL 15 for the team store")
    s.log(2, "DECISION: the API speaks JSON over HTTP/2")         # the same text twice: one memory
    _round(s, order)
    _round(s, order)
    assert s.state(0) == s.state(1) == s.state(2)
    assert len(s.state(0)["memories"]) == 5

    # Verdicts on memories written elsewhere.
    review_ops.doubt(s.ctxs[0], s.id_of(0, "FIX: retry the flaky socket with backoff"), "unsure")
    review_ops.retract(s.ctxs[1], s.id_of(1, "NOTE: the staging database is reset nightly"), "not true")
    old = s.id_of(2, DEPLOY)
    review_ops.supersede(s.ctxs[2], old, s.id_of(2, "DECISION: use PostgreSQL 15 for the team store"))
    concept_verdicts.add_alias(s.ctxs[0].store(), "postgres", "postgresql")
    concept_verdicts.suppress(s.ctxs[1].store(), "thing", "noise")
    _round(s, order[::-1])
    _round(s, order)
    states = [s.state(i) for i in range(3)]
    assert states[0] == states[1] == states[2]
    status = {text: st for text, st, *_ in states[0]["memories"]}
    assert status["FIX: retry the flaky socket with backoff"] == "doubted"
    assert status["NOTE: the staging database is reset nightly"] == "retracted"
    assert status[DEPLOY] == "superseded"
    assert status["DECISION: use PostgreSQL 15 for the team store"] == "active"
    superseded = [m for m in states[0]["memories"] if m[0] == DEPLOY][0]
    assert superseded[4] == "DECISION: use PostgreSQL 15 for the team store"
    assert states[0]["aliases"] == [("postgres", "postgresql")] and states[0]["suppressed"] == [("thing",)]
    assert len(states[0]["tombstones"]) == 1

    # Restore travels too, and the last verdict wins everywhere.
    review_ops.restore(s.ctxs[2], s.id_of(2, "NOTE: the staging database is reset nightly"))
    _round(s, order)
    _round(s, order)
    states = [s.state(i) for i in range(3)]
    assert states[0] == states[1] == states[2]
    assert {t: st for t, st, *_ in states[0]["memories"]}["NOTE: the staging database is reset nightly"] == "active"
    assert states[0]["tombstones"] == []


def test_two_stores_converge_and_a_second_sync_moves_nothing(stores):
    s = stores(2)
    for i in range(20):
        s.log(i % 2, f"NOTE: fact number {i} about the build")
    s.sync(1)
    s.sync(0)
    s.sync(1)
    assert s.state(0) == s.state(1) and len(s.state(0)["memories"]) == 20
    assert s.recorded_times(0) == s.recorded_times(1)     # ids differ, times travel as they were
    # Vectors and graphs do not travel: each pulled memory is queued here like a local write.
    from marm.store import outbox

    for i in (0, 1):
        queued = outbox.counts(s.ctxs[i].store())
        assert queued["embed"]["pending"] == 20 and queued["concepts"]["pending"] == 20, queued
        assert s.ctxs[i].store().conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0] == 0
    again = [s.sync(0), s.sync(1)]
    assert all(r["pushed"] == 0 and r["pulled"] == 0 for r in again), again


@pytest.mark.parametrize("first", [0, 1])
def test_concurrent_verdicts_on_one_memory_the_last_given_wins(stores, first):
    """The rule of marm.sync.apply: the verdict with the latest (time, origin, seq) wins,
    whichever store syncs first."""
    s = stores(2)
    s.log(0, "DECISION: cache the build artefacts for a week")
    s.sync(0)
    s.sync(1)
    review_ops.retract(s.ctxs[0], s.id_of(0, "DECISION: cache the build artefacts for a week"), "no")
    review_ops.doubt(s.ctxs[1], s.id_of(1, "DECISION: cache the build artefacts for a week"), "maybe")  # later
    other = 1 - first
    s.sync(first)
    s.sync(other)
    s.sync(first)
    states = [s.state(0), s.state(1)]
    assert states[0] == states[1]
    assert states[0]["memories"][0][1] == "doubted"
    assert states[0]["tombstones"] == []   # the retraction lost: its tombstone was lifted


def test_a_retraction_on_one_store_refuses_the_text_on_another(stores):
    s = stores(2)
    text = "NOTE: the old billing endpoint still answers"
    s.log(0, "NOTE: a kept fact, so the store is not empty")
    s.log(0, text)
    s.sync(0)
    s.sync(1)
    review_ops.retract(s.ctxs[1], s.id_of(1, text), "wrong")
    s.sync(1)
    s.sync(0)
    with pytest.raises(Refused):
        write_memory(s.ctxs[0], text)
    assert write_memory(s.ctxs[0], "NOTE: another new fact").created     # other writes still work
    assert {t: st for t, st, *_ in s.state(0)["memories"]}[text] == "retracted"


def test_an_unshared_project_stays_out_until_shared_then_travels(stores):
    s = stores(2)
    write_memory(s.ctxs[0], "NOTE: the side project uses Rust", project="side")
    s.log(0, "NOTE: team fact")
    s.sync(0)
    s.sync(1)
    assert [m[0] for m in s.state(1)["memories"]] == ["NOTE: team fact"]
    from marm.ops import sync as sync_ops
    from marm.store import memories
    from marm.store.memories import Filter

    sync_ops.share(s.ctxs[0], project="side")
    sync_ops.share(s.ctxs[1], project="side")
    s.sync(0)
    s.sync(1)
    got = memories.recent(s.ctxs[1].store(), Filter(project="side"), limit=10)
    assert [m.content for m in got] == ["NOTE: the side project uses Rust"]
    assert PROJECT not in {m.project for m in got}


@pytest.mark.parametrize("first", [0, 1])
def test_concept_merges_that_do_not_commute_converge(stores, first):
    """merge(a -> b) on one store and merge(b -> c) on another give different tables in
    the two arrival orders; the fold in (time, origin, seq) order makes them equal."""
    s = stores(2)
    s.log(0, "NOTE: something to share")
    concept_verdicts.add_alias(s.ctxs[0].store(), "pg", "postgres")        # earlier
    concept_verdicts.add_alias(s.ctxs[1].store(), "postgres", "postgresql")  # later
    concept_verdicts.dismiss(s.ctxs[1].store(), "redis", "valkey")
    concept_verdicts.suppress(s.ctxs[0].store(), "stuff", None)
    s.sync(first)
    s.sync(1 - first)
    s.sync(first)
    a, b = s.state(0), s.state(1)
    assert a == b
    # In time order: pg -> postgres, then postgres -> postgresql (pg follows the chain).
    assert a["aliases"] == [("pg", "postgres"), ("postgres", "postgresql")]
    assert a["dismissed"] == [("redis", "valkey")] and a["suppressed"] == [("stuff",)]
