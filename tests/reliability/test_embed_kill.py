"""kill -9 of an embedding drain mid-batch, then a second drain: exactly one vector per
chunk for every memory, and no task lost or left behind. Real model; the killed drain is
a real process, the second one runs in this process (``invoke_marm``), which loads the
engine the checks below use anyway."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from marm import embed
from marm.context import Ctx
from marm.ops.memory import write_memory
from marm.store import vecfile
from tests.helpers import invoke_marm

pytestmark = pytest.mark.slow


def _counts(db):
    conn = sqlite3.connect(db)
    try:
        vectors = conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
        pending = conn.execute("SELECT count(*) FROM outbox WHERE kind = 'embed'").fetchone()[0]
        return vectors, pending
    finally:
        conn.close()


def test_kill_a_drain_mid_batch_then_drain_again(marm_home, tmp_path):
    ctx = Ctx(cwd=tmp_path, env=dict(os.environ))
    long_text = " ".join(f"the ingest worker step {i} validates and forwards its record" for i in range(60))
    texts = [f"{long_text} (copy {i})" if i % 20 == 0 else f"note {i}: the worker pool handles job {i}"
             for i in range(200)]
    ids = [write_memory(ctx, text, project="p").id for text in texts]
    db = marm_home / "marm.db"
    proc = subprocess.Popen([sys.executable, "-m", "marm", "drain", "--kind", "embed", "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        vectors, pending = _counts(db)
        # A batch's vectors commit before its tasks are cleared (in the drain's next
        # transaction): wait for a cleared batch, so the kill lands with some done.
        if vectors > 0 and 64 < pending < 200:
            break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("the drain made no progress")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 0 < _counts(db)[1] < 200  # killed mid-way: some done, some left

    second = invoke_marm("drain", "--kind", "embed")
    assert second.code == 0, second.err
    assert second.json()["kinds"]["embed"]["failed"] == 0

    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT memory_id, count(*), count(DISTINCT chunk), min(chunk), max(chunk) FROM memory_vectors"
        " GROUP BY memory_id").fetchall()
    left = conn.execute("SELECT count(*) FROM outbox WHERE kind = 'embed'").fetchone()[0]
    conn.close()
    assert left == 0
    assert sorted(r[0] for r in rows) == ids  # every memory has vectors
    encoder = embed.load(embed.settings(marm_home, {}, os.environ))
    text_of = dict(zip(ids, texts, strict=False))
    for memory_id, n, distinct, lo, hi in rows:
        assert n == distinct and lo == 0 and hi == n - 1  # one vector per chunk, no gaps
        assert n == len(encoder.spans(text_of[memory_id]))
    assert len(encoder.spans(texts[0])) > 1
    # The vector files agree with their books: each chunk's row holds its memory's id
    # and the vector of that chunk's text; a row the killed drain appended without
    # committing was cut off, not kept as a second copy.
    conn = sqlite3.connect(db)
    books = conn.execute("SELECT v.memory_id, v.start_char, v.end_char, v.row, f.model, f.project, f.dim,"
                         " f.generation, f.rows FROM memory_vectors v JOIN vector_files f ON f.id = v.file_id"
                         " ORDER BY v.row").fetchall()
    conn.close()
    model, project, dim, generation, committed = books[0][4:]
    path = vecfile.path_for(marm_home, model, project, generation)
    file_ids, matrix = vecfile.read(path, model, project, dim, committed)
    assert path.stat().st_size == vecfile.body_at(model, project, dim) + committed * vecfile.row_size(dim)
    live = [int(i) for i in file_ids if i != vecfile.DEAD]
    assert len(live) == len(books) == sum(r[1] for r in rows)  # one copy of each vector
    sample = books[:: max(1, len(books) // 12)]
    expected = encoder.embed([text_of[m][s:e] for m, s, e, *_ in sample])
    for (memory_id, _s, _e, row, *_), vector in zip(sample, expected, strict=True):
        assert file_ids[row] == memory_id and float(matrix[row] @ vector) > 0.999
