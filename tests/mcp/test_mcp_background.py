"""The server embeds in a background drain after writes, never on the request path.

The embed handler itself belongs to the embeddings layer; here a recording stand-in is
put in its place so that the server's part (when, where, how often, Busy) is tested.
"""

from __future__ import annotations

import sys
import threading
import time
import types

import pytest

from marm import drain
from marm.store import leases, outbox


@pytest.fixture
def embed_handler(monkeypatch):
    """Install a stand-in ``embed`` handler; returns its record of calls and a gate."""
    record = {"tasks": [], "threads": set(), "gate": threading.Event()}
    record["gate"].set()

    def process(ctx, tasks):
        record["gate"].wait(30)
        record["tasks"].extend(t.id for t in tasks)
        record["threads"].add(threading.current_thread().name)
        return {}

    module = types.ModuleType("marm_test_stand_in_embed")
    module.HANDLER = drain.Handler("embed", 16, process)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(drain.HANDLER_MODULES, "embed", module.__name__)
    return record


def test_a_write_is_embedded_in_the_background(srv, embed_handler, ctx):
    first = srv.ok("marm_log_entry", text="DECISION: shard the events table by month")
    srv.drain_idle()
    second = srv.ok("marm_log_entry", text="FIX: vacuum after the monthly shard rotation")
    srv.drain_idle()
    assert len(embed_handler["tasks"]) == 2
    assert embed_handler["threads"] == {"marm-embed-drain"}
    assert outbox.pending(ctx.store(), "embed") == 0
    assert first["id"] != second["id"]


def test_writes_do_not_wait_for_embedding_and_recall_finds_them_at_once(srv, embed_handler):
    embed_handler["gate"].clear()  # the encoder is "busy": every embed batch blocks
    try:
        stored = srv.ok("marm_log_entry", text="DECISION: the billing cron runs at 02:00 UTC")
        srv.ok("marm_log_entry", text="the docs site builds with mkdocs")
        hits = srv.ok("marm_smart_recall", query="billing cron", mode="lexical")["results"]
        assert hits[0]["id"] == stored["id"]
        assert embed_handler["tasks"] == []  # not embedded yet, still found
    finally:
        embed_handler["gate"].set()
    srv.drain_idle()
    assert len(embed_handler["tasks"]) == 2  # the write that came while draining is picked up too


def test_the_drain_waits_until_the_client_is_quiet(srv, embed_handler):
    srv.served.background.idle = srv.served.background.max_delay = 30  # a busy client
    first = srv.ok("marm_log_entry", text="DECISION: feature flags live in the config service")
    hits = srv.ok("marm_smart_recall", query="feature flags config", mode="lexical")["results"]
    assert hits[0]["id"] == first["id"]
    srv.ok("marm_summary")
    assert embed_handler["tasks"] == []  # nothing claimed under a recall's feet
    srv.drain_idle()
    assert len(embed_handler["tasks"]) == 1


def test_a_busy_client_does_not_postpone_the_drain_forever(srv, embed_handler):
    srv.served.background.idle, srv.served.background.max_delay = 30, 0.2
    srv.ok("marm_log_entry", text="FIX: the importer skipped rows with a BOM")
    deadline = time.monotonic() + 20
    while not embed_handler["tasks"] and time.monotonic() < deadline:
        srv.ok("marm_summary")  # calls keep coming, each one would push the drain back
    assert len(embed_handler["tasks"]) == 1


def test_another_drain_holding_the_lease_is_left_alone(srv, embed_handler, ctx):
    with leases.hold(ctx.store(), ctx.home, "drain", holder="marm drain (cron)"):
        srv.ok("marm_log_entry", text="NOTE: the nightly drain owns the lease")
        srv.drain_idle()
        assert embed_handler["tasks"] == []
        assert srv.served.errors == 0
    assert outbox.pending(ctx.store(), "embed") == 1  # left for the lease holder


def test_without_an_embed_handler_the_server_just_serves(srv, monkeypatch):
    monkeypatch.setitem(drain.HANDLER_MODULES, "embed", "marm.not_in_this_build_embed")
    stored = srv.ok("marm_log_entry", text="FIX: the logo renders blurry on retina screens")
    srv.drain_idle()
    assert srv.served.background._unavailable is True
    srv.ok("marm_log_entry", text="another write, no drain thread this time")
    assert srv.served.background._thread is None
    hits = srv.ok("marm_smart_recall", query="logo blurry")["results"]
    assert hits[0]["id"] == stored["id"]


@pytest.mark.slow
def test_the_real_encoder_embeds_in_the_server_before_any_recall(srv, ctx):
    pytest.importorskip("marm.embed.drain", reason="the embeddings layer is not in this build")
    moved = srv.ok("marm_log_entry", text="DECISION: we moved the job queue from Redis to Postgres")
    srv.ok("marm_log_entry", text="FIX: the logo renders blurry on retina screens")
    srv.drain_idle()
    assert outbox.pending(ctx.store(), "embed") == 0   # embedded in the background
    found = srv.ok("marm_smart_recall", query="which database backs background jobs",
                   mode="semantic")
    assert found["results"][0]["id"] == moved["id"]
    # A recall right after a write finds the new memory first, among embedded look-alikes.
    srv.served.background.idle = srv.served.background.max_delay = 30
    for i in range(4):
        srv.ok("marm_log_entry", text=f"NOTE: the flag{i}x guards the rollout of the billing page")
    srv.drain_idle()
    fresh = srv.ok("marm_log_entry", text="NOTE: the flag9x guards the rollout of the billing page")
    hits = srv.ok("marm_smart_recall", query="flag9x rollout billing")["results"]
    assert hits[0]["id"] == fresh["id"]


@pytest.mark.slow
def test_a_recall_right_after_a_write_embeds_the_new_memory_in_its_query_call(srv, ctx, monkeypatch):
    """The recall that follows a write at once (before the background drain) embeds the
    new memory together with its query, in one model call, finds it by meaning and
    words, and stores its vector for the recalls after it."""
    pytest.importorskip("marm.embed.drain", reason="the embeddings layer is not in this build")
    from marm import embed

    srv.served.background.idle = srv.served.background.max_delay = 30  # no drain in between
    for i in range(3):
        srv.ok("marm_log_entry", text=f"NOTE: the flag{i}x guards the rollout of the billing page")
    srv.ok("marm_smart_recall", query="billing page rollout", mode="hybrid")  # loads the model
    assert outbox.pending(ctx.store(), "embed") == 0
    calls: list[int] = []
    real = embed.Encoder.embed
    monkeypatch.setattr(embed.Encoder, "embed", lambda self, texts: calls.append(len(texts)) or real(self, texts))
    fresh = srv.ok("marm_log_entry", text="NOTE: the kestrel9 switch guards the rollout of the billing page")
    found = srv.ok("marm_smart_recall", query="kestrel9 switch rollout", mode="hybrid")
    assert found["results"][0]["id"] == fresh["id"]
    assert calls == [2]  # the query and the new memory: one call
    assert outbox.pending(ctx.store(), "embed") == 0  # its vector is stored
