"""Compaction of old episodes: one extractive summary per topic and week.

Episodes are kept nearly verbatim, so a store that captures every turn grows by
hundreds of them a week; after a month what matters of them is what was asked, what
was concluded and which files changed. A fold keeps, for each episode of a topic and
ISO week (at most ``FOLD_MAX`` consecutive episodes), its question's first sentence,
then its conclusion's first sentence and the sentences that name the most
(identifiers, code, numbers) within a budget, without the sentences the highlights of
the same session already hold (they stay memories of their own); the fold lists the
files they changed once. The rest is dropped from the summary (nothing is paraphrased). Highlights are memories of
their own and are never folded.

The topic is the session the episodes come from: a session is one task on one
repository, which is what a reader looks for later; the week bounds a fold's size.
Sources are not changed: each becomes ``superseded`` by the summary (content,
metadata and validity untouched), so ``marm compact --restore SUMMARY`` (or ``marm
restore ID`` for one source) gives them back byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from marm.capture.sentences import sentences
from marm.concepts.identifiers import find as identifiers
from marm.store.records import Memory

#: Characters of one episode's question and of its conclusion in a summary.
ASKED = 160
CONCLUDED = 450
#: ...and at most a third of a short conclusion, but never less than this.
SHORTEST = 160
#: Most episodes in one fold: consecutive turns of a session are one thread of work; a
#: longer session is cut into even runs, so a summary stays one subject a recall can rank.
FOLD_MAX = 8
FILES = 12


@dataclass(frozen=True, slots=True)
class Fold:
    project: str | None
    topic: str                 # the session
    week: str                  # ISO week, e.g. 2026-W40
    sources: tuple[Memory, ...]
    text: str

    @property
    def source_chars(self) -> int:
        return sum(len(m.content) for m in self.sources)


def week_of(stamp: str) -> str:
    year, week, _ = datetime.fromisoformat(stamp[:19]).isocalendar()
    return f"{year}-W{week:02d}"


def _field(content: str, label: str) -> str:
    """The text after ``label:`` up to the next labelled line of an episode."""
    out: list[str] = []
    taking = False
    for line in content.splitlines():
        head = line.split(":", 1)[0]
        if head in ("Asked", "Concluded", "Stopped at", "Changed", "Failed"):
            taking = head == label
            line = line.split(":", 1)[1] if taking else line
        if taking:
            out.append(line)
    return "\n".join(out).strip()


def _first(text: str) -> str:
    return next(iter(sentences(text)), text.strip().split("\n", 1)[0])


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


def _informative(sentence: str) -> int:
    """How much a sentence names: identifiers, code spans, numbers (what a later
    question looks for, and what a paraphrase would lose)."""
    return len(identifiers(sentence)) + sentence.count("`") // 2 + len(re.findall(r"\d+", sentence))


def key_lines(episode: Memory, elsewhere: str = "") -> str:
    """What an episode contributes to its summary, in its own words: the question's
    first sentence, then its conclusion's first sentence and the sentences that name
    the most (identifiers, code, numbers), in their order, within ``CONCLUDED``
    characters (a third of a short one), leaving out sentences ``elsewhere`` already
    holds (the highlights kept from the same session stay memories of their own)."""
    asked = _cut(_first(_field(episode.content, "Asked")), ASKED)
    concluded = _field(episode.content, "Concluded") or _field(episode.content, "Stopped at")
    said = [x for x in sentences(concluded) if " ".join(x.split()) not in elsewhere] if concluded else []
    order = sorted(range(len(said)), key=lambda i: (i != 0, -_informative(said[i]), i))
    budget = min(CONCLUDED, max(SHORTEST, len(concluded or "") // 3))  # a summary is shorter than its source
    picked: list[int] = []
    used = 0
    for i in order:
        if used + len(said[i]) <= budget:
            picked.append(i)
            used += len(said[i]) + 1
    body = " ".join(said[i] for i in sorted(picked)) or (_cut(said[0], budget) if said else "")
    parts = [f"- {episode.recorded_at[:10]} asked: {asked}" if asked else f"- {episode.recorded_at[:10]}"]
    if body:
        parts.append(f"  concluded: {body}")
    return "\n".join(parts)


def files_changed(episodes: Iterable[Memory]) -> list[str]:
    """The files the episodes changed, each once, in order of first change."""
    return list(dict.fromkeys(f.strip() for m in episodes
                              for f in _field(m.content, "Changed").split(",") if f.strip()))


def plan(episodes: Iterable[Memory], kept: Iterable[Memory] = ()) -> list[Fold]:
    """Group ``episodes`` by project, topic and week; a group of one is left as it is
    (folding it would save little and lose its wording). ``kept``: the other memories
    of their sessions (highlights), whose sentences a summary need not repeat."""
    elsewhere: dict[str | None, str] = {}
    for m in kept:
        elsewhere[m.session] = elsewhere.get(m.session, "") + "\n" + " ".join(m.content.split())
    groups: dict[tuple[str | None, str, str], list[Memory]] = {}
    for m in episodes:
        groups.setdefault((m.project, m.session or "-", week_of(m.valid_from or m.recorded_at)), []).append(m)
    folds = []
    runs: list[tuple[str | None, str, str, list[Memory]]] = []
    for (project, topic, week), found in sorted(groups.items(), key=lambda kv: (kv[0][2], kv[0][1])):
        found.sort(key=lambda m: (m.recorded_at, m.id))
        step = -(-len(found) // -(-len(found) // FOLD_MAX))  # even runs of at most FOLD_MAX
        runs.extend((project, topic, week, found[i:i + step]) for i in range(0, len(found), step))
    for project, topic, week, found in runs:
        if len(found) < 2:
            continue
        head = f"SUMMARY of {len(found)} episodes, week {week} (marm compact):"
        files = files_changed(found)
        tail = ["Changed: " + ", ".join(files[:FILES]) + (f" and {len(files) - FILES} more" if len(files) > FILES else "")]
        folds.append(Fold(project, topic, week, tuple(found),
                          "\n".join([head, *(key_lines(m, elsewhere.get(m.session, "")) for m in found),
                                     *(tail if files else [])])))
    return folds
