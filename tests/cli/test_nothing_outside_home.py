"""Finding 9 of issue 15: log, drain (the real model, spaCy, onnxruntime) and a hybrid
recall with HOME set to an empty folder leave that folder empty; everything marm
writes is under MARM_HOME."""

from __future__ import annotations

import pytest

from tests.helpers import run_marm


@pytest.mark.slow
def test_log_drain_and_hybrid_recall_write_nothing_under_home(tmp_path, marm_home):
    home = tmp_path / "empty-home"
    home.mkdir()
    env = {"HOME": str(home)}
    for text in ("DECISION: the invoice emails go out at 9am", "FIX: retries on the payment webhook"):
        assert run_marm("log", text, env=env).code == 0
    drain = run_marm("drain", env=env, timeout=300)
    assert drain.code == 0, drain.err
    recall = run_marm("recall", "when are invoices emailed", "--mode", "hybrid", env=env, timeout=120)
    assert recall.code == 0 and "invoice emails" in recall.out, recall.err
    assert recall.json()["mode"] != "lexical_only"
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []
    assert (marm_home / "marm.db").exists()  # it was written, just not there
