"""`marm embed`, `--reindex` after a model change, and recall falling back meanwhile."""

from __future__ import annotations

import pytest

from tests.helpers import invoke_marm

pytestmark = pytest.mark.slow


def _ok(*args, cwd):
    got = invoke_marm(*args, cwd=cwd)
    assert got.code == 0, got.err
    return got.json()


def test_model_change_reindex_and_fallback(tmp_path):
    a = _ok("log", "the payment webhook uses idempotency keys", "-p", "p", cwd=tmp_path)["id"]
    _ok("log", "the docker build uses a smaller base image", "-p", "p", cwd=tmp_path)
    _ok("drain", "--kind", "embed", cwd=tmp_path)
    status = _ok("embed", cwd=tmp_path)
    assert status["embedded"] == 2 and status["pending"] == 0 and status["available"] is True

    _ok("config", "set", "embed.model", "jinaai/jina-embeddings-v2-small-en", cwd=tmp_path)
    changed = _ok("embed", "--reindex", cwd=tmp_path)
    assert changed["deleted_vectors"] == 2 and changed["queued"] == 2
    assert changed["available"] is False and "downloads are off" in changed["detail"]
    found = _ok("recall", "payment webhook", "--mode", "hybrid", "-p", "p", cwd=tmp_path)
    assert found["mode"] == "lexical_only" and found["results"][0]["id"] == a

    _ok("config", "set", "embed.model", "default", cwd=tmp_path)
    back = _ok("embed", "--reindex", cwd=tmp_path)
    assert back["queued"] == 2 and back["embedded"] == 0
    _ok("drain", "--kind", "embed", cwd=tmp_path)
    done = _ok("embed", cwd=tmp_path)
    assert done["embedded"] == 2 and done["pending"] == 0 and done["parked"] == 0
    hybrid = _ok("recall", "how do we avoid billing twice", "-p", "p", cwd=tmp_path)
    assert hybrid["mode"] == "hybrid" and hybrid["results"][0]["id"] == a


HEAVY = ("fastembed", "onnxruntime", "numpy", "tokenizers")
PROBE = """
import runpy, sys
sys.argv = ["marm", *sys.argv[1:]]
try:
    runpy.run_module("marm", run_name="__main__")
except SystemExit:
    pass
print(",".join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [("status",), ("embed",), ("recall", "payment", "--mode", "lexical")])
def test_status_embed_and_lexical_recall_load_no_model(tmp_path, args):
    import subprocess
    import sys

    invoke_marm("log", "the payment webhook uses idempotency keys", cwd=tmp_path)
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip(), proc.stderr
    assert proc.stderr.splitlines()[-1] == "", proc.stderr  # none of them imported


def test_the_probe_sees_a_hybrid_recall_load_the_model(tmp_path):
    import subprocess
    import sys

    invoke_marm("log", "the payment webhook uses idempotency keys", cwd=tmp_path)
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), "recall", "payment",
                           "--mode", "hybrid"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    loaded = proc.stderr.splitlines()[-1].split(",")
    assert "onnxruntime" in loaded and "numpy" in loaded and "fastembed" not in loaded
