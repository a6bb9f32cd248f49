"""Turning any user string into a safe FTS5 query of words (BM25 lane).

Every token is quoted, so FTS syntax characters in the query (``"``, ``*``, ``:``,
``-``, ``NEAR``, ``AND``) are words, never operators: no user string can raise.

Stemming is FTS5's porter tokenizer's, on both the index and the query; ``stem``
(Snowball's English stemmer) is for callers that compare words themselves.
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


@cache
def _stemmer() -> Callable[[str], str]:
    # start-up cost: snowballstemmer's package imports every language it has (~20 ms), so
    # it loads on the first stem, not with this module
    from snowballstemmer import stemmer

    return stemmer("english").stemWord


def stem(word: str) -> str:
    """The Snowball (Porter 2) English stem of a lower-cased word: "retries" and "retry"
    share "retri", "checkups" and "checkup" share "checkup"."""
    return _stemmer()(word)


def words(query: str) -> list[str]:
    """Lower-cased content words of ``query`` (stop words dropped unless nothing is left)."""
    tokens = [t.lower() for t in _WORD.findall(query)]
    content = [t for t in tokens if t not in STOPWORDS]
    return list(dict.fromkeys(content or tokens))


def fts_query(query: str) -> str | None:
    """An OR of the quoted content words of ``query``, or None when it has no words."""
    terms = words(query)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
