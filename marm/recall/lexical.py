"""Turning any user string into a safe FTS5 query of words (BM25 lane).

Every token is quoted, so FTS syntax characters in the query (``"``, ``*``, ``:``,
``-``, ``NEAR``, ``AND``) are words, never operators: no user string can raise.

Stop words are NLTK's English list (Snowball's, with the pieces a word split cuts from
contractions: "didn't" -> "didn", "t"). spaCy's longer list was measured against it
and lost (LoCoMo dev any@5 0.805 against 0.816): it drops words that carry a memory's
topic ("name", "first", "last", "move", "show", "together"). Stemming is FTS5's porter
tokenizer's, on both the index and the query; ``stem`` (Snowball's English stemmer) is
for callers that compare words themselves.

People write one compound three ways: "road trip", "road-trip", "roadtrip(s)". The
index keeps what was written (its tokenizer splits "road-trip" into "road" "trip"),
and the query reaches all three forms: ``compounds`` adds, for two adjacent words,
the joined word, and for a long word, each split into two words as a phrase
("roadtrips" -> "road trips", which porter stems to match "road trip" and
"road-trip"). The caller keeps the forms the index holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t don doesn didn isn wasn weren ll ve re d m o y""".split()
)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of ``text``."""
    return [t.lower() for t in _WORD.findall(text)]


@cache
def _stemmer() -> Callable[[str], str]:
    # start-up cost (~7 ms): it loads on the first stem, not with this module.
    # py-rust-stemmers is Snowball's English stemmer compiled (the same stems as the
    # pure-Python snowballstemmer, at 0.5 us a word instead of 70: a ranking stems a few
    # hundred words)
    from py_rust_stemmers import SnowballStemmer

    return SnowballStemmer("english").stem_word


def stem(word: str) -> str:
    """The Snowball (Porter 2) English stem of a lower-cased word: "retries" and "retry"
    share "retri", "checkups" and "checkup" share "checkup"."""
    return _stemmer()(word)


def words(query: str) -> list[str]:
    """Lower-cased content words of ``query`` (stop words dropped unless nothing is left)."""
    found = tokens(query)
    content = [t for t in found if t not in STOPWORDS]
    return list(dict.fromkeys(content or found))


def stems(text: str, min_len: int = 1) -> frozenset[str]:
    """The Snowball stems of ``text``'s content words of at least ``min_len`` letters (stop
    words left out, even when nothing else is left): what two texts that say the same
    thing share, whatever their word forms ("road trips" and "road trip")."""
    return frozenset(stem(w) for w in words(text) if len(w) >= min_len and w not in STOPWORDS)


#: Each part of a split compound has at least this many letters; a word is split only
#: when it has at least ``2 * SPLIT_PART + 1`` of them.
SPLIT_PART = 2
_HYPHENATED = re.compile(r"\b([^\W\d_]{2,})-(?=([^\W\d_]{2,})\b)")


def compounds(query: str) -> list[str]:
    """Other spellings of the compounds ``query`` may hold: two adjacent words joined
    ("check up" and "check-up" -> "checkup") and a long word split in two, as a phrase
    ("checkups" -> "check ups", ...). Most splits are not words; the caller keeps only
    the forms the index holds."""
    seq = [t for t in tokens(query) if t.isalpha()]
    out = [(a + b).lower() for a, b in _HYPHENATED.findall(query)]
    out += [a + b for a, b in zip(seq, seq[1:], strict=False) if a not in STOPWORDS and b not in STOPWORDS]
    for word in dict.fromkeys(seq):
        if word not in STOPWORDS and len(word) > 2 * SPLIT_PART:  # "setup" -> "set up"
            out.extend(f"{word[:i]} {word[i:]}" for i in range(SPLIT_PART, len(word) - SPLIT_PART + 1))
    return [c for c in dict.fromkeys(out) if c not in STOPWORDS]


_BESIDES = re.compile(
    r"(?i)\b(?:besides|apart from|aside from|other than|except(?: for)?|in addition to|not counting)\s+"
    r"[\w'’-]+(?:\s+[\w'’-]+){0,3}?(?=\s*[?,.;!]|\s+(?:but|does|do|did|is|are|was|were|has|"
    r"have|had|what|which|who|that|can|could|would|will)\b|\s*$)")


def without_exceptions(query: str) -> str:
    """``query`` without what it sets aside ("What does Mel do besides pottery?" -> "What
    does Mel do?"): the memories about pottery are the ones the asker already knows, and
    its words would rank them first."""
    rest = _BESIDES.sub(" ", query)
    return " ".join(rest.split()) if words(rest) else query


def fts_query(query: str) -> str | None:
    """An OR of the quoted content words of ``query`` and their other compound spellings
    (``compounds``), or None when it has no words."""
    terms = words(query)
    if terms:
        terms = terms + [c for c in compounds(query) if c not in terms]
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
