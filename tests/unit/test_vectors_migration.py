"""Migration 7: a store whose vectors are BLOBs in marm.db (schema 6, plus the matrix
files that copied them) ends with each vector once, in the vector files, and recalls
exactly what it recalled before."""

from __future__ import annotations

import os
import sqlite3

from marm import drain
from marm.context import Ctx
from marm.ops.memory import find, write_memory
from marm.store import vecfile, vectors
from marm.store.migrations import SCHEMA_VERSION
from tests.embed_fake import MODEL, use_fake

#: ``memory_vectors`` as migration 1 made it (schema 6 still had it).
V6_TABLE = """
CREATE TABLE memory_vectors (
    memory_id     INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    model         TEXT NOT NULL,
    chunk         INTEGER NOT NULL,
    dim           INTEGER NOT NULL,
    start_char    INTEGER NOT NULL,
    end_char      INTEGER NOT NULL,
    content_hash  TEXT NOT NULL,
    vector        BLOB NOT NULL,
    PRIMARY KEY (memory_id, model, chunk)
)"""

TEXTS = ["DECISION: the payment webhook retries with idempotency keys",
         "FIX: the login page cached stale cookies; we now rotate them",
         "NOTE: the billing cron shards the tenant id across workers",
         "the search index compresses nightly snapshots before upload",
         " ".join(f"long memory step {i} validates the ingest record" for i in range(80))]


def _all_vectors(store, home, dim):
    return sorted((int(i), v.tobytes()) for ids, m in vectors.load(store, home, MODEL, dim, None)
                  for i, v in zip(ids, m, strict=True))


def _hits(ctx, query):
    return [(h.memory.id, round(h.score, 6)) for h in find(ctx, query, "p", 5, "hybrid").hits]


def _as_schema_6(home):
    """Put the store back as schema 6 had it: BLOBs in marm.db, a matrix file per project."""
    conn = sqlite3.connect(home / "marm.db")
    rows = conn.execute("SELECT v.memory_id, v.model, v.chunk, v.dim, v.start_char, v.end_char,"
                        " v.content_hash, f.model, f.project, f.generation, f.rows, v.row"
                        " FROM memory_vectors v JOIN vector_files f ON f.id = v.file_id").fetchall()
    blobs = []
    for r in rows:
        ids, matrix = vecfile.read(vecfile.path_for(home, r[7], r[8], r[9]), r[7], r[8], r[3], r[10])
        assert ids[r[11]] == r[0]
        blobs.append((*r[:7], matrix[r[11]].astype("<f4").tobytes()))
    conn.execute("DROP TABLE memory_vectors")
    conn.execute("DROP TABLE vector_files")
    for later in ("hygiene_queue", "hygiene_code_refs", "hygiene_marks", "memory_dates",
                  "staged_summaries"):  # migrations 8, 9, 10
        conn.execute(f"DROP TABLE {later}")
    conn.execute(V6_TABLE)
    conn.executemany("INSERT INTO memory_vectors VALUES (?,?,?,?,?,?,?,?)", blobs)
    conn.execute("PRAGMA user_version = 6")
    conn.commit()
    conn.close()
    for path in (home / "vectors").glob("*/*.vec"):
        path.unlink()
    copy = vecfile.model_dir(home, MODEL) / "p-0123456789.vec"  # schema 6's name: no generation
    copy.write_bytes(b"MARMVEC1" + b"\0" * 200)
    vecfile._MAPPED.clear()
    return {b[0] for b in blobs}, copy


def test_migration_moves_the_blobs_into_the_files_and_keeps_recall(marm_home, tmp_path, monkeypatch):
    ctx = Ctx(cwd=tmp_path, env=dict(os.environ))
    fake = use_fake(monkeypatch, ctx)
    ids = [write_memory(ctx, t, project="p").id for t in TEXTS]
    write_memory(ctx, "a global note: the release script pins schema versions", project=None)
    drain.run(ctx, kinds=["embed"], sweeps=False)
    queries = ["why do webhook retries need keys", "stale cookies on login", "release schema versions"]
    before = [_hits(ctx, q) for q in queries]
    assert all(before) and before[0][0][0] == ids[0]
    store = ctx.store()
    vectors_before = _all_vectors(store, marm_home, fake.dim)
    ctx.close()

    embedded, copy = _as_schema_6(marm_home)
    assert len(embedded) == 6 and copy.exists()

    ctx = Ctx(cwd=tmp_path, env=dict(os.environ))
    use_fake(monkeypatch, ctx)
    store = ctx.store()  # opening migrates
    assert store.schema_version() == SCHEMA_VERSION
    columns = [r[1] for r in store.conn.execute("PRAGMA table_info(memory_vectors)")]
    assert "vector" not in columns and {"file_id", "row"} <= set(columns)  # no BLOB copy left
    assert not copy.exists()  # nor the old matrix copy
    files = sorted(p.name for p in (marm_home / "vectors").rglob("*.vec"))
    assert len(files) == 2 and all(n.endswith(".1.vec") for n in files)  # project p and the global one
    assert _all_vectors(store, marm_home, fake.dim) == vectors_before  # every chunk's vector, bit for bit
    assert {i for i, _ in vectors_before} == embedded
    assert [_hits(ctx, q) for q in queries] == before
    assert store.conn.execute("SELECT count(*) FROM outbox WHERE kind = 'embed'").fetchone()[0] == 0
    ctx.close()
