"""Highlights: the sentences of a turn worth remembering on their own.

A sentence is kept when a small linear classifier calls it a decision, a root cause, a
fix, a convention or a lesson; the sentence after it comes along when the classifier
gives it a fair chance too (it usually carries the reason or the remedy). The model is
softmax regression over hashed word features (words, word pairs, the opening words,
the closing punctuation, whether it names code), trained by
``tests/bench/train_highlights.py`` on a labelled corpus of sentences written for it
(``tests/data/highlight_sentences.tsv``) and shipped as two small files beside this
module. Features and scoring are pure Python: a hook pays microseconds per sentence and
imports nothing heavy. Only English text is classified.
"""

from __future__ import annotations

import re
import zlib
from array import array
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import orjson

from marm.capture.sentences import is_english, sentences
from marm.text import labelled_kind

HERE = Path(__file__).parent
WEIGHTS = HERE / "highlights.f32"
META = HERE / "highlights.json"
DROP = "drop"
#: Kinds of highlight, as memory kinds.
KIND_OF_LABEL = {"decision": "decision", "root_cause": "fix", "fix": "fix", "convention": "convention",
                 "lesson": "lesson"}
#: The classifier's label for a memory kind a sentence names in its own label.
LABEL_OF_KIND = {"decision": "decision", "fix": "fix", "lesson": "lesson"}
#: Most highlights one message may give, and longest highlight.
MAX_PER_TURN = 8
MAX_CHARS = 600

_TOKEN = re.compile(r"`[^`]+`|[A-Za-z][A-Za-z0-9_'./-]*|\d+(?:[.,:]\d+)*|[?!:]")


def features(sentence: str) -> list[str]:
    """The hashed model's features of one sentence."""
    raw = _TOKEN.findall(sentence)
    words: list[str] = []
    for t in raw:
        if t.startswith("`"):
            words.append("<code>")
        elif t[0].isdigit():
            words.append("<num>")
        elif t in "?!:":
            continue
        elif any(c in t for c in "_./") or (t[1:] != t[1:].lower() and t[0].islower()):
            words.append("<ident>")
        else:
            words.append(t.lower())
    feats = [f"w:{w}" for w in words]
    feats += [f"b:{a} {b}" for a, b in zip(words, words[1:])]
    feats += [f"s:{w}" for w in words[:1]] + [f"s2:{' '.join(words[:2])}"] + [f"s3:{' '.join(words[:3])}"]
    end = sentence.rstrip()[-1:] or "."
    feats.append(f"end:{end if end in '?!:.' else 'other'}")
    n = len(words)
    feats.append("len:" + ("xs" if n < 6 else "s" if n < 12 else "m" if n < 25 else "l" if n < 45 else "xl"))
    if "`" in sentence:
        feats.append("has:code")
    return feats


@dataclass(frozen=True, slots=True)
class Model:
    classes: tuple[str, ...]
    buckets: int
    weights: array            # classes x buckets, row-major
    bias: tuple[float, ...]
    keep: float               # least probability that a sentence is worth keeping
    neighbour: float          # least such probability for the sentence after a kept one

    def probabilities(self, sentence: str) -> dict[str, float]:
        import math

        idx = [zlib.crc32(f.encode()) % self.buckets for f in features(sentence)]
        logits = [self.bias[c] + sum(self.weights[c * self.buckets + i] for i in idx)
                  for c in range(len(self.classes))]
        top = max(logits)
        exps = [math.exp(x - top) for x in logits]
        total = sum(exps)
        return {name: e / total for name, e in zip(self.classes, exps)}


@lru_cache(maxsize=1)
def model() -> Model | None:
    """The shipped model, or None when its files are missing (nothing is highlighted)."""
    try:
        meta = orjson.loads(META.read_bytes())
        weights = array("f")
        with open(WEIGHTS, "rb") as fh:
            weights.fromfile(fh, len(meta["classes"]) * meta["buckets"])
    except (OSError, EOFError, ValueError, KeyError):
        return None
    return Model(tuple(meta["classes"]), int(meta["buckets"]), weights, tuple(meta["bias"]),
                 float(meta["keep"]), float(meta["neighbour"]))


@dataclass(frozen=True, slots=True)
class Highlight:
    text: str
    kind: str           # a memory kind: decision, fix, convention, lesson
    label: str          # the classifier's label (root_cause is stored as a fix)
    score: float


def classify(sentence: str, m: Model | None = None) -> tuple[str, float]:
    """(best keep label, its probability of being kept at all) for one sentence."""
    m = m or model()
    if m is None:
        return DROP, 0.0
    probs = m.probabilities(sentence)
    keep = 1.0 - probs.get(DROP, 0.0)
    label = max((c for c in m.classes if c != DROP), key=probs.__getitem__)
    return label, keep


def highlights(messages: list[str], limit: int = MAX_PER_TURN, m: Model | None = None) -> list[Highlight]:
    """The highlights of a turn's messages, best first, each once."""
    m = m or model()
    if m is None:
        return []
    found: list[Highlight] = []
    seen: set[str] = set()
    for message in messages:
        if not is_english(message):
            continue
        said = list(dict.fromkeys(sentences(message)))
        # A sentence its writer labelled (``DECISION: ...``, marm's own convention) is kept as labelled.
        scored = [(LABEL_OF_KIND[k], 1.0) if (k := labelled_kind(s)) in LABEL_OF_KIND else classify(s, m)
                  for s in said]
        for i, (label, keep) in enumerate(scored):
            if keep < m.keep or said[i] in seen:
                continue
            text = said[i]
            seen.add(text)
            if i + 1 < len(said) and scored[i + 1][1] >= m.neighbour and said[i + 1] not in seen:
                text = f"{text} {said[i + 1]}"
                seen.add(said[i + 1])
            found.append(Highlight(text[:MAX_CHARS], KIND_OF_LABEL[label], label, keep))
    found.sort(key=lambda h: -h.score)
    return found[:limit]
