"""One embedding engine per MCP server process, whatever comes first: a recall that
loads the model before the first background embedding, then the background drain,
then more recalls all use the same engine (the real model; engines counted as live
onnxruntime sessions and encoders loaded)."""

from __future__ import annotations

import gc
import sys

import pytest

from marm import embed
from marm.store import outbox

pytestmark = pytest.mark.slow


def _sessions() -> int:
    import onnxruntime

    gc.collect()
    return sum(isinstance(o, onnxruntime.InferenceSession) for o in gc.get_objects())


def _encoders(home) -> int:
    return sum(key[1] == str(home) for key in embed._LOADED)


def test_a_recall_before_the_first_background_embedding_loads_the_only_engine(srv, ctx, marm_home):
    before, had_fastembed = _sessions(), "fastembed" in sys.modules
    srv.served.background.idle = srv.served.background.max_delay = 30  # the drain waits
    first = srv.ok("marm_log_entry", text="DECISION: the billing cron runs at 02:00 UTC")["id"]
    hits = srv.ok("marm_smart_recall", query="when does billing run", mode="hybrid")
    assert hits["mode"] == "hybrid" and hits["results"][0]["id"] == first
    assert _encoders(marm_home) == 1 and _sessions() - before == 1
    second = srv.ok("marm_log_entry", text="FIX: the docs site builds with mkdocs again")["id"]
    srv.drain_idle()  # the background drain embeds with the engine the recall loaded
    assert outbox.pending(ctx.store(), "embed") == 0
    hits = srv.ok("marm_smart_recall", query="how is the documentation built", mode="hybrid")
    assert hits["results"][0]["id"] == second
    assert _encoders(marm_home) == 1 and _sessions() - before == 1
    assert ("fastembed" in sys.modules) == had_fastembed  # the drain did not load fastembed's engine
