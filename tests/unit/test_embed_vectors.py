"""Vector rows and matrix files: idempotent replace, file + delta, verification, chunks."""

from __future__ import annotations

import numpy as np

from marm import drain
from marm.ops.memory import write_memory
from marm.recall import bm25
from marm.store import outbox, vectors
from tests.embed_fake import MODEL, use_fake


def _vector_rows(store):
    return store.conn.execute(
        "SELECT memory_id, chunk, count(*) FROM memory_vectors GROUP BY memory_id, chunk").fetchall()


def test_replace_twice_leaves_one_vector_per_chunk(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    m = write_memory(ctx, "the cache is warmed at deploy time", project="p")
    store = ctx.store()
    chunks = [vectors.Chunk(0, 0, 10), vectors.Chunk(1, 5, 20)]
    for _ in range(2):
        with store.write():
            vectors.replace(store, m.id, MODEL, "h", chunks, np.ones((2, 8), dtype=np.float32))
    assert _vector_rows(store) == [(m.id, 0, 1), (m.id, 1, 1)]


def test_drain_embeds_long_memories_in_overlapping_chunks(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    long_text = " ".join(f"word{i}" for i in range(300))  # ~2,400 characters
    long = write_memory(ctx, long_text, project="p")
    short = write_memory(ctx, "a short note about ninja builds", project="p")
    summary = drain.run(ctx, kinds=["embed"], sweeps=False)
    assert summary.kinds["embed"].done == 2
    store = ctx.store()
    spans = vectors.chunks_of(store, long.id, MODEL)
    assert len(spans) > 3
    assert spans[0][1] == 0 and spans[-1][2] == len(long_text)
    assert all(a[2] > b[1] for a, b in zip(spans, spans[1:], strict=False))  # windows overlap
    assert [c[0] for c in spans] == list(range(len(spans)))
    assert len(vectors.chunks_of(store, short.id, MODEL)) == 1
    assert outbox.pending(store, "embed") == 0


def test_matrix_file_is_rebuilt_by_the_drain_and_extended_by_the_delta(ctx, monkeypatch):
    fake = use_fake(monkeypatch, ctx)
    first = [write_memory(ctx, f"note number {i} about the payment service", project="p").id
             for i in range(5)]
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store = ctx.store()
    path = vectors.matrix_path(ctx.home, MODEL, "p")
    header, ids, matrix = vectors.read_matrix(path)
    assert sorted(ids.tolist()) == first and matrix.shape == (5, fake.dim)
    assert header["max_rowid"] == vectors.max_rowid(store)

    # Vectors written after the file (e.g. by a drain stopped before its rebuild) come
    # back through the delta, without rewriting the file.
    late = write_memory(ctx, "a later note about the refund queue", project="p").id
    with store.write():
        vectors.replace(store, late, MODEL, "h", [vectors.Chunk(0, 0, 5)], fake.embed(["refund queue"]))
    parts = vectors.load(store, ctx.home, MODEL, fake.dim, "p")
    assert len(parts) == 2 and parts[1][0].tolist() == [late]
    assert vectors.read_matrix(path)[0]["max_rowid"] == header["max_rowid"]


def test_a_damaged_or_foreign_matrix_file_is_rebuilt(ctx, monkeypatch):
    fake = use_fake(monkeypatch, ctx)
    ids = [write_memory(ctx, f"memory {i} on the deploy pipeline", project="p").id for i in range(3)]
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store = ctx.store()
    path = vectors.matrix_path(ctx.home, MODEL, "p")
    path.write_bytes(path.read_bytes()[:-7])  # truncated
    [(got, matrix)] = vectors.load(store, ctx.home, MODEL, fake.dim, "p")
    assert sorted(got.tolist()) == ids
    # A file claiming rows the database never had (say, a restored older database).
    header, f_ids, f_matrix = vectors.read_matrix(path)
    vectors.write_matrix(path, {**header, "max_rowid": header["max_rowid"] + 100}, f_ids[:1], f_matrix[:1])
    [(got, _)] = vectors.load(store, ctx.home, MODEL, fake.dim, "p")
    assert sorted(got.tolist()) == ids


def test_a_deleted_memory_loses_its_vectors(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    keep = write_memory(ctx, "keep this one about retries", project="p").id
    gone = write_memory(ctx, "drop this one about retries", project="p").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    from marm.store import memories

    memories.delete(ctx.store(), gone)
    assert {r[0] for r in _vector_rows(ctx.store())} == {keep}


def test_word_matches_fall_back_when_other_projects_hold_the_best_matches(ctx):
    from marm.store.memories import Filter

    store = ctx.store()
    for i in range(250):
        write_memory(ctx, f"deploy deploy deploy step {i}", project="q")
    mine = write_memory(ctx, "a long note that mentions the deploy only once among many other words",
                        project="p").id
    got = bm25.matches(store, ["deploy"], Filter(project="p"), 10)
    assert [mid for mid, _ in got] == [mine]


def test_one_failing_memory_fails_only_its_own_task(ctx, monkeypatch):
    fake = use_fake(monkeypatch, ctx)
    real_embed = fake.embed

    def picky(texts):
        if any("poison" in t for t in texts):
            raise ValueError("cannot embed this")
        return real_embed(texts)

    monkeypatch.setattr(fake, "embed", picky)
    good = write_memory(ctx, "a fine note about retries", project="p").id
    bad = write_memory(ctx, "a poison note", project="p").id
    summary = drain.run(ctx, kinds=["embed"], sweeps=False)
    ks = summary.kinds["embed"]
    assert (ks.done, ks.failed, ks.parked) == (1, 3, 1)  # retried, then parked with its error
    store = ctx.store()
    assert {r[0] for r in _vector_rows(store)} == {good}
    [(target, state, attempts, error)] = store.conn.execute(
        "SELECT target, state, attempts, last_error FROM outbox WHERE kind = 'embed'").fetchall()
    assert (target, state, attempts) == (str(bad), "parked", 3) and "cannot embed this" in error
