"""Free pages go back to the file system once they pass the threshold: the first
reclaim is a VACUUM that switches the database to incremental auto-vacuum, the next
ones are incremental. The memories are all still there afterwards."""

from __future__ import annotations

from marm.ops.memory import write_memory
from marm.store import memories, space


def test_free_pages_are_reclaimed_past_the_threshold_and_kept_below_it(ctx):
    store = ctx.store()
    keep = write_memory(ctx, "DECISION: keep this one about the payment webhook", project="p").id
    filler = [write_memory(ctx, f"filler {i} " + "lorem ipsum dolor sit amet " * 40, project="p").id
              for i in range(400)]
    total = space.space(store).total
    for memory_id in filler[:20]:
        memories.delete(store, memory_id)
    assert 0 < space.space(store).free and space.reclaim(store, share=0.5, min_bytes=0) == 0  # below it
    for memory_id in filler[20:]:
        memories.delete(store, memory_id)
    freed = space.reclaim(store, share=0.1, min_bytes=0)
    assert freed > 0 and space.space(store).total == total - freed and space.space(store).free == 0
    assert store.conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental from now on
    again = [write_memory(ctx, f"again {i} " + "lorem ipsum " * 80, project="p").id for i in range(100)]
    for memory_id in again:
        memories.delete(store, memory_id)
    assert space.reclaim(store, share=0.1, min_bytes=0) > 0 and space.space(store).free == 0
    assert [m.id for m in memories.recent(store, memories.Filter(project="p"), limit=5)] == [keep]
