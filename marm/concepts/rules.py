"""The rule-based extractor, used when spaCy or its English pipeline is missing.

No model: sentences split on punctuation, noun phrases are runs of content words
between stop words, a verb is recognised by its inflected forms of a ``PREDICATES``
lemma (``fixed``, ``fixes``, ``fixing`` -> ``fix``), its subject is the nearest phrase
before it and its object the nearest after. Coarser than the parser, with the same
entity types, identifier pass, predicates and bounds, so the graph stays useful.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from marm.concepts import identifiers
from marm.concepts.model import (
    GENERIC,
    MAX_TEXT_CHARS,
    PREDICATES,
    Extraction,
    Mention,
    Relation,
    cooccurrence,
    merge_mentions,
    phrase_type,
)

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\x00\d+\x00|[A-Za-z][A-Za-z0-9'-]*|[.,;:!?()]")
_STOP = frozenset(
    "a an the this that these those it its it's i me my we our us you your he him his she her"
    " they them their there here is are was were be been being am do does did done have has had"
    " having will would shall should can could may might must not no nor and or but if then"
    " else so than too very just also only even still already yet of in on at to for from by"
    " with without about into onto over under after before since until while during through"
    " via as up down out off again once what which who whom whose when where why how all any"
    " both each few more most other some such own same one two three new old now get got"
    " getting let lets let's really actually like well oh hey hi yeah yes okay ok thanks sure"
    " because though although however therefore say says said tell told think thought know"
    " knew want wanted feel felt go goes went going see saw seen look looked".split()
)
#: A verb form right after one of these is a noun ("the write queue", "moving writes").
_NOUN_CONTEXT = frozenset(
    "a an the this that these those my our your his her their its of in on at to for from by"
    " with about into".split()
)
_BE = frozenset("is are was were be been being".split())
_MEANS = frozenset(("by", "via", "through", "with", "using"))


def _forms(lemma: str) -> list[str]:
    stem = lemma[:-1] if lemma.endswith("e") else lemma
    double = lemma + lemma[-1] if re.fullmatch(r"[^aeiou]*[aeiou][bdgmnpt]", lemma) else lemma
    out = [
        lemma,
        lemma + ("es" if lemma.endswith(("s", "x", "ch", "sh")) else "s"),
        stem + "ed" if lemma.endswith("e") else double + "ed",
        stem + "ing",
        double + "ing",
    ]
    if lemma.endswith("y"):
        out += [lemma[:-1] + "ies", lemma[:-1] + "ied"]
    return out


_IRREGULAR = {
    "broke": "break",
    "broken": "break",
    "built": "build",
    "made": "make",
    "read": "read",
    "wrote": "write",
    "written": "write",
    "drew": "draw",
}
VERB_FORMS: dict[str, str] = {f: lemma for lemma in PREDICATES for f in _forms(lemma)}
VERB_FORMS.update({k: v for k, v in _IRREGULAR.items() if v in PREDICATES})


class RuleExtractor:
    name = "rules"
    model: str | None = None

    def extract(self, texts: Iterable[str]) -> Iterator[Extraction]:
        for text in texts:
            yield extract_one(text[:MAX_TEXT_CHARS])


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "ous")):
        return word[:-3] + "y" if word.endswith("ies") else word[:-1]
    return word


def extract_one(text: str) -> Extraction:
    found = identifiers.find(text)
    ids: list[Mention] = []
    masked, last = [], 0
    for n, i in enumerate(found):
        masked.append(text[last : i.start] + f" \x00{n}\x00 ")
        ids.append(
            Mention(i.text.lower(), i.text, i.type, 0.9 if i.type in ("flag", "url") else 1.0)
        )
        last = i.end
    masked.append(text[last:])
    everything: list[Mention] = []
    relations: list[Relation] = []
    linked: set[frozenset[str]] = set()
    for sentence in _SENTENCE.split("".join(masked)):
        items = _items(sentence, ids)
        mentions = [m for kind, m in items if kind == "m"]
        everything.extend(mentions)  # type: ignore[arg-type]
        for r in _relations(items):
            relations.append(r)
            linked.add(frozenset((r.source, r.target)))
        relations.extend(cooccurrence(mentions, linked))  # type: ignore[arg-type]
    return Extraction(tuple(merge_mentions(everything).values()), tuple(relations))


def _items(sentence: str, ids: list[Mention]) -> list[tuple[str, object]]:
    """The sentence as ("m", Mention) / ("v", lemma) / ("w", word) items, in order."""
    items: list[tuple[str, object]] = []
    run: list[str] = []

    def flush(first: bool) -> None:
        if run:
            m = _phrase(run, first)
            if m is not None:
                items.append(("m", m))
            run.clear()

    for n, token in enumerate(_WORD.findall(sentence)):
        if token.startswith("\x00"):
            flush(False)
            items.append(("m", ids[int(token.strip("\x00"))]))
            continue
        low = token.lower()
        previous = items[-1] if items and not run else ("w", "")
        nounish = previous[0] == "v" or (previous[0] == "w" and previous[1] in _NOUN_CONTEXT)
        if low in VERB_FORMS and not nounish:
            flush(n == 0)
            items.append(("v", VERB_FORMS[low]))
        elif low in _STOP or not token[0].isalnum():
            flush(False)
            items.append(("w", low))
        else:
            run.append(token)
    flush(False)
    return items


def _phrase(words: list[str], sentence_start: bool) -> Mention | None:
    words = words[-4:]
    low = [w.lower() for w in words]
    low[-1] = _singular(low[-1])
    key = " ".join(low)
    if len(key) < 3 or key in GENERIC:
        return None
    proper = all(w[:1].isupper() for w in words) and not sentence_start
    kind = phrase_type(low, low[-1])
    salience = (
        (0.7 if proper else 0.45)
        + (0.15 if len(words) > 1 else 0.0)
        + (0.1 if kind in ("error", "decision") else 0.0)
    )
    return Mention(key, " ".join(words), kind, round(min(salience, 1.0), 3))


def _relations(items: list[tuple[str, object]]) -> list[Relation]:
    out: list[Relation] = []
    for n, (kind, value) in enumerate(items):
        if kind != "v":
            continue
        predicate, _ = PREDICATES[value]  # type: ignore[index]
        before = [m for k, m in items[:n] if k == "m"]
        after = items[n + 1 :]
        if n and items[n - 1][0] == "w" and items[n - 1][1] in _BE and after[:1] == [("w", "by")]:
            agent = next((m for k, m in after if k == "m"), None)  # "X was replaced by Y"
            if agent is not None and before:
                out.append(Relation(agent.key, predicate, before[-1].key, 1.0))  # type: ignore[attr-defined]
            continue
        target = next((m for k, m in after if k == "m"), None)
        if target is None:
            continue
        sources = before[-1:]
        if not sources:
            means = next((i for i, (k, w) in enumerate(after) if k == "w" and w in _MEANS), None)
            if means is not None:
                clause = [m for k, m in after[means:] if k == "m"]
                sources = sorted(clause, key=lambda m: -m.salience)[:2]  # type: ignore[attr-defined]
        out.extend(
            Relation(s.key, predicate, target.key, 1.0)  # type: ignore[attr-defined]
            for s in sources
            if s.key != target.key  # type: ignore[attr-defined]
        )
    return out
