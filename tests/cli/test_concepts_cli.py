"""The concept commands through the CLI (in-process: one spaCy load for the file, not one
per command): drain, verdicts that survive a rebuild of
the derived database, scoped recall, and a recall that needs no model."""

from __future__ import annotations

import subprocess
import sys

import pytest

from marm import config
from tests.helpers import git_init, invoke_marm

pytestmark = pytest.mark.slow

NOTES = [
    "Fixed the WAL lock contention by moving writes to one queue worker in write_queue.py",
    "The indexer depends on the task queue and uses SQLite WAL mode.",
    "The exporter depends on the job queue.",
]


def _ok(*args, **kw):
    r = invoke_marm(*args, **kw)
    assert r.code == 0, r.err
    return r.json()


def _names(result) -> set[str]:
    return {e["key"] for e in result["entities"]}


def test_remove_and_merge_survive_a_rebuild_from_an_empty_derived_db(tmp_path, marm_home):
    for note in NOTES:
        _ok("log", note, cwd=tmp_path)
    drained = _ok("drain", "--kind", "concepts", cwd=tmp_path)
    assert drained["kinds"]["concepts"]["done"] == 3

    before = _ok("concepts", "recall", "WAL lock contention", cwd=tmp_path)
    assert {"wal lock contention", "queue worker", "write_queue.py"} <= _names(before)

    removed = _ok("concepts", "remove", "queue worker", "--reason", "too vague", cwd=tmp_path)
    assert removed["details"]["memories"] == "1"
    merged = _ok("concepts", "merge", "task queue", "job queue", cwd=tmp_path)
    assert merged["details"] == {"alias": "job queue", "canonical": "task queue", "memories": "1"}

    derived = config.derived_path(marm_home)
    for suffix in ("", "-wal", "-shm"):
        (derived.parent / (derived.name + suffix)).unlink(missing_ok=True)
    built = _ok("concepts", "build", "--all", cwd=tmp_path)
    assert built["memories"] == 3 and built["extractor"] == "spacy"

    after = _ok("concepts", "recall", "WAL lock contention", cwd=tmp_path)
    assert "queue worker" not in _names(after)
    assert {"wal lock contention", "write_queue.py"} <= _names(after)
    assert any(r["predicate"] == "fixes" for r in after["relations"])
    assert _ok("concepts", "recall", "queue worker", cwd=tmp_path)["entities"] == []

    queue = _ok("concepts", "recall", "job queue", cwd=tmp_path)
    seeds = [e for e in queue["entities"] if e["hop"] == 0]
    assert [e["key"] for e in seeds] == ["task queue"] and seeds[0]["memories"] == 2
    depends = {(r["source"], r["predicate"], r["target"]) for r in queue["relations"]}
    assert {
        ("indexer", "depends_on", "task queue"),
        ("exporter", "depends_on", "task queue"),
    } <= depends

    _ok("log", "The WriteQueue class owns the write queue of the indexer.", cwd=tmp_path)
    _ok("drain", "--kind", "concepts", cwd=tmp_path)
    review = _ok("concepts", "review", cwd=tmp_path)
    pairs = {(p["a"], p["b"]) for p in review["pairs"]}
    assert ("write queue", "writequeue") in pairs  # the review lists real candidates ...
    assert all("job queue" not in pair for pair in pairs)  # ... but never a merged name


def test_concept_recall_is_scoped_to_the_project_plus_global(tmp_path):
    a, b = git_init(tmp_path / "alpha"), git_init(tmp_path / "beta")
    mine = _ok("log", "The billing worker depends on the ledger table.", cwd=a)["id"]
    theirs = _ok("log", "The search worker depends on the ledger table.", cwd=b)["id"]
    shared = _ok("log", "The ledger table uses ledger_schema.sql.", cwd=tmp_path)["id"]
    _ok("drain", "--kind", "concepts", cwd=tmp_path)

    here = _ok("concepts", "recall", "ledger table", cwd=a)
    ids = {m["id"] for m in here["memories"]}
    assert mine in ids and shared in ids and theirs not in ids
    assert "billing worker" in _names(here) and "search worker" not in _names(here)
    wide = _ok("concepts", "recall", "ledger table", "--all-projects", cwd=a)
    assert {mine, theirs, shared} <= {m["id"] for m in wide["memories"]}


def test_a_deleted_memory_leaves_the_graph_at_the_next_drain(tmp_path):
    keep = _ok("log", "The indexer depends on the task queue.", cwd=tmp_path)["id"]
    gone = _ok("log", "The exporter depends on the task queue.", cwd=tmp_path)["id"]
    _ok("drain", "--kind", "concepts", cwd=tmp_path)
    _ok("delete", "memory", str(gone), cwd=tmp_path)
    _ok("drain", "--kind", "concepts", cwd=tmp_path)
    result = _ok("concepts", "recall", "task queue", cwd=tmp_path)
    assert "indexer" in _names(result) and "exporter" not in _names(result)
    assert [m["id"] for m in result["memories"]] == [keep]


def test_concept_recall_imports_no_model_and_status_names_the_extractor(tmp_path):
    code = (
        "import sys\n"
        "from marm.cli import main\n"
        "try:\n    main(['concepts', 'recall', 'task queue', '--json'])\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "heavy = [m for m in ('spacy', 'thinc', 'fastembed', 'onnxruntime', 'numpy') if m in sys.modules]\n"
        "print(heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("[]")
    status = _ok("status", cwd=tmp_path)
    part = next(c for c in status["components"] if c["name"] == "concepts")
    assert part["available"] and "en_core_web_sm" in part["detail"]


def test_recall_graph_context_is_opt_in_bounded_and_leaves_the_ranking_alone(tmp_path):
    repo, other = git_init(tmp_path / "repo"), git_init(tmp_path / "other")
    ids = [
        _ok("log", text, cwd=repo)["id"]
        for text in (
            "The indexer depends on the task queue and uses SQLite WAL mode.",
            "The exporter depends on the task queue.",
            "Fixed the WAL lock contention by moving writes to one queue worker in write_queue.py",
        )
    ]
    _ok("log", "The billing service depends on the task queue.", cwd=other)
    _ok("drain", "--kind", "concepts", cwd=repo)
    plain = _ok("recall", "task queue", cwd=repo)
    with_graph = _ok("recall", "task queue", "--graph", cwd=repo)
    assert [r["id"] for r in plain["results"]] == [r["id"] for r in with_graph["results"]]
    assert [r["score"] for r in plain["results"]] == [r["score"] for r in with_graph["results"]]
    assert plain["graph_context"] is None
    context = with_graph["graph_context"]
    triples = {(r["source"], r["predicate"], r["target"]) for r in context["relations"]}
    assert ("indexer", "depends_on", "task queue") in triples
    assert ("exporter", "depends_on", "task queue") in triples
    assert not any(r["source"] == "billing service" for r in context["relations"])
    assert all(set(r["memory_ids"]) <= set(ids) for r in context["relations"])
    assert 0 < len(context["entities"]) <= 8 and len(context["relations"]) <= 12
