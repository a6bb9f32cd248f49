"""The spaCy extractor: noun phrases, names and subject-verb-object relations.

The English pipeline is loaded once per process, on first use, with the named-entity
recogniser switched off in the main pass: it costs as much as the rest of the pipeline.
It runs afterwards only on the documents with a capitalised proper noun the process has
not met before, to tell people from places and organisations; names it has met keep
the type the recogniser gave them. Identifiers (``write_queue.py``,
``--max-seconds``) are merged into single tokens before tagging and parsing, so the
parser sees them as the nouns they are.
"""

from __future__ import annotations

import json
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
_SKIP_LEAD = frozenset("DET PRON NUM PUNCT CCONJ SCONJ PART SYM X SPACE ADV ADP AUX INTJ".split())
_QUANTIFIERS = frozenset(
    "some any many much more most several few all each every other another such own same"
    " various certain whole entire lots".split()
)
_NER_TYPES = {
    "PERSON": "person",
    "ORG": "org",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "NORP": "org",
    "PRODUCT": "tool",
    "EVENT": "concept",
    "WORK_OF_ART": "concept",
}
_MEANS = frozenset(("by", "via", "through", "with", "using"))
_EDGE_PUNCT = "-'\"`.,;:!?*_~#()[]{}<>"
_IDS = "marm_ids"
_NAMES = "marm_names"
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
        token = doc.char_span(i.start, i.end, alignment_mode="expand")
        if token is not None and len(token) == 1:
            types[token.start] = (i.text, i.type)
    doc.user_data[_IDS] = types
    return doc


class SpacyExtractor:
    name = "spacy"

    def __init__(self, model: str) -> None:
        self.model = model
        self.nlp = spacy.load(
            model, exclude=["senter"], disable=["ner", "attribute_ruler", "lemmatizer"]
        )
        self.nlp.add_pipe("marm_identifiers", first=True)
        self.attributes = _Attributes(self.nlp.get_pipe("attribute_ruler"), self.nlp.vocab)
        self.lemmatizer = self.nlp.get_pipe("lemmatizer")
        self.ner: Any = self.nlp.get_pipe("ner")  # typed as a bare callable; the NER pipe has .pipe()
        #: Capitalised proper noun -> entity type the recogniser gave it (None: no entity).
        #: Names recur (people, projects), so most documents need no recogniser pass.
        self.seen: dict[str, str | None] = {}

    def extract(self, texts: Iterable[str]) -> Iterator[Extraction]:
        """One raw extraction per text, in order (verdicts and bounds come later)."""
        chunk: list[Doc] = []
        for doc in self.nlp.pipe((t[:MAX_TEXT_CHARS] for t in texts), batch_size=BATCH):
            chunk.append(self.attributes.lemmatize(self.lemmatizer(self.attributes(doc))))
            if len(chunk) >= BATCH:
                yield from self._finish(chunk)
                chunk = []
        yield from self._finish(chunk)

    def _finish(self, docs: list[Doc]) -> Iterator[Extraction]:
        unknown = [d for d in docs if self._names(d)]
        if unknown:
            for doc in self.ner.pipe(unknown, batch_size=BATCH):
                self._learn(doc)
        for doc in docs:
            yield _extract(doc)

    def _names(self, doc: Doc) -> bool:
        """Label the doc's capitalised proper nouns from names seen before; True when
        one is new, so the recogniser has to read this document."""
        ids = doc.user_data.get(_IDS, {})
        known: dict[int, str | None] = {}
        for t in doc:
            if (
                t.pos_ == "PROPN"
                and t.text[:1].isupper()
                and t.text[1:].islower()
                and t.i not in ids
                and t.lower_ not in TOOLS
            ):
                if t.text not in self.seen:
                    return True
                known[t.i] = self.seen[t.text]
        doc.user_data[_NAMES] = known
        return False

    def _learn(self, doc: Doc) -> None:
        labels = {t.i: _NER_TYPES.get(e.label_) for e in doc.ents for t in e}
        doc.user_data[_NAMES] = labels
        if len(self.seen) > 20_000:
            self.seen.clear()
        for t in doc:  # keep the most telling label a name was ever given
            if t.pos_ == "PROPN" and t.text[:1].isupper() and t.text[1:].islower():
                if labels.get(t.i) or t.text not in self.seen:
                    self.seen[t.text] = labels.get(t.i)


class _Attributes:
    """The pipeline's attribute ruler (tag -> part of speech and morphology, plus word
    exceptions) as dictionary lookups and a few rules in code. The ruler runs ~180
    patterns through the matcher on every token, a third of the pipeline's time.
    Patterns not recognised here (another model version) still go through a ruler;
    pronoun-case morphology and dialect lemmas (``goin'``), which extraction never
    reads, are left out."""

    def __init__(self, ruler: Any, vocab: Any) -> None:
        from spacy.pipeline import AttributeRuler

        self.by_tag: dict[str, dict[str, str]] = {}
        self.by_word: dict[tuple[str, str], dict[str, str]] = {}
        self.lemmas: dict[str, str] = {}
        rest = []
        for entry in ruler.patterns:
            keys = _single_tokens(entry["patterns"])
            word = _single_word(entry)
            if word is not None:
                self.lemmas[word] = entry["attrs"]["LEMMA"]
                continue
            if keys is None:
                if not _handled(entry):
                    rest.append(entry)
                continue
            for lower, tag in keys:
                target = (
                    self.by_tag.setdefault(tag, {})
                    if lower is None
                    else self.by_word.setdefault((lower, tag), {})
                )
                target.update(entry["attrs"])
        self.rest = None
        if rest:
            self.rest = AttributeRuler(vocab, name="marm_attribute_rest")
            self.rest.add_patterns(rest)

    def __call__(self, doc: Doc) -> Doc:
        for t in doc:
            tag, dep = t.tag_, t.dep_
            for attrs in (self.by_tag.get(tag), self.by_word.get((t.lower_, tag))):
                if attrs:
                    for name, value in attrs.items():
                        if name == "POS":
                            t.pos_ = value
                        elif name == "MORPH":
                            t.set_morph(None if value == "_" else value)  # type: ignore[attr-defined]  # not in token.pyi
                        elif name == "LEMMA":
                            t.lemma_ = value
                        elif name == "TAG":
                            t.tag_ = value
            if t.is_space:
                t.tag_, t.pos_ = "_SP", "SPACE"
            elif tag == "_SP":
                t.pos_ = "X"
            elif dep in ("aux", "auxpass") and tag not in ("TO", ""):
                t.pos_ = "AUX"
            elif dep in _MAIN_DEPS and t.lower_ in _DO_HAVE:
                t.pos_ = "VERB"
            elif tag == "IN" and dep == "mark":
                t.pos_ = "SCONJ"
            elif tag in ("DT", "WDT") and dep not in ("det", "quantmod", ""):
                t.pos_ = "PRON"
            elif tag == "CC" and dep == "advmod" and t.lower_ == "but":
                t.pos_ = "ADV"
            elif dep == "expl" and t.i + 1 < len(doc) and doc[t.i + 1].lower_ in _BE:
                doc[t.i + 1].pos_ = "VERB"
        return doc if self.rest is None else self.rest(doc)

    def lemmatize(self, doc: Doc) -> Doc:
        """After the lemmatizer: the word exceptions (``'ll`` -> will)."""
        if self.lemmas:
            for t in doc:
                lemma = self.lemmas.get(t.lower_)
                if lemma is not None:
                    t.lemma_ = lemma
        return doc


def _single_word(entry: dict) -> str | None:
    """The word of a one-token ``{"LOWER": word}`` -> lemma pattern, else None."""
    patterns = entry["patterns"]
    if set(entry["attrs"]) == {"LEMMA"} and len(patterns) == 1 and len(patterns[0]) == 1:
        token = patterns[0][0]
        if set(token) == {"LOWER"} and isinstance(token["LOWER"], str):
            return token["LOWER"]
    return None


_MAIN_DEPS = frozenset(("ROOT", "advcl", "ccomp", "conj", "relcl", "xcomp"))
_DO_HAVE = frozenset(("do", "does", "did", "'d", "have", "has", "had"))
_BE = frozenset(("is", "are", "was", "were", "'s", "'re"))
#: The multi-token and dependency patterns of en_core_web_sm 3.8 that
#: ``_Attributes.__call__`` applies in code.
_IN_CODE_PATTERNS = (
    [[{"TAG": "CC", "LOWER": "but", "DEP": "advmod"}]],
    [[{"TAG": {"NOT_IN": ["TO", ""]}, "DEP": {"IN": ["aux", "auxpass"]}}]],
    [[{"LOWER": {"IN": list(_DO_HAVE)}, "DEP": {"IN": list(_MAIN_DEPS)}}]],
    [[{"TAG": "IN", "DEP": "mark"}]],
    [[{"DEP": {"NOT_IN": ["det", "quantmod", ""]}, "TAG": {"IN": ["DT", "WDT"]}}]],
    [[{"DEP": "expl"}, {"LOWER": {"IN": ["is", "are", "was", "were", "'s", "'re"]}}]],
    [[{"TAG": "_SP", "IS_SPACE": False}]],
    [[{"IS_SPACE": True, "DEP": {"NOT_IN": [""]}}]],
    [[{"IS_SPACE": True}]],
)


def _handled(entry: dict) -> bool:
    """Applied in code, or deliberately skipped: pronoun-case morphology and dialect
    lemmas (extraction reads neither)."""
    attrs = set(entry["attrs"])
    if attrs <= {"MORPH"} or attrs <= {"LEMMA"}:
        return True
    return _signature(entry["patterns"]) in _IN_CODE


def _signature(patterns: list) -> str:
    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: sorted(v) if isinstance(v, list) else plain(v) for k, v in value.items()}
        return value

    return json.dumps([[plain(t) for t in p] for p in patterns], sort_keys=True)


_IN_CODE = frozenset(_signature(p) for p in _IN_CODE_PATTERNS)


def _single_tokens(patterns: list) -> list[tuple[str | None, str]] | None:
    """(lower or None, tag) for patterns of one token matching TAG (and LOWER) only."""
    out: list[tuple[str | None, str]] = []
    for pattern in patterns:
        if len(pattern) != 1 or not set(pattern[0]) <= {"TAG", "LOWER"} or "TAG" not in pattern[0]:
            return None
        tags, lowers = pattern[0]["TAG"], pattern[0].get("LOWER")
        tags = tags.get("IN") if isinstance(tags, dict) else [tags]
        lowers = (
            [None] if lowers is None else lowers.get("IN") if isinstance(lowers, dict) else [lowers]
        )
        if tags is None or lowers is None:
            return None
        out += [(lower, tag) for tag in tags for lower in lowers]
    return out


def _extract(doc: Doc) -> Extraction:
    ids: dict[int, tuple[str, str]] = doc.user_data.get(_IDS, {})
    by_token: dict[int, Mention] = {}
    for i, (text, kind) in ids.items():
        by_token[i] = Mention(text.lower(), text, kind, 0.9 if kind in ("flag", "url") else 1.0)
    ent_type: dict[int, str | None] = doc.user_data.get(_NAMES, {})
    for chunk in doc.noun_chunks:
        mention = _chunk_mention(chunk, ids, ent_type)
        if mention is None:
            continue
        for t in chunk:
            by_token.setdefault(t.i, mention)
    for t in doc:  # arguments the parser left outside any noun chunk ("depends on sqlite")
        if (
            t.i not in by_token
            and t.dep_ in _ARGS
            and t.pos_ in ("NOUN", "PROPN", "ADJ", "X")
            and t.is_alpha
            and not t.is_stop
            and len(t) > 1
        ):
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


def _chunk_mention(
    chunk: Span, ids: dict[int, tuple[str, str]], ent_type: dict[int, str | None]
) -> Mention | None:
    root = chunk.root
    if root.i in ids or root.pos_ == "PRON":
        return None
    tokens = [t for t in chunk if t.i not in ids]
    while tokens and (
        tokens[0].pos_ in _SKIP_LEAD or tokens[0].lower_ in _QUANTIFIERS or tokens[0].dep_ == "poss"
    ):
        tokens = tokens[1:]
    tokens = [t for t in tokens if not t.is_punct]
    if not tokens or len(tokens) > 6 or tokens[-1].i != root.i:
        return None
    words = [w for t in tokens[:-1] if (w := t.lower_.strip(_EDGE_PUNCT))]
    head = (root.lemma_.lower() if root.pos_ == "NOUN" else root.lower_).strip(_EDGE_PUNCT)
    if not head:
        return None
    words.append(head)
    key = " ".join(words)
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
    name = " ".join(w for t in tokens if (w := t.text.strip(_EDGE_PUNCT)))
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
    return [
        Relation(s.key, predicate, t.key, 1.0) for s in sources for t in targets if s.key != t.key
    ]


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
