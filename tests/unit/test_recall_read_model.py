"""A recall reads its candidate set in at most three statements (``marm.store.recall_reads``).

What counts as a query here: every SQL statement the recall runs on the store's
connection that reads memory rows or their indexes (``memories``, its FTS5 tables,
``memory_count``, ``memory_dates``, ``memory_vectors``, ``vector_files``), however many
CTEs or UNION ALL arms it holds. Not counted, and checked to be all that is left:
PRAGMAs and a transaction's BEGIN/COMMIT (none is expected), the settings a recall
reads (``flags``), the backlog check a hybrid recall makes before it helps embed
pending memories (``outbox``) and the drain lease it then tries (``leases``), and
FTS5's own reads of its shadow tables while it answers one of our statements (the
trace shows them as ``-- ...``).
"""

from __future__ import annotations

import re

import pytest

from marm import drain, recall
from marm.ops.memory import memory_filter, write_memory
from marm.store import leases
from tests.embed_fake import use_fake

MEMORY_TABLES = re.compile(r"\b(memories|memories_fts|memories_tri|memory_\w+|vector_files)\b")
NOT_COUNTED = re.compile(r"^\s*(PRAGMA|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b|\bFROM (flags|outbox|leases)\b",
                         re.IGNORECASE)
MOST = 3


def _statements(store, run):
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    try:
        out = run()
    finally:
        store.conn.set_trace_callback(None)
    ours = [s for s in seen if not s.lstrip().startswith("--")]  # FTS5's own reads are not ours
    counted = [s for s in ours if MEMORY_TABLES.search(s)]
    rest = [s for s in ours if s not in counted]
    assert all(NOT_COUNTED.search(s) for s in rest), rest
    return out, counted


@pytest.fixture
def populated(ctx, monkeypatch):
    """A store of 240 memories in sessions, some dated, a question and its answer, one
    holding a literal, 40 in another project; every vector stored."""
    use_fake(monkeypatch, ctx)
    ids = {}
    for i in range(200):
        write_memory(ctx, f"Ana: routine note {i} on the linter and the weekly sync", project="p",
                     session=f"s{i // 20}")
    for i in range(40):
        write_memory(ctx, f"the payment webhook in another project, note {i}", project="q")
    ids["question"] = write_memory(ctx, "Bo: how do we stop the payment webhook retrying twice?", project="p",
                                   session="w").id
    ids["answer"] = write_memory(ctx, "Ana: a flock around the script does it", project="p", session="w").id
    ids["dated"] = write_memory(ctx, "Ana: the payment webhook moved to the new queue", project="p", session="w",
                                valid_from="2023-07-07T10:00:00").id
    ids["literal"] = write_memory(ctx, "set MAX_RETRIES to 3 for the payment webhook", project="p").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    return ids


CASES = [
    ("lexical", "payment webhook retrying", {}, "question"),
    ("lexical", "why does MAX_RETRIES break the payment webhook?", {}, "literal"),
    ("hybrid", "How do we stop the payment webhook retrying twice?", {}, "answer"),
    ("hybrid", "Where did Ana move the payment webhook on 7 July 2023?", {}, "dated"),
    ("hybrid", "why does MAX_RETRIES break the payment webhook?", {}, "literal"),
    ("hybrid", "payment webhook queue", {"session": "w"}, "dated"),
    ("semantic", "payment webhook queue", {}, "dated"),
]


@pytest.mark.parametrize(("mode", "query", "narrow", "want"), CASES)
def test_a_recall_reads_the_store_in_at_most_three_statements(ctx, populated, mode, query, narrow, want):
    store = ctx.store()
    flt = memory_filter(ctx, project="p", all_projects=False, **narrow)
    out, counted = _statements(store, lambda: recall.run(store, query, flt, 5, mode))
    assert out.mode == mode
    got = [h.memory.id for h in out.hits]
    assert populated[want] in got, (got, populated)  # the answer is there: the reads were the right ones
    assert all(h.memory.project == "p" for h in out.hits)
    assert 1 <= len(counted) <= MOST, "\n".join(counted)


def test_a_memory_waiting_for_its_vector_is_read_in_the_same_statements(ctx, populated):
    store = ctx.store()
    new = write_memory(ctx, "Bo: the zeta quartz flag guards the payment rollout", project="p").id
    flt = memory_filter(ctx, project="p", all_projects=False)
    # A drain holds the lease: the recall embeds the new memory for the query alone.
    with leases.hold(store, ctx.home, "drain", holder="test"):
        out, counted = _statements(store, lambda: recall.run(store, "zeta quartz rollout", flt, 5, "hybrid"))
    assert out.hits[0].memory.id == new and out.hits[0].meaning is not None
    assert 1 <= len(counted) <= MOST, "\n".join(counted)


def test_a_prompt_with_many_names_is_answered_at_once(tmp_path):
    """2 ** names topics took seconds for a pasted prompt with many capitalised words."""
    import time

    from marm.recall import hybrid

    names = [f"Name{i}" for i in range(24)]
    query = " ".join(f"{n} said the deploy uses Render" for n in names)
    # This thread's CPU time, not the wall clock: the other worker's 64 processes once made
    # a 0.09 s call take 1.2 s of wall time; 2 ** 24 topics would take minutes of CPU.
    start = time.thread_time()
    spelled = hybrid.topics(query, names)
    assert time.thread_time() - start < 1.0
    assert len(spelled) <= 2 ** (hybrid.TOPIC_NAMES + 1)
    # Every name kept, every name dropped, and each of the first names dropped alone.
    assert hybrid.without_names(query, []) in spelled and hybrid.without_names(query, names) in spelled
    assert hybrid.without_names(query, names[:1]) in spelled
    # A pasted prompt with 400 names: the names are found once, not once per topic and
    # name (128 x 400 passes over the prompt took 6 s of CPU).
    pasted = " ".join(f"word{i} Name{i}" for i in range(400))
    many = hybrid.names_in(pasted)
    start = time.thread_time()
    spelled = hybrid.topics(pasted, many)
    assert time.thread_time() - start < 1.0 and len(many) == 400
    assert " ".join(f"word{i}" for i in range(400)) in spelled and pasted in spelled


def test_a_pasted_prompt_of_many_words_and_names_is_read_in_the_same_statements(ctx, populated):
    """A compound SELECT holds at most 500 arms: the terms and the names are each one arm
    over a JSON list, however many a long pasted prompt holds. 510 words (more than 500
    by themselves) and 400 names among them."""
    store = ctx.store()
    flt = memory_filter(ctx, project="p", all_projects=False)
    words = " ".join(f"word{i} Name{i}" if i < 400 else f"word{i}" for i in range(510))
    query = f"How do we stop the payment webhook retrying twice? {words}"
    out, counted = _statements(store, lambda: recall.run(store, query, flt, 5, "hybrid"))
    assert populated["question"] in [h.memory.id for h in out.hits]
    assert 1 <= len(counted) <= MOST, "\n".join(counted)
