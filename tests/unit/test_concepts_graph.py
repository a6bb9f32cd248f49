"""The derived graph and the indexer, with the rule extractor (fast; no model)."""

from __future__ import annotations

from marm import config
from marm.concepts import indexer
from marm.concepts.rules import RuleExtractor
from marm.ops.memory import write_memory
from marm.store import concept_verdicts, memories
from marm.store.concept_graph import Graph


def _graph(ctx) -> Graph:
    return Graph.open(config.derived_path(ctx.home))


def _apply(ctx, ids):
    graph = _graph(ctx)
    try:
        return indexer.apply(ctx.store(), graph, ids, RuleExtractor())
    finally:
        graph.close()


def _state(ctx):
    graph = _graph(ctx)
    try:
        rows = graph.conn.execute(
            "SELECT (SELECT count(*) FROM concept_entities), (SELECT count(*) FROM concept_mentions),"
            " (SELECT count(*) FROM concept_edges), (SELECT count(*) FROM concept_sources)"
        ).fetchone()
        return tuple(rows), {m: graph.contribution(m) for m in graph.source_ids()}
    finally:
        graph.close()


def test_apply_twice_is_the_same_graph(ctx):
    a = write_memory(ctx, "The indexer depends on the write queue and uses SQLite WAL mode.").id
    b = write_memory(ctx, "this change causes a deadlock in write_queue.py").id
    _apply(ctx, [a, b])
    first = _state(ctx)
    _apply(ctx, [a, b])
    _apply(ctx, [b])
    assert _state(ctx) == first
    counts, contributions = first
    assert counts[3] == 2 and ("change", "causes", "deadlock") in contributions[b][1]


def test_a_retracted_or_deleted_memory_leaves_and_its_sibling_stays(ctx):
    keep = write_memory(ctx, "The indexer depends on the write queue.").id
    gone = write_memory(ctx, "The scheduler depends on the write queue and uses cron_tab.py.").id
    dropped = write_memory(ctx, "The exporter uses the parquet writer.").id
    _apply(ctx, [keep, gone, dropped])
    store = ctx.store()
    with store.write():
        memories.set_status(store, gone, "retracted", reason="wrong", action="memory.retract")
    memories.delete(store, dropped)
    result = _apply(ctx, [gone, dropped])
    assert result.removed == 2
    _, contributions = _state(ctx)
    assert set(contributions) == {keep}
    assert ("indexer", "depends_on", "write queue") in contributions[keep][1]
    graph = _graph(ctx)
    try:
        names = {e.key for e in graph.all_entities(None, True)}
    finally:
        graph.close()
    assert "write queue" in names and "indexer" in names
    assert not {"scheduler", "cron_tab.py", "exporter", "parquet writer"} & names


def test_entity_name_and_type_follow_the_remaining_mentions(ctx):
    a = write_memory(ctx, "We moved the config into settings.toml yesterday.").id
    _apply(ctx, [a])
    graph = _graph(ctx)
    try:
        [entity] = graph.entities_by_key(["settings.toml"])
        assert (entity.name, entity.type, entity.memories) == ("settings.toml", "file", 1)
    finally:
        graph.close()


def test_merge_and_remove_correct_the_graph_and_extraction(ctx):
    a = write_memory(ctx, "The indexer depends on the write-queue.").id
    b = write_memory(ctx, "The exporter depends on the write queue.").id
    _apply(ctx, [a, b])
    store = ctx.store()
    concept_verdicts.add_alias(store, "write-queue", "write queue")
    concept_verdicts.suppress(store, "exporter", "noise")
    graph = _graph(ctx)
    try:
        with graph.write():
            assert graph.merge_entity("write-queue", "write queue") == 1
            assert graph.delete_entity("exporter") == 1
        merged = graph.contribution(a)
    finally:
        graph.close()
    assert ("indexer", "depends_on", "write queue") in merged[1]
    _apply(ctx, [a, b])  # a re-extraction resolves through the same verdicts
    _, contributions = _state(ctx)
    assert ("indexer", "depends_on", "write queue") in contributions[a][1]
    assert "exporter" not in contributions[b][0] and "write queue" in contributions[b][0]
    actions = [e.action for e in __import__("marm.store.events", fromlist=["x"]).recent(store, 10)]
    assert "concept.merge" in actions and "concept.suppress" in actions


def test_scope_filters_mentions_and_edges(ctx, tmp_path):
    from tests.helpers import git_init

    repo = git_init(tmp_path / "repo-a")
    here = write_memory(ctx, "The billing worker uses the ledger table.", project=str(repo)).id
    other = write_memory(ctx, "The search worker uses the ledger table.", project="other").id
    _apply(ctx, [here, other])
    graph = _graph(ctx)
    try:
        [ledger] = graph.entities_by_key(["ledger table"], str(repo), False)
        edges = graph.edges_of([ledger.id], str(repo), False, 10)
        wide = graph.edges_of([ledger.id], None, True, 10)
    finally:
        graph.close()
    assert ledger.memories == 1
    assert {m for e in edges for m in e.memory_ids} == {here}
    assert {m for e in wide for m in e.memory_ids} == {here, other}


def test_review_lists_likely_duplicates_until_dismissed(ctx):
    from marm.ops import concepts as ops
    from marm.store import events

    ids = [
        write_memory(ctx, text).id
        for text in (
            "The write_queue module batches inserts.",
            "WriteQueue flushes every 50 ms.",
            "The config-loader reads TOML files.",
            "We cache values in the config loader.",
        )
    ]
    _apply(ctx, ids)
    pairs = {(p.a, p.b) for p in ops.review(ctx).pairs}
    assert pairs == {("write_queue", "writequeue"), ("config loader", "config-loader")}
    ops.dismiss(ctx, "WriteQueue", "write_queue")
    after = {(p.a, p.b) for p in ops.review(ctx).pairs}
    assert after == {("config loader", "config-loader")}
    assert events.recent(ctx.store(), 1)[0].action == "concept.dismiss"


def test_merge_resolves_chains_and_can_be_flipped(ctx):
    from marm.ops import concepts as ops
    from marm.store import concept_verdicts

    ids = [
        write_memory(ctx, text).id
        for text in (
            "The indexer depends on the job queue.",
            "The exporter depends on the task queue.",
            "The mailer depends on the work queue.",
        )
    ]
    _apply(ctx, ids)
    ops.merge(ctx, "task queue", "job queue")
    ops.merge(ctx, "work queue", "task queue")  # job -> task -> work
    verdicts = concept_verdicts.load(ctx.store())
    assert verdicts.resolve("job queue") == "work queue"
    _apply(ctx, ids)
    _, contributions = _state(ctx)
    assert all("work queue" in contributions[i][0] for i in ids)
    flipped = ops.merge(ctx, "task queue", "work queue")  # change of mind: keep "task queue"
    assert flipped.details["canonical"] == "task queue"
    verdicts = concept_verdicts.load(ctx.store())
    assert {verdicts.resolve(k) for k in ("job queue", "work queue", "task queue")} == {
        "task queue"
    }
    _apply(ctx, ids)
    _, contributions = _state(ctx)
    assert all("task queue" in contributions[i][0] for i in ids)
    assert not any("work queue" in contributions[i][0] for i in ids)


def test_recall_walks_more_hops_with_depth(ctx):
    from marm.ops import concepts as ops

    ids = [
        write_memory(ctx, text).id
        for text in (
            "The indexer depends on the task queue.",
            "The task queue uses the lock manager.",
            "The lock manager depends on flock_helper.py.",
        )
    ]
    _apply(ctx, ids)
    one = ops.concept_recall(ctx, "indexer", depth=1)
    two = ops.concept_recall(ctx, "indexer", depth=2)
    three = ops.concept_recall(ctx, "what does the indexer depend on?", depth=3)
    hops = lambda r: {e.key: e.hop for e in r.entities}  # noqa: E731
    assert hops(one) == {"indexer": 0, "task queue": 1}
    assert hops(two) == {"indexer": 0, "task queue": 1, "lock manager": 2}
    assert hops(three)["flock_helper.py"] == 3
    assert {m.id for m in three.memories} == set(ids)
    assert [m.id for m in one.memories] == [ids[0]]


def test_recall_hides_a_retracted_memory_before_the_next_drain(ctx):
    from marm.ops import concepts as ops

    keep = write_memory(ctx, "The indexer depends on the task queue.").id
    wrong = write_memory(ctx, "The exporter depends on the task queue.").id
    _apply(ctx, [keep, wrong])
    store = ctx.store()
    with store.write():
        memories.set_status(store, wrong, "retracted", reason="false", action="memory.retract")
    result = ops.concept_recall(ctx, "task queue")
    assert [m.id for m in result.memories] == [keep]
    assert [(r.source, r.predicate, r.target) for r in result.relations] == [
        ("indexer", "depends_on", "task queue")
    ]


def test_recall_finds_identifiers_by_their_exact_text(ctx):
    from marm.ops import concepts as ops

    ids = [
        write_memory(ctx, text).id
        for text in (
            "The --max-seconds flag bounds run_drain() in marm/drain.py.",
            "WriteQueue.flush commits every 50 ms and uses _batch_rows.",
        )
    ]
    _apply(ctx, ids)
    for query, name, kind in (
        ("--max-seconds", "--max-seconds", "flag"),
        ("marm/drain.py", "marm/drain.py", "file"),
        ("WriteQueue.flush", "WriteQueue.flush", "symbol"),
        ("writequeue.flush", "WriteQueue.flush", "symbol"),
        ("`_batch_rows`", "_batch_rows", "symbol"),
    ):
        seeds = [e for e in ops.concept_recall(ctx, query).entities if e.hop == 0]
        assert [(e.name, e.type) for e in seeds] == [(name, kind)], query
