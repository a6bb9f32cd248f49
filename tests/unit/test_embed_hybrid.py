"""The hybrid lane with a fake encoder: scores, scope, trust filters, routing, fallback."""

from __future__ import annotations

from marm import drain, recall
from marm.errors import Unavailable
from marm.ops.memory import memory_filter, write_memory
from marm.recall import dates, hybrid
from marm.store import memories, recall_reads, vectors
from tests.embed_fake import use_fake


def _filter(ctx, project="p", **kw):
    return memory_filter(ctx, project=project, all_projects=False, **kw)


def _seed(ctx, n=30):
    ids = [write_memory(ctx, f"routine note {i} on the logging format and the linter", project="p").id
           for i in range(n)]
    drain.run(ctx, kinds=["embed"], sweeps=False)
    return ids


def test_hybrid_scores_are_in_unit_range_and_say_their_mode(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    _seed(ctx)
    # In a session of their own: the note written just before a match is credited with its
    # words (it may be what the match answers), which is not what this test is about.
    target = write_memory(ctx, "DECISION: the payment webhook uses idempotency keys", project="p", session="w").id
    related = write_memory(ctx, "the payment webhook retries with backoff", project="p", session="w").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    out = recall.run(ctx.store(), "payment webhook idempotency", _filter(ctx), 5, "auto")
    assert out.mode == "hybrid"
    assert [h.memory.id for h in out.hits][:2] == [target, related]
    assert all(h.retrieval_mode == "hybrid" and 0.0 <= h.score <= 1.0 for h in out.hits)
    assert out.hits[0].score > out.hits[1].score
    # The routine notes share no word with the query: noise, left out rather than listed.
    assert len(out.hits) == 2
    sem = recall.run(ctx.store(), "payment webhook idempotency", _filter(ctx), 5, "semantic")
    assert sem.mode == "semantic" and sem.hits[0].memory.id == target
    assert all(h.retrieval_mode == "semantic" and 0.0 <= h.score <= 1.0 for h in sem.hits)


def test_other_projects_and_retracted_memories_stay_out(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    _seed(ctx)
    right = write_memory(ctx, "the refund queue retries three times", project="p").id
    other = write_memory(ctx, "the refund queue retries five times", project="q").id
    retracted = write_memory(ctx, "the refund queue never retries", project="p").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store = ctx.store()
    with store.write():
        memories.set_status(store, retracted, "retracted", reason="wrong", action="memory.retract")
    got = [h.memory.id for h in recall.run(store, "refund queue retries", _filter(ctx), 10, "hybrid").hits]
    assert got[0] == right
    assert other not in got and retracted not in got
    wide = memory_filter(ctx, project=None, all_projects=True)
    got_all = [h.memory.id for h in recall.run(store, "refund queue retries", wide, 10, "hybrid").hits]
    assert right in got_all and other in got_all and retracted not in got_all


def test_session_kind_and_as_of_filters_apply_to_vector_candidates(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    _seed(ctx)
    a = write_memory(ctx, "cache warming happens at deploy", project="p", session="s1").id
    b = write_memory(ctx, "cache warming happens at boot", project="p", session="s2").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    got = [h.memory.id for h in recall.run(ctx.store(), "cache warming", _filter(ctx, session="s2"),
                                           5, "semantic").hits]
    assert got == [b] and a not in got


def test_an_unembedded_memory_competes_on_words(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    _seed(ctx)
    store = ctx.store()
    fresh = write_memory(ctx, "the sqlite busy timeout is fifteen seconds", project="p").id
    from marm.store import leases

    # A drain holds the lease, so the recall cannot embed the new memory first.
    with leases.hold(store, ctx.home, "drain", holder="test"):
        out = recall.run(store, "sqlite busy timeout", _filter(ctx), 5, "hybrid")
    assert out.mode == "hybrid" and out.hits[0].memory.id == fresh


def test_a_recall_that_loaded_the_model_embeds_a_bounded_batch(ctx, monkeypatch):
    fake = use_fake(monkeypatch, ctx)
    for i in range(recall.EMBED_ON_RECALL + 5):
        write_memory(ctx, f"pending memory {i} about flaky tests", project="p")
    store = ctx.store()
    from marm.store import outbox

    out = recall.run(store, "flaky tests", _filter(ctx), 5, "hybrid")
    assert outbox.pending(store, "embed") == 5
    assert [(m, n) for m, _dim, _v, n in vectors.by_model(store)] == [(fake.model, recall.EMBED_ON_RECALL)]
    assert fake.calls == 1  # the batch rode along with the query: one model call
    assert out.hits and all(h.meaning is not None for h in out.hits)


def test_routing_exact_for_syntax_and_lexical_only_without_a_model(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    _seed(ctx)
    lit = write_memory(ctx, "set RETRY_LIMIT=3 in the worker env", project="p").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    out = recall.run(ctx.store(), "RETRY_LIMIT", _filter(ctx), 5, "auto")
    assert out.mode == "exact" and [h.memory.id for h in out.hits] == [lit]
    assert recall.run(ctx.store(), "RETRY_LIMIT", _filter(ctx), 5, "lexical").mode == "lexical"

    import marm.embed.drain

    def unavailable(*_a, **_k):
        raise Unavailable("the model is gone")

    monkeypatch.setattr(marm.embed.drain, "encoder_soon", unavailable)
    out = recall.run(ctx.store(), "worker retry limit", _filter(ctx), 5, "hybrid")
    assert out.mode == "lexical_only" and "the model is gone" in out.note
    assert out.hits[0].memory.id == lit and out.hits[0].retrieval_mode == "lexical_only"


def test_names_and_dates_in_queries():
    assert hybrid.names_in("What did Caroline's team ship for PaymentService and retry_policy?") == [
        "Caroline", "PaymentService", "retry_policy"]
    assert hybrid.names_in("what did we decide about the cache?") == []
    [(start, end)] = dates.intervals("What did we decide on 7 July, 2023?")
    assert (start.isoformat()[:10], end.isoformat()[:10]) == ("2023-07-07", "2023-07-08")
    [(start, end)] = dates.intervals("the outage in March 2024")
    assert (start.isoformat()[:10], end.isoformat()[:10]) == ("2024-03-01", "2024-04-01")
    assert dates.intervals("what broke 2024-03-05?")[0][0].isoformat()[:10] == "2024-03-05"
    assert dates.intervals("how many retries?") == []
    spans = dates.intervals("in March 2024")
    assert dates.closeness("2024-03-15T10:00:00.000000Z", spans) == 1.0
    assert 0 < dates.closeness("2024-04-05T00:00:00.000000Z", spans) < 1.0
    assert dates.closeness(None, spans) == 0.0
    assert dates.asks_when("When did we switch to postgres?") and not dates.asks_when("why postgres?")
    assert dates.says_when("we switched last week") and dates.says_when("switched in May 2024")
    assert not dates.says_when("we may switch; this code is old")


def test_a_memory_dated_as_the_query_asks_ranks_first(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    _seed(ctx)
    march = write_memory(ctx, "we rolled back the release", project="p", valid_from="2024-03-05").id
    june = write_memory(ctx, "we rolled back the release", project="p2", valid_from="2024-06-05").id
    july = write_memory(ctx, "we rolled back the release again", project="p", valid_from="2024-07-09").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    got = [h.memory.id for h in recall.run(ctx.store(), "what did we roll back in March 2024?",
                                           _filter(ctx), 3, "hybrid").hits]
    assert got[0] == march and july in got and june not in got


def test_a_rare_name_counts_as_a_word_and_a_common_one_does_not(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    chatter = [write_memory(ctx, f"Ana: note {i} about the weekly sync and lunch", project="p").id
               for i in range(30)]
    elsewhere = [write_memory(ctx, f"Coco report {i} from another team", project="q").id for i in range(30)]
    coco = write_memory(ctx, "Ana: adopted a puppy called Coco", project="p").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store = ctx.store()
    # "Ana" is on every memory of the project: matched apart. "Coco" is on one of them
    # (common in another project, which is out of scope): it stays a word of the query.
    for flt, common in ((_filter(ctx), ["Ana"]), (_filter(ctx, project="q"), ["Coco"])):
        facts = recall_reads.facts(store, flt, names=["ana", "coco"], share=hybrid.COMMON_NAME)
        assert hybrid.common_names(facts, ["Ana", "Coco"]) == common
    got = [h.memory.id for h in recall.run(store, "When did Ana get Coco?", _filter(ctx), 5, "hybrid").hits]
    assert got[0] == coco and set(got[1:]) <= set(chatter) and not set(got) & set(elsewhere)


def test_the_reply_to_a_matching_question_is_found(ctx, monkeypatch):
    fake = use_fake(monkeypatch, ctx)
    _seed(ctx)
    write_memory(ctx, "Bo: the cron job runs nightly at two", project="p", session="s")
    write_memory(ctx, "Bo: how do we stop the cron job from running twice?", project="p", session="s")
    answer = write_memory(ctx, "Ana: a flock around the script does it", project="p", session="s").id
    for i in range(8):
        write_memory(ctx, f"Bo: cron job schedule note {i} for the nightly export", project="p", session="t")
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store, query = ctx.store(), "How do we stop the cron job running twice?"
    # The answer shares no word with the query; its question does.
    plain = hybrid.Weights(reply_words=0.0, reply_meaning=0.0, meaning=0.37)
    without = [h.memory.id for h in hybrid.search(store, ctx.home, fake, query, _filter(ctx), 3,
                                                   weights=plain)]
    got = [h.memory.id for h in recall.run(store, query, _filter(ctx), 3, "hybrid").hits]
    assert answer in got and answer not in without and len(without) == 3


def test_a_name_in_the_label_says_who_the_memory_is_about(ctx, monkeypatch):
    use_fake(monkeypatch, ctx)
    _seed(ctx)
    thanks = write_memory(ctx, "Ana: Bo, thanks for the fix to the deploy script", project="p").id
    own = write_memory(ctx, "Bo: fixed the deploy script", project="p").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    assert hybrid.lead_of("Bo: fixed it") == "Bo" and hybrid.lead_of("no label here") == "no label here"
    got = [h.memory.id for h in recall.run(ctx.store(), "What did Bo fix in the deploy script?",
                                           _filter(ctx), 5, "hybrid").hits]
    assert got[:2] == [own, thanks]


def test_a_batch_that_fails_leaves_its_tasks_for_the_drain_and_the_recall_answers(ctx, monkeypatch):
    fake = use_fake(monkeypatch, ctx)
    _seed(ctx, 5)
    new = write_memory(ctx, "the flaky test needs a fixed seed", project="p").id
    real = fake.embed

    def only_queries(texts):
        if len(texts) > 1:
            raise RuntimeError("a bad batch")
        return real(texts)

    monkeypatch.setattr(fake, "embed", only_queries)
    store = ctx.store()
    from marm.store import outbox

    out = recall.run(store, "flaky test seed", _filter(ctx), 5, "hybrid")
    assert out.mode == "hybrid" and out.hits[0].memory.id == new  # on its words
    assert outbox.pending(store, "embed") == 1
    assert outbox.parked(store, "embed") == [] and store.conn.execute(
        "SELECT attempts, lease_token FROM outbox WHERE kind = 'embed'").fetchall() == [(0, None)]
    monkeypatch.setattr(fake, "embed", real)
    drain.run(ctx, kinds=["embed"], sweeps=False)
    assert outbox.pending(store, "embed") == 0
