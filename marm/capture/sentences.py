"""Prose sentences of an agent's markdown message, and whether it is English.

Code blocks, tables and headings are not sentences; bullets are unwrapped; a list item
is a sentence of its own. The language check is the share of common English function
words: a message in another language keeps its episode but is never classified by a
model trained on English.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(*\[])")
_MARKUP = re.compile(r"(\*\*|__)")
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)

#: Short, frequent English words; prose in English has many of them.
_ENGLISH = frozenset(
    "the a an and or but of to in on at for with from by is are was were be been it its this that these "
    "those we i you he she they not no so if then than as do does did have has had will would should can "
    "could there here what which who when where why how all any some more most also just now only into "
    "out up about after before because while our my your their them us me".split()
)
MIN_CHARS = 12


def sentences(text: str) -> Iterator[str]:
    """The prose sentences of ``text``, in order."""
    for line in _FENCE.sub("\n", text).splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("|", "#", "<")) or set(stripped) <= set("-=*_ "):
            continue
        line = _MARKUP.sub("", _BULLET.sub("", line)).strip().lstrip("> ").strip()
        for part in _SENTENCE_END.split(line):
            part = part.strip()
            if len(part) >= MIN_CHARS:
                yield part


def english_share(text: str) -> float:
    """The share of ``text``'s words that are common English function words."""
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        return 0.0
    return sum(w in _ENGLISH for w in words) / len(words)


def is_english(text: str) -> bool:
    """Whether ``text`` reads as English prose (at least one word in six a function
    word; English prose runs at 0.3-0.5, code and other languages far below)."""
    return english_share(text) >= 0.16
