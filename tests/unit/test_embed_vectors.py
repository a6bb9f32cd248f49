"""Vector files and their books: idempotent replace, append-only writes, torn tails, repair, compaction, chunks."""

from __future__ import annotations

import numpy as np

from marm import drain
from marm.ops.memory import write_memory
from marm.recall import bm25
from marm.store import outbox, vecfile, vectors
from tests.embed_fake import MODEL, use_fake


def _vector_rows(store):
    return store.conn.execute(
        "SELECT memory_id, chunk, count(*) FROM memory_vectors GROUP BY memory_id, chunk").fetchall()


def _write(store, home, memory_id, chunks, matrix, content_hash="h"):
    with store.write():
        retired = vectors.write(store, home, MODEL, [vectors.Embedded(memory_id, content_hash, chunks, matrix)])
    vectors.retire(home, retired)


def test_replace_twice_leaves_one_vector_per_chunk_and_zeroes_the_old_rows(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    m = write_memory(ctx, "the cache is warmed at deploy time", project="p")
    store = ctx.store()
    chunks = [vectors.Chunk(0, 0, 10), vectors.Chunk(1, 5, 20)]
    for value in (1.0, 2.0):
        _write(store, ctx.home, m.id, chunks, np.full((2, 8), value, dtype=np.float32))
    assert _vector_rows(store) == [(m.id, 0, 1), (m.id, 1, 1)]
    [(ids, matrix)] = vectors.load(store, ctx.home, MODEL, 8, ["p"])
    assert ids.tolist() == [vecfile.DEAD, vecfile.DEAD, m.id, m.id]  # the old rows are zeros now
    assert matrix[:2].tolist() == [[0.0] * 8] * 2 and matrix[2:].tolist() == [[2.0] * 8] * 2


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


def test_a_new_memory_is_appended_and_nothing_else_is_rewritten(ctx, monkeypatch):
    fake = use_fake(monkeypatch, ctx)
    first = [write_memory(ctx, f"note number {i} about the payment service", project="p").id
             for i in range(5)]
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store = ctx.store()
    [f] = vectors._files(store)
    path = f.path(ctx.home)
    before = path.read_bytes()
    inode = path.stat().st_ino
    [(ids, matrix)] = vectors.load(store, ctx.home, MODEL, fake.dim, ["p", None])
    assert ids.tolist() == first and matrix.shape == (5, fake.dim)

    late = write_memory(ctx, "a later note about the refund queue", project="p").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    after = path.read_bytes()
    assert path.stat().st_ino == inode and after[:len(before)] == before  # appended in place
    assert len(after) - len(before) == vecfile.row_size(fake.dim)
    [(ids, matrix)] = vectors.load(store, ctx.home, MODEL, fake.dim, ["p", None])
    assert ids.tolist() == [*first, late]
    assert np.allclose(matrix[-1], fake.embed(["a later note about the refund queue"])[0])


def test_a_torn_tail_is_never_read_and_the_next_append_cuts_it(ctx, monkeypatch):
    """What a writer killed between its append and its commit leaves: rows past the
    committed count. Readers map only the committed rows; the next writer cuts the rest."""
    fake = use_fake(monkeypatch, ctx)
    ids = [write_memory(ctx, f"memory {i} on the deploy pipeline", project="p").id for i in range(3)]
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store = ctx.store()
    [f] = vectors._files(store)
    with open(f.path(ctx.home), "ab") as out:  # an uncommitted row and a half
        out.write(vecfile.pack([999], np.ones((1, fake.dim), dtype=np.float32)) + b"\x01" * 100)
    [(got, _)] = vectors.load(store, ctx.home, MODEL, fake.dim, ["p"])
    assert got.tolist() == ids
    late = write_memory(ctx, "one more about the deploy pipeline", project="p").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    [(got, _)] = vectors.load(store, ctx.home, MODEL, fake.dim, ["p"])
    assert got.tolist() == [*ids, late]
    assert f.path(ctx.home).stat().st_size == vecfile.body_at(MODEL, "p", fake.dim) + 4 * vecfile.row_size(fake.dim)


def test_a_damaged_file_is_dropped_and_its_memories_embedded_again(ctx, monkeypatch):
    fake = use_fake(monkeypatch, ctx)
    ids = [write_memory(ctx, f"memory {i} on the deploy pipeline", project="p").id for i in range(3)]
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store = ctx.store()
    [f] = vectors._files(store)
    f.path(ctx.home).write_bytes(f.path(ctx.home).read_bytes()[:-7])  # cut short of its committed rows
    assert vectors.load(store, ctx.home, MODEL, fake.dim, ["p"]) == []  # a reader skips it, writes nothing
    assert vectors.repair(store, ctx.home) == 3
    assert outbox.pending(store, "embed") == 3
    drain.run(ctx, kinds=["embed"], sweeps=False)
    [(got, _)] = vectors.load(store, ctx.home, MODEL, fake.dim, ["p"])
    assert sorted(got.tolist()) == ids
    assert [p.name for p in f.path(ctx.home).parent.iterdir()] == [vectors._files(store)[0].path(ctx.home).name]


def test_compaction_keeps_the_live_rows_only(ctx, monkeypatch):
    fake = use_fake(monkeypatch, ctx)
    monkeypatch.setattr(vectors, "COMPACT_MIN", 2)
    ids = [write_memory(ctx, f"memory {i} on the deploy pipeline", project="p").id for i in range(6)]
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store = ctx.store()
    from marm.store import memories

    for gone in ids[:3]:
        memories.delete(store, gone)
    [old] = vectors._files(store)
    assert vectors.compact(store, ctx.home) == 1
    [new] = vectors._files(store)
    assert new.generation == old.generation + 1 and new.rows == 3 and not old.path(ctx.home).exists()
    [(got, matrix)] = vectors.load(store, ctx.home, MODEL, fake.dim, ["p"])
    assert got.tolist() == ids[3:]
    assert np.allclose(matrix[0], fake.embed(["memory 3 on the deploy pipeline"])[0])
    assert store.conn.execute("SELECT row FROM memory_vectors ORDER BY memory_id").fetchall() == [(0,), (1,), (2,)]


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
    got = bm25.matches(store, ["deploy"], Filter(project="p"), 10).ranked
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
