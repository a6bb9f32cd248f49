"""The spaCy extractor: noun phrases, names and subject-verb-object relations.

The English pipeline is loaded once per process, on first use, with the named-entity
recogniser switched off in the main pass: it costs as much as the rest of the pipeline.
It runs afterwards only on the documents that contain a capitalised proper noun, to
tell people from places and organisations. Identifiers (``write_queue.py``,
``--max-seconds``) are merged into single tokens before tagging and parsing, so the
parser sees them as the nouns they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import spacy
from spacy.language import Language
from spacy.tokens import Doc, Span, Token

from marm.concepts import identifiers, spacy_model
from marm.concepts.model import (
    GENERIC,
    MAX_TEXT_CHARS,
    PREDICATES,
    TOOLS,
    Extraction,
    Mention,
    Relation,
    cooccurrence,
    merge_mentions,
    phrase_type,
)

BATCH = 256
_SKIP_LEAD = frozenset("DET PRON NUM PUNCT CCONJ PART SYM X SPACE".split())
_QUANTIFIERS = frozenset(
    "some any many much more most several few all each every other another such own same"
    " various certain whole entire lots".split()
)
_NER_TYPES = {"PERSON": "person", "ORG": "org", "GPE": "place", "LOC": "place", "FAC": "place",
              "NORP": "org", "PRODUCT": "tool", "EVENT": "concept", "WORK_OF_ART": "concept"}
_MEANS = frozenset(("by", "via", "through", "with", "using"))
_IDS = "marm_ids"
_ARGS = frozenset(("nsubj", "nsubjpass", "dobj", "obj", "pobj", "attr"))


@Language.component("marm_identifiers")
def merge_identifiers(doc: Doc) -> Doc:
    """Make each identifier one token and remember its type (``doc.user_data``)."""
    found = identifiers.find(doc.text)
    spans = [s for i in found if (s := doc.char_span(i.start, i.end, alignment_mode="expand"))]
    if spans:
        with doc.retokenize() as retok:
            last = -1
            for span in spans:
                if span.start > last and len(span) > 1:
                    retok.merge(span)
                last = max(last, span.end - 1)
    types: dict[int, tuple[str, str]] = {}
    for i in found:
        span = doc.char_span(i.start, i.end, alignment_mode="expand")
        if span is not None and len(span) == 1:
            types[span.start] = (i.text, i.type)
    doc.user_data[_IDS] = types
    return doc


class SpacyExtractor:
    name = "spacy"

    def __init__(self, model: str) -> None:
        self.model = model
        self.nlp = spacy.load(model, exclude=["senter"], disable=["ner"])
        self.nlp.add_pipe("marm_identifiers", first=True)
        self.ner = self.nlp.get_pipe("ner")

    def extract(self, texts: Iterable[str]) -> Iterator[Extraction]:
        """One raw extraction per text, in order (verdicts and bounds come later)."""
        chunk: list[Doc] = []
        for doc in self.nlp.pipe((t[:MAX_TEXT_CHARS] for t in texts), batch_size=BATCH):
            chunk.append(doc)
            if len(chunk) >= BATCH:
                yield from self._finish(chunk)
                chunk = []
        yield from self._finish(chunk)

    def _finish(self, docs: list[Doc]) -> Iterator[Extraction]:
        named = [d for d in docs if _has_name(d)]
        if named:
            for _ in self.ner.pipe(named, batch_size=BATCH):
                pass
        for doc in docs:
            yield _extract(doc)


def _has_name(doc: Doc) -> bool:
    ids = doc.user_data.get(_IDS, {})
    return any(t.pos_ == "PROPN" and t.text[:1].isupper() and t.text[1:].islower()
               and t.i not in ids and t.lower_ not in TOOLS for t in doc)


def _extract(doc: Doc) -> Extraction:
    ids: dict[int, tuple[str, str]] = doc.user_data.get(_IDS, {})
    by_token: dict[int, Mention] = {}
    for i, (text, kind) in ids.items():
        by_token[i] = Mention(text.lower(), text, kind, 0.9 if kind in ("flag", "url") else 1.0)
    ent_type = {t.i: _NER_TYPES.get(e.label_) for e in doc.ents for t in e}
    for chunk in doc.noun_chunks:
        mention = _chunk_mention(chunk, ids, ent_type)
        if mention is None:
            continue
        for t in chunk:
            by_token.setdefault(t.i, mention)
    for t in doc:  # arguments the parser left outside any noun chunk ("depends on sqlite")
        if t.i not in by_token and t.dep_ in _ARGS and t.pos_ in ("NOUN", "PROPN", "ADJ", "X") \
                and t.is_alpha and not t.is_stop and len(t) > 1:
            head = t.lemma_.lower() if t.pos_ == "NOUN" else t.lower_
            if head not in GENERIC:
                by_token[t.i] = Mention(head, t.text, phrase_type([head], head), 0.5)
    relations: list[Relation] = []
    linked: set[frozenset[str]] = set()
    for sent in doc.sents:
        sentence = [by_token[t.i] for t in sent if t.i in by_token]
        for verb in sent:
            if verb.pos_ in ("VERB", "AUX") and verb.lemma_.lower() in PREDICATES:
                for r in _svo(verb, by_token):
                    relations.append(r)
                    linked.add(frozenset((r.source, r.target)))
        relations.extend(cooccurrence(sentence, linked))
    return Extraction(tuple(merge_mentions(list(by_token.values())).values()), tuple(relations))


def _chunk_mention(chunk: Span, ids: dict[int, tuple[str, str]],
                   ent_type: dict[int, str | None]) -> Mention | None:
    root = chunk.root
    if root.i in ids or root.pos_ == "PRON":
        return None
    tokens = [t for t in chunk if t.i not in ids]
    while tokens and (tokens[0].pos_ in _SKIP_LEAD or tokens[0].lower_ in _QUANTIFIERS
                      or tokens[0].dep_ == "poss"):
        tokens = tokens[1:]
    tokens = [t for t in tokens if not t.is_punct]
    if not tokens or len(tokens) > 6 or tokens[-1].i != root.i:
        return None
    words = [t.lower_ for t in tokens[:-1]]
    head = root.lemma_.lower() if root.pos_ == "NOUN" else root.lower_
    words.append(head)
    key = " ".join(words).strip("-'\"")
    if len(key) < 2 or key in GENERIC or all(t.is_stop for t in tokens):
        return None
    proper = root.pos_ == "PROPN"
    kind = (ent_type.get(root.i) if proper else None) or phrase_type(words, head)
    salience = 0.7 if proper else 0.45
    if len(tokens) > 1:
        salience += 0.15
    if kind in ("error", "person", "decision"):
        salience += 0.1
    if root.dep_ in ("nsubj", "nsubjpass", "dobj", "pobj"):
        salience += 0.05
    name = " ".join(t.text for t in tokens)
    return Mention(key, name, kind, round(min(salience, 1.0), 3))


def _svo(verb: Token, by_token: dict[int, Mention]) -> list[Relation]:
    """Typed relations of one verb whose lemma is in ``PREDICATES`` (exact match)."""
    predicate, prep = PREDICATES[verb.lemma_.lower()]
    children = list(verb.children)
    passive = any(c.dep_ in ("nsubjpass", "auxpass") for c in children)
    subjects: list[Token] = []
    objects: list[Token] = []
    for c in children:
        if c.dep_ in ("nsubj", "csubj") and not passive:
            subjects.append(c)
        elif c.dep_ == "nsubjpass":
            objects.append(c)
        elif c.dep_ == "agent" and passive:
            subjects.extend(g for g in c.children if g.dep_ == "pobj")
        elif c.dep_ in ("dobj", "obj", "attr") and not passive:
            objects.append(c)
        elif c.dep_ == "prep" and (prep is None and not objects or c.lower_ == prep):
            if prep is not None or c.lower_ not in _MEANS:
                objects.extend(g for g in c.children if g.dep_ == "pobj")
    if not subjects and verb.dep_ in ("conj", "xcomp") and verb.head.pos_ in ("VERB", "AUX"):
        subjects = [c for c in verb.head.children if c.dep_ in ("nsubj", "csubj")]
    sources = _mentions(subjects, by_token)
    if not sources:
        sources = _means(children, by_token)
    targets = _mentions(objects, by_token)
    return [Relation(s.key, predicate, t.key, 1.0) for s in sources for t in targets if s.key != t.key]


def _mentions(tokens: list[Token], by_token: dict[int, Mention]) -> list[Mention]:
    """The mentions of ``tokens`` and of the tokens joined to them by ``and``/``or``."""
    out: dict[str, Mention] = {}
    for t in tokens:
        for u in (t, *[c for c in t.children if c.dep_ == "conj"]):
            m = by_token.get(u.i)
            if m is not None:
                out[m.key] = m
    return list(out.values())[:3]


def _means(children: list[Any], by_token: dict[int, Mention]) -> list[Mention]:
    """With no subject ("Fixed X by moving writes to a queue worker"), the agent is
    the means: the two most salient mentions of a ``by``/``via``/``with`` clause."""
    found: dict[str, Mention] = {}
    for c in children:
        if c.dep_ == "prep" and c.lower_ in _MEANS:
            for t in c.subtree:
                m = by_token.get(t.i)
                if m is not None:
                    found[m.key] = m
    return sorted(found.values(), key=lambda m: -m.salience)[:2]


_LOADED: SpacyExtractor | None = None


def load() -> SpacyExtractor | None:
    """The process's extractor, loaded on first use; None when no pipeline is installed."""
    global _LOADED
    if _LOADED is None:
        model = spacy_model()
        if model is None:
            return None
        _LOADED = SpacyExtractor(model)
    return _LOADED
