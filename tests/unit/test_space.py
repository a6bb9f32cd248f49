"""Free pages go back to the file system once they pass the threshold, and stay below
it. A new database frees them incrementally from the start; an older one (made before
incremental auto-vacuum) is switched by its first reclaim, a VACUUM. The memories are
all still there afterwards."""

from __future__ import annotations

from marm.ops.memory import write_memory
from marm.store import memories, space


def _fill_and_delete(ctx, n, tag):
    store = ctx.store()
    ids = [write_memory(ctx, f"{tag} {i} " + "lorem ipsum dolor sit amet " * 40, project="p").id for i in range(n)]
    for memory_id in ids:
        memories.delete(store, memory_id)


def test_free_pages_are_reclaimed_past_the_threshold_and_kept_below_it(ctx):
    store = ctx.store()
    keep = write_memory(ctx, "DECISION: keep this one about the payment webhook", project="p").id
    assert store.conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental from the start
    _fill_and_delete(ctx, 20, "few")
    assert 0 < space.space(store).free and space.reclaim(store, share=0.5, min_bytes=0) == 0  # below it
    _fill_and_delete(ctx, 300, "many")
    total = space.space(store).total
    freed = space.reclaim(store, share=0.1, min_bytes=0)
    assert freed > 0 and space.space(store).total == total - freed and space.space(store).free == 0
    assert [m.id for m in memories.recent(store, memories.Filter(project="p"), limit=5)] == [keep]


def test_an_older_database_is_switched_to_incremental_by_its_first_reclaim(ctx):
    store = ctx.store()
    keep = write_memory(ctx, "DECISION: keep this one about the payment webhook", project="p").id
    store.conn.execute("PRAGMA auto_vacuum = NONE")
    store.conn.execute("VACUUM")  # as a database made before marm chose incremental
    assert store.conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    _fill_and_delete(ctx, 300, "many")
    assert space.reclaim(store, share=0.1, min_bytes=0) > 0 and space.space(store).free == 0
    assert store.conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
    _fill_and_delete(ctx, 100, "again")
    assert space.reclaim(store, share=0.1, min_bytes=0) > 0 and space.space(store).free == 0
    assert [m.id for m in memories.recent(store, memories.Filter(project="p"), limit=5)] == [keep]
