"""The model-free parts of extraction: identifier pass, rule extractor, bounds, verdicts."""

from __future__ import annotations

from marm.concepts import identifiers, model, rules
from marm.concepts.model import MAX_EDGES, Extraction, Mention, Relation, finish
from marm.store.concept_verdicts import Verdicts


def _found(text: str) -> list[tuple[str, str]]:
    return [(i.text, i.type) for i in identifiers.find(text)]


def test_identifier_pass_finds_each_kind_with_exact_text():
    text = (
        "Set MARM_HOME and --max-seconds; write_queue.py calls WriteQueue.flush() via "
        "marm.store.db, run_drain() and getUserName in src/marm/db.py"
    )
    assert _found(text) == [
        ("MARM_HOME", "symbol"),
        ("--max-seconds", "flag"),
        ("write_queue.py", "file"),
        ("WriteQueue.flush", "symbol"),
        ("marm.store.db", "symbol"),
        ("run_drain", "symbol"),
        ("getUserName", "symbol"),
        ("src/marm/db.py", "file"),
    ]


def test_identifier_pass_leaves_prose_alone():
    assert _found("e.g. read/write or A/B testing; i.e. we rest. U.S. people") == []
    assert _found("call os.Exit and fmt.Println") == [("os.Exit", "symbol"), ("fmt.Println", "symbol")]


def test_predicates_match_exact_lemmas_never_substrings():
    assert rules.VERB_FORMS["causes"] == "cause"
    assert model.PREDICATES["cause"][0] == "causes"
    assert "caus" not in rules.VERB_FORMS and "abuse" not in rules.VERB_FORMS
    extraction = rules.extract_one("this change causes a deadlock")
    assert [(r.source, r.predicate, r.target) for r in extraction.relations] == [
        ("change", "causes", "deadlock")
    ]


def test_rule_extractor_on_the_issue_sentence():
    e = rules.extract_one(
        "Fixed the WAL lock contention by moving writes to one queue worker in write_queue.py"
    )
    keys = {m.key: m for m in e.mentions}
    assert {"wal lock contention", "queue worker", "write_queue.py"} <= set(keys)
    assert keys["write_queue.py"].name == "write_queue.py" and keys["write_queue.py"].type == "file"
    assert keys["wal lock contention"].type == "error"
    assert any(r.predicate == "fixes" and r.target == "wal lock contention" for r in e.relations)


def test_cooccurrence_is_bounded_per_sentence_not_every_pair():
    text = (
        "Alpha Service, Beta Cache, Gamma Queue, Delta Index, Epsilon Store, Zeta Log and "
        "Eta Router sit together"
    )
    e = rules.extract_one(text)
    assert len(e.mentions) >= 7
    related = [r for r in e.relations if r.predicate == model.RELATED]
    assert 0 < len(related) <= model.COOCCURRENCE_PER_SENTENCE


def test_finish_caps_edges_per_memory_keeping_typed_first():
    mentions = tuple(Mention(f"e{i}", f"E{i}", "concept", 0.9) for i in range(30))
    typed = [Relation("e0", "uses", f"e{i}", 1.0) for i in range(1, 4)]
    related = [Relation(f"e{i}", model.RELATED, f"e{i + 1}", 0.4) for i in range(29)]
    out = finish(Extraction(mentions, tuple(related + typed)), lambda k: k)
    assert len(out.relations) == MAX_EDGES
    assert [r.predicate for r in out.relations[:3]] == ["uses"] * 3


def test_finish_applies_aliases_and_suppressions():
    verdicts = Verdicts(
        aliases={"write-queue": "write queue"},
        suppressed=frozenset({"change"}),
        dismissed=frozenset(),
    )
    raw = Extraction(
        (
            Mention("write-queue", "write-queue", "concept", 0.7),
            Mention("change", "change", "concept", 0.5),
            Mention("deadlock", "deadlock", "error", 0.6),
            Mention("indexer", "indexer", "concept", 0.6),
        ),
        (
            Relation("change", "causes", "deadlock", 1.0),
            Relation("indexer", "uses", "write-queue", 1.0),
        ),
    )
    out = finish(raw, verdicts.resolve)
    assert {m.key for m in out.mentions} == {"write queue", "deadlock", "indexer"}
    assert [(r.source, r.predicate, r.target) for r in out.relations] == [
        ("indexer", "uses", "write queue")
    ]


def test_alias_chains_resolve_and_cycles_stop():
    v = Verdicts(
        aliases={"a": "b", "b": "c", "x": "y", "y": "x"},
        suppressed=frozenset({"z"}),
        dismissed=frozenset(),
    )
    assert v.resolve("a") == "c" and v.resolve("c") == "c"
    assert v.resolve("x") in ("x", "y")
    assert v.resolve("z") is None


def test_fallback_is_used_and_reported_without_spacy(monkeypatch):
    import marm.concepts
    from marm.concepts import indexer
    from marm.ops import system

    monkeypatch.setattr(marm.concepts, "spacy_model", lambda: None)
    monkeypatch.setattr(indexer, "spacy_model", lambda: None)
    assert indexer.extractor().name == "rules"
    part = next(c for c in system.components() if c.name == "concepts")
    assert not part.available and "rule-based" in part.detail
