"""What must never be on the remote, scanned byte by byte, beside what must be there:
a forgotten text (erased from the server and from every store at its next sync),
`<private>` spans, secrets, unshared projects and global memories."""

from __future__ import annotations

import orjson

from marm.ops import review as review_ops
from marm.ops import transfer as transfer_ops
from marm.context import Ctx
from marm.ops.memory import write_memory
from marm.store import events
from tests.sync.helpers import PROJECT, server_text, store_bytes

KEPT = "NOTE: the kept fact about zebra-crossing deploys"
GONE = "NOTE: the customer list lives in bucket quokka-payroll-7731"


def test_forget_travels_as_erasure_to_the_server_and_every_store(stores):
    s = stores(3)
    s.log(0, KEPT)
    s.log(0, GONE)
    s.sync(0)
    s.sync(1)                      # store 1 has both; store 2 has not synced yet
    assert "quokka-payroll-7731" in server_text(s.url)
    review_ops.forget(s.ctxs[1], s.id_of(1, GONE), "personal data")   # forgotten where it was pulled
    s.sync(1)
    server = server_text(s.url)
    assert "quokka-payroll-7731" not in server and "zebra-crossing" in server
    assert "memory.forget" in server                                    # the tombstone stays
    s.sync(0)
    s.sync(2)
    s.sync(1)
    for i, home in enumerate(s.homes):
        s.ctxs[i].close()          # let every file settle (WAL checkpointed on close)
        blob = store_bytes(home)
        assert b"quokka-payroll-7731" not in blob, f"store {i} still holds the text"
        assert b"zebra-crossing" in blob, f"store {i} lost the kept text"
    assert [m[0] for m in s.state(0)["memories"]] == [KEPT]
    assert s.state(0) == s.state(1) == s.state(2)
    # The stores that had it keep its history, without the text; store 2 never got it.
    for i in range(2):
        forgets = events.recent(s.ctxs[i].store(), action="memory.forget")
        assert len(forgets) == 1 and forgets[0].before_hash
    assert events.recent(s.ctxs[2].store(), action="memory.forget") == []


def test_a_text_forgotten_then_written_elsewhere_is_erased_there_too(stores):
    s = stores(2)
    s.log(0, KEPT)
    s.log(0, GONE)
    s.log(1, GONE)                 # the same text, written independently
    review_ops.forget(s.ctxs[0], s.id_of(0, GONE))
    s.sync(0)
    s.sync(1)
    s.sync(0)
    assert [m[0] for m in s.state(1)["memories"]] == [KEPT]
    assert s.state(0) == s.state(1)


def test_private_spans_unshared_projects_and_global_memories_never_reach_the_server(stores, tmp_path):
    s = stores(2)
    shared = write_memory(s.ctxs[0], "DECISION: rotate keys monthly <private>ocelot-home-address</private>"
                                     " key AKIAABCDEFGHIJKLMNOP here")
    assert shared.private_spans_dropped == 1 and shared.redacted
    write_memory(s.ctxs[0], "NOTE: unshared project detail marmoset-internal", project="not-shared")
    # Outside any project (no MARM_PROJECT, not in a repository): a global memory.
    outside = Ctx(source="cli", cwd=s.ctxs[0].cwd,
                  env={k: v for k, v in s.ctxs[0].env.items() if k != "MARM_PROJECT"})
    write_memory(outside, "NOTE: a global note tapir-global")
    outside.close()
    # An import can bring in text that was never cleaned: push cleans it again.
    dump = tmp_path / "in.jsonl"
    header = {"type": "marm-export", "version": 1}
    raw = {"type": "memory", "id": 900, "content": "NOTE: imported with ghp_" + "a" * 36,
           "content_hash": "h-imported", "kind": "note", "session": None, "project": PROJECT,
           "platform": None, "source": "cli", "recorded_at": "2026-01-01T00:00:00.000000Z",
           "valid_from": None, "valid_to": None, "status": "active", "status_reason": None,
           "superseded_by": None, "metadata": {}}
    dump.write_bytes(orjson.dumps(header) + b"\n" + orjson.dumps(raw) + b"\n")
    transfer_ops.import_(s.ctxs[0], str(dump))
    s.sync(0)
    s.sync(1)
    server = server_text(s.url)
    assert "rotate keys monthly" in server and "NOTE: imported with" in server   # the right rows are there
    for never in ("ocelot-home-address", "AKIAABCDEFGHIJKLMNOP", "marmoset-internal", "tapir-global",
                  "ghp_" + "a" * 36, "<private>"):
        assert never not in server, never
    texts = [m[0] for m in s.state(1)["memories"]]
    assert any("rotate keys monthly" in t for t in texts) and any("imported with" in t for t in texts)
    everything = [c for (c,) in s.ctxs[1].store().conn.execute("SELECT content FROM memories")]
    assert len(everything) == 2 and not any("marmoset" in t or "tapir" in t for t in everything)
