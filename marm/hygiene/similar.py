"""Word-level tests for hygiene: near-duplicates, reversals and their subject.

Meaning alone cannot tell "we use redis for the cache" from "we no longer use redis
for the cache" (their vectors are close), nor "timeout is 30 s in client.py" from
"timeout is 60 s in server.py". So a near-duplicate must also share most words, name
the same numbers, files and identifiers, and agree on negation; and a reversal is a
cue ("no longer", "replaced X with Y", "instead of X", "switched from X to Y",
"dropped X", ...) whose object X the older memory states. The cue set is small and
general on purpose: it names how people write a reversal, not any project's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from marm.concepts.identifiers import find as identifiers
from marm.recall.lexical import stems, tokens

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
_NEGATION = frozenset({"not", "no", "never", "don't", "doesn't", "didn't", "isn't", "aren't", "won't",
                       "cannot", "can't", "without", "longer", "instead", "stop", "stopped"})

#: How a reversal is written; ``obj`` is what stopped holding. Object phrases end at
#: punctuation or at a word that introduces the replacement or the reason.
_END = r"(?=\s+(?:with|by|to|for|because|since|as|so|in\s+favou?r|now|anymore|any\s+more)\b|[,.;:!?)\n]|$)"
_OBJ = r"(?P<obj>(?:[\w./-]+\s+){0,4}?[\w./-]+)"
CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE)) for name, pattern in (
        ("no longer", r"\bno\s+longer\s+(?:use[sd]?|using|need[sd]?|rel(?:y|ies)\s+on|call[s]?|run[s]?|"
                      r"store[s]?|keep[s]?|support[s]?|have|has|do(?:es)?|go(?:es)?\s+through)?\s*" + _OBJ + _END),
        ("replaced", r"\breplac(?:ed|e|es|ing)\s+" + _OBJ + r"(?=\s+(?:with|by)\b)"),
        ("switched from", r"\b(?:switch|mov|migrat)(?:ed|e|es|ing)\s+(?:away\s+)?from\s+" + _OBJ + _END),
        ("instead of", r"\binstead\s+of\s+" + _OBJ + _END),
        ("dropped", r"\b(?:dropped|stopped\s+using|got\s+rid\s+of|abandoned|ripped\s+out)\s+" + _OBJ + _END),
    )
)

#: What a reversal is limited to, right after its object: "no longer use X *for the docs
#: build*" reverses only a memory that says X is used for the docs build.
_SCOPE = re.compile(r"\s+(?:for|in|on|within|at)\s+(?P<scope>(?:[\w./-]+\s+){0,5}?[\w./-]+)"
                    r"(?=\s+(?:and|but|with|to|by|because|since|so|now|anymore)\b|[,.;:!?)\n]|$)", re.IGNORECASE)

#: Stems that name no object of their own ("using X", "the use of X"); articles and
#: other stop words are never stems.
_NO_OBJECT = frozenset({"use"})


def words(text: str) -> frozenset[str]:
    """The content stems of ``text`` (recall's one function for it: "caches" and "cache",
    "retries" and "retry" are the same word), of two letters or more."""
    return stems(text, min_len=2)


def _salient(text: str) -> set[str]:
    """Numbers, file names and identifiers: what makes two similar sentences different facts."""
    return set(_NUMBER.findall(text)) | {i.text for i in identifiers(text)}


def _negations(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z']+", text.lower()) if w in _NEGATION}


def word_overlap(a: str, b: str) -> float:
    """Jaccard of the two texts' content words."""
    wa, wb = words(a), words(b)
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


@dataclass(frozen=True, slots=True)
class Reversal:
    cue: str          # which cue ("replaced", ...)
    obj: str          # what stopped holding, as written
    scope: str = ""   # what it stopped holding for ("for the docs build"), when said


def _statements(text: str) -> str:
    """``text`` without its questions and without an episode's ``Asked:`` line: "should
    we use X instead of Y?" asks, it reverses nothing."""
    kept: list[str] = []
    for line in text.splitlines():
        if not line.startswith("Asked:"):
            kept.extend(p for p in re.split(r"(?<=[.!?])\s+", line) if not p.rstrip().endswith("?"))
    return "\n".join(kept)


def reversals(text: str) -> list[Reversal]:
    """Every reversal cue the statements of ``text`` make, with its object (objects with
    no content word are skipped: "replaced it with" names nothing an older memory could
    state)."""
    text = _statements(text)
    found = []
    for name, pattern in CUES:
        for m in pattern.finditer(text):
            obj = m.group("obj").strip()
            if _object_words(obj):
                scope = _SCOPE.match(text, m.end())
                found.append(Reversal(name, obj, scope.group("scope") if scope else ""))
    return found


def _object_words(obj: str) -> list[str]:
    """The first two content stems of a reversal's object, in the order written."""
    found = dict.fromkeys(s for token in tokens(obj) for s in words(token) if s not in _NO_OBJECT)
    return list(found)[:2]


def reverses(newer: str, older: str) -> Reversal | None:
    """The cue by which ``newer`` reverses ``older``: ``newer`` says X stopped holding and
    ``older`` states X (its first content words) without saying so itself, and, when the
    reversal names what X stopped being used for, at least half of those words."""
    older_words = words(older)
    older_cues = {r.obj.lower() for r in reversals(older)}
    for r in reversals(newer):
        if r.obj.lower() in older_cues:
            continue  # the older memory already says the same reversal
        if not all(w in older_words for w in _object_words(r.obj)):
            continue
        scope = words(r.scope) - _NO_OBJECT
        if scope and len(scope & older_words) * 2 < len(scope):
            continue  # the same thing, for another purpose
        return r
    return None


def near_duplicate(a: str, b: str, min_words: float) -> bool:
    """Whether two texts say the same thing in nearly the same words: enough shared
    words, the same numbers, files and identifiers, the same negations and cues."""
    if word_overlap(a, b) < min_words:
        return False
    if _salient(a) != _salient(b) or _negations(a) != _negations(b):
        return False
    return {r.cue for r in reversals(a)} == {r.cue for r in reversals(b)}


def subject_terms(text: str) -> set[str]:
    """Files, identifiers and numbers a memory names (its subject, besides graph entities)."""
    return {s.lower() for s in _salient(text) if not s.isdigit()}
