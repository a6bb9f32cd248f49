"""The real CLI in a subprocess: log, then recall finds it."""

from tests.helpers import run_marm


def test_log_then_recall_in_subprocess(tmp_path):
    logged = run_marm("log", "DECISION: use idempotency keys on the payment webhook", cwd=tmp_path)
    assert logged.code == 0, logged.err
    other = run_marm("log", "the build uses ninja", cwd=tmp_path)
    assert other.code == 0
    found = run_marm("recall", "payment webhook", cwd=tmp_path).json()
    ids = [r["id"] for r in found["results"]]
    assert ids[0] == logged.json()["id"]
    assert other.json()["id"] not in ids
