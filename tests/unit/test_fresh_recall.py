"""A recall right after a write finds the new memory, also when it is a near-duplicate
of the memory written just before it, and also when a running drain holds the lease
(so the recall cannot store its vector). Real store, real model.

The causes this guards against: a memory whose vector is not stored yet used to compete
on words alone, and its near-duplicate (with a vector, and credited with the new
memory's words as its session neighbour) outranked it; and, once both had vectors, the
near-duplicate still took the new memory's words as its neighbour's credit on top of
its own (the same words but the new one's marker) and came first in one of six (the
seed's words are not the query's, so those words are rare, as in a real store)."""

from __future__ import annotations

import pytest

from marm import drain
from marm.ops.memory import find, write_memory
from marm.store import leases, outbox

pytestmark = pytest.mark.slow

SEED = [f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}-bench-NOTE: the {s} handles retry budgets (case {i})"
        for i, s in enumerate(["login page", "build", "staging cluster", "search index", "billing cron",
                               "cache layer", "release script", "auth service"] * 4)]


@pytest.mark.parametrize("held", [False, True], ids=["lease free", "a drain holds the lease"])
def test_a_near_duplicate_written_just_now_is_found_first(ctx, held):
    for text in SEED:
        write_memory(ctx, text, project="p", session="s")
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store = ctx.store()
    firsts = 0
    for i in range(6):
        marker = f"zeta{i}quartz"
        new = write_memory(ctx, f"2026-12-01-fresh-NOTE: the {marker} flag guards the rollout",
                           project="p", session="s").id
        if held:
            with leases.hold(store, ctx.home, "drain", holder="another drain"):
                hits = find(ctx, f"{marker} rollout flag", "p", 5, "hybrid").hits
            assert outbox.pending(store, "embed") == i + 1  # the recall could not store it
        else:
            hits = find(ctx, f"{marker} rollout flag", "p", 5, "hybrid").hits
            assert outbox.pending(store, "embed") == 0
        ids = [h.memory.id for h in hits]
        assert new in ids, (i, [h.memory.content for h in hits])
        assert hits[ids.index(new)].meaning is not None  # scored by its meaning, not by words alone
        if i:
            assert new - 1 in ids  # the near-duplicate before it is there too
        firsts += ids[0] == new
    assert firsts == 6
