"""Finding 6 of issue 15: a damaged derived.db is moved aside and rebuilt (it is
documented as disposable) instead of parking every task; doctor says what happened. The
CLI runs in this process (``invoke_marm``): the model and the pipeline load once."""

from __future__ import annotations

from tests.helpers import invoke_marm


def test_a_damaged_derived_database_is_moved_aside_and_rebuilt(marm_home):
    for text in ("DECISION: Kubernetes runs the billing jobs", "FIX: Kubernetes probes time out on cold start"):
        assert invoke_marm("log", text).code == 0
    assert invoke_marm("drain").code == 0
    assert "Kubernetes" in invoke_marm("concepts", "recall", "Kubernetes").out
    derived = marm_home / "derived.db"
    damaged = b"this is not a database any more" * 200
    derived.write_bytes(damaged)
    for suffix in ("-wal", "-shm"):
        (marm_home / f"derived.db{suffix}").unlink(missing_ok=True)
    assert invoke_marm("log", "NOTE: Kubernetes upgrade planned").code == 0

    first = invoke_marm("drain")
    assert first.code == 0, first.err
    second = invoke_marm("drain")  # the rebuild the move queued
    assert second.code == 0, second.err
    aside = [p for p in marm_home.iterdir() if p.name.startswith("derived.db.aside-")]
    assert len(aside) == 1 and aside[0].read_bytes() == damaged
    recall = invoke_marm("concepts", "recall", "Kubernetes").json()
    assert recall["entities"] and len(recall["memories"]) == 3, recall
    checks = [c for c in invoke_marm("doctor").json()["checks"] if c["name"] == "derived database"]
    assert len(checks) == 1 and "moved aside" in checks[0]["detail"] and "not a marm SQLite" in checks[0]["detail"]
    parked = [c for c in invoke_marm("doctor").json()["checks"] if c["name"] == "background tasks"]
    assert parked and parked[0]["ok"] is True
