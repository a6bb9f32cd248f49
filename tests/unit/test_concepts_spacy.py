"""Extraction with the real spaCy pipeline (the sentences of the issue)."""

from __future__ import annotations

import pytest

from marm.concepts import indexer
from marm.concepts.model import MAX_EDGES, RELATED, finish

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def spacy_extractor():
    extractor = indexer.extractor()
    assert extractor.name == "spacy", "the English pipeline is a dependency and must load"
    return extractor


def _one(extractor, text):
    [raw] = list(extractor.extract([text]))
    return finish(raw, lambda k: k)


def test_the_wal_sentence_yields_its_entities_and_a_fixes_relation(spacy_extractor):
    e = _one(
        spacy_extractor,
        "Fixed the WAL lock contention by moving writes to one queue worker in write_queue.py",
    )
    keys = {m.key: m for m in e.mentions}
    assert {"wal lock contention", "queue worker", "write_queue.py"} <= set(keys)
    assert keys["write_queue.py"].type == "file" and keys["write_queue.py"].name == "write_queue.py"
    assert keys["wal lock contention"].type == "error"
    assert keys["wal lock contention"].name == "WAL lock contention"
    fixes = [(r.source, r.target) for r in e.relations if r.predicate == "fixes"]
    assert fixes and all(target == "wal lock contention" for _, target in fixes)
    assert {s for s, _ in fixes} <= {"queue worker", "write_queue.py"}


def test_causes_is_not_read_as_uses(spacy_extractor):
    e = _one(spacy_extractor, "this change causes a deadlock")
    assert [(r.source, r.predicate, r.target) for r in e.relations] == [
        ("change", "causes", "deadlock")
    ]
    assert {m.key: m.type for m in e.mentions}["deadlock"] == "error"


def test_depends_on_passive_and_conjoined_verbs(spacy_extractor):
    e = _one(spacy_extractor, "The indexer depends on the write queue and uses SQLite WAL mode.")
    triples = {(r.source, r.predicate, r.target) for r in e.relations}
    assert ("indexer", "depends_on", "write queue") in triples
    assert ("indexer", "uses", "sqlite wal mode") in triples
    e = _one(spacy_extractor, "The old lock manager was replaced by the write queue.")
    assert ("write queue", "replaces", "old lock manager") in {
        (r.source, r.predicate, r.target) for r in e.relations
    }


def test_identifiers_become_single_entities_with_exact_text(spacy_extractor):
    e = _one(spacy_extractor, "Set MARM_HOME and pass --max-seconds to run_drain() in marm.drain")
    names = {m.name: m.type for m in e.mentions}
    assert names["MARM_HOME"] == "symbol" and names["--max-seconds"] == "flag"
    assert names["run_drain"] == "symbol" and names["marm.drain"] == "symbol"


def test_no_memory_yields_more_than_a_bounded_number_of_edges(spacy_extractor):
    long = " ".join(
        f"The {a} service talks to the {b} cache, the {c} queue and the {d} index while the"
        f" {a} worker uses the {b} store."
        for a, b, c, d in [
            ("alpha", "beta", "gamma", "delta"),
            ("epsilon", "zeta", "eta", "theta"),
            ("iota", "kappa", "lambda", "mu"),
            ("nu", "xi", "omicron", "pi"),
        ]
        * 3
    )
    e = _one(spacy_extractor, long)
    assert len(e.mentions) >= 15
    assert 0 < len(e.relations) <= MAX_EDGES
    pairs = len(e.mentions) * (len(e.mentions) - 1) // 2
    assert len([r for r in e.relations if r.predicate == RELATED]) < pairs / 10
