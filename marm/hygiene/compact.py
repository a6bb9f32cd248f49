"""Compaction of old episodes: one extractive summary per topic and week.

Episodes are kept nearly verbatim, so a store that captures every turn grows by hundreds
of them a week; after a month what matters of them is what was asked, what was concluded
and which files changed. A fold keeps, for each episode of a topic and ISO week (at most
``FOLD_MAX`` consecutive episodes), its question's first sentence (unless it says
nothing alone, "yes", or nothing new), then, within a quarter of the episode's text, the
sentences that add the most per character: the rare words (recall's content stems,
weighted by how few memories of the project hold them) that nothing kept so far holds
(the session's highlights, the sentences the fold already took), more for a sentence the
highlight classifier calls a decision, cause, fix, convention or lesson. Questions the
agent put to the user, lines that only introduce a list ("Key changes:"), sentences the
highlights hold, the agent's talk about the chat ("Ready for step 2 whenever you are.")
and a check's bare outcome ("Clippy passes with warnings denied.") are left out, a file
linked by its own name is named once, a retried question is said once, the day is said
once, and the fold lists the repository's files changed once. Nothing is paraphrased.
Highlights are memories of their own and are never folded. (Measured by
``tests/bench/bench_hygiene.py``: a fixed budget of the first and the most identifier-
rich sentences lost the facts long plans state in plain words. Measured there too, and
kept out: a budget on only what the highlights do not hold, or one shared by a fold's
episodes, cut the store further but lost the facts of long plans and closing lists,
whose words the highlights already hold. Leaving out talk, check outcomes and doubled
link targets frees an episode's room for its facts more than it shrinks the store:
within a fixed room the next sentences take the place. On the bench's store a room of a
fifth of the episode (floor 220), or 0.18 (floor 200), reached 51.2% and 50.5% of the
characters but lost 4 and 3 more facts, all list items of plans and closing reports that
only their episode ranked for; the same with the room counted on what the highlights do
not hold (52.8%), and giving the question's further sentences half the weight, lost 2
more and were dropped.)

The topic is the session the episodes come from: a session is one task on one
repository, which is what a reader looks for later; the week bounds a fold's size.
Sources are not changed: each becomes ``superseded`` by the summary (content,
metadata and validity untouched), so ``marm compact --restore SUMMARY`` (or ``marm
restore ID`` for one source) gives them back byte for byte.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from marm.capture.highlights import classify
from marm.capture.sentences import sentences
from marm.concepts.identifiers import find as identifiers
from marm.recall.lexical import stems
from marm.store.records import Memory

#: Characters of one episode's question in a summary.
ASKED = 120
#: Fewest content words a question needs to be kept ("yes", "go on" say nothing alone).
ASKED_WORDS = 2
#: What an episode keeps, besides its question: this share of its question and
#: conclusion, in the sentences most worth keeping, and up to ``ONE`` characters of them
#: however short the turn (a short turn keeps its key sentence).
SHARE = 0.25
ONE = 300
#: Least worth (``_worth``) of a sentence a summary keeps: below it a sentence adds
#: nothing the store does not say ("Ready when you are.", "Syntax and lint are clean.").
WORTH = 0.03
#: Most episodes in one fold: consecutive turns of a session are one thread of work; a
#: longer session is cut into even runs, so a summary stays one subject a recall can rank.
FOLD_MAX = 8
#: Files a summary lists; how many more there were is said.
FILES = 6
#: What an episode of a turn cut short says in place of an answer.
INTERRUPTED = "(interrupted before an answer)"


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


#: A markdown link, as agents write a file they name: ``[src/config.ts](src/config.ts)``.
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")


def _unlinked(sentence: str) -> str:
    """``sentence`` with each markdown link whose target is the file its text names (the
    same path, or a longer path or a ``#L12`` anchor to it) said once, as its text: the
    name is what a later question looks for, the second copy is only markup."""
    def one(m: re.Match[str]) -> str:
        text, target = m.group(1), m.group(2).split("#", 1)[0]
        return text if target.rstrip("/").endswith(text.strip("`").rstrip("/")) else m.group(0)
    return _LINK.sub(one, sentence)


def _first(text: str) -> str:
    return next(iter(sentences(text)), text.strip().split("\n", 1)[0])


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


class Novelty:
    """What a sentence adds that the store does not already say: the rarity-weighted
    content stems (recall's ``stems``) it holds that no kept text holds yet. Rare words
    (a file, a flag, a library, a number with its unit) are what a later question names
    and what recall finds a memory by; a sentence whose words the highlights already
    hold adds little."""

    def __init__(self, texts: Iterable[str]) -> None:
        df: Counter[str] = Counter()
        n = 0
        for text in texts:
            df.update(stems(text, min_len=2))
            n += 1
        self.weight = {w: math.log((n + 1) / (c + 0.5)) for w, c in df.items()}
        self.rare = math.log(n + 2)      # a stem no text held
        self.covered: set[str] = set()

    def cover(self, text: str) -> None:
        self.covered |= stems(text, min_len=2)

    def gain(self, sentence: str) -> float:
        return sum(self.weight.get(w, self.rare) for w in stems(sentence, min_len=2) - self.covered)


#: How an agent talks about the conversation rather than the work: it speaks of itself
#: ("I'll ...", "Let me ..."), offers or waits ("Want me to", "Ready for", "whenever you",
#: "let me know"). Said of a sentence that names nothing concrete (``_concrete``), it is
#: narration: true of the chat, not of the project.
_TALK = re.compile(
    r"^(?:(?:so|ok(?:ay)?|great|done|sure|good|now)[,!.]?\s+)?(?:i'm|i\s+am|i'll|i\s+will|i\s+can(?:'t|not)?|i\s+could|"
    r"i\s+don't|i\s+do\s+not|i'd\s+(?:like|suggest|recommend)|let\s+me|let's|you\s+can|you\s+could|you'll|"
    r"if\s+you|want\s+me|ready|happy\s+to|feel\s+free|just\s+(?:say|tell|let))\b"
    r"|\b(?:whenever\s+you|let\s+me\s+know|want\s+me\s+to|if\s+you(?:'d)?\s+(?:like|want|prefer)|"
    r"(?:shall|should)\s+i)\b", re.IGNORECASE)
#: Code in backticks: with an identifier (``identifiers``), what makes a sentence name something.
_CODE = re.compile(r"`[^`]+`")


def _concrete(sentence: str) -> bool:
    """Whether ``sentence`` names something: code, a file, an identifier (a number is
    not enough: "Ready for step 2")."""
    return bool(_CODE.search(sentence) or identifiers(sentence))


def talk(sentence: str) -> bool:
    """Whether ``sentence`` is the agent talking about the conversation (``_TALK``) with
    no concrete name in it: "Ready to start on Phase 1 whenever you want." """
    return bool(_TALK.search(sentence)) and not _concrete(sentence)


#: A check's outcome, as agents report it at the end of a turn ("Clippy passes with
#: warnings denied.", "13 backend tests passing.", "No type errors in the changed
#: files."): true of the tree at that moment, and run again by the next session.
_OUTCOME = re.compile(
    r"\b(?:pass(?:es|ed|ing)?|succeed(?:s|ed)?|clean|green)\b(?=\s*(?:$|[.,;:!)\u2014\u2013(-]|with\b|on\b|in\b|"
    r"locally\b|again\b|now\b|across\b|everywhere\b))|\bno\s+(?:\w+\s+)?(?:errors?|offen[cs]es|warnings?|failures?)\b",
    re.IGNORECASE)
#: Most content words a check's outcome has besides the outcome and numbers: more, and
#: it says something besides (the cause of a failure, what was changed).
CHECK_WORDS = 3


def check_report(sentence: str) -> bool:
    """Whether ``sentence`` only reports how a check came out (``_OUTCOME``, with at
    most ``CHECK_WORDS`` other content words)."""
    outcome = _OUTCOME.search(sentence)
    if outcome is None:
        return False
    rest = stems(sentence, min_len=2) - stems(outcome.group(0), min_len=2)
    return sum(not w.isdigit() for w in rest) <= CHECK_WORDS


def _worth(sentence: str, keep: float, novelty: Novelty) -> float:
    """How much a sentence is worth its characters: what it adds (``Novelty.gain``) per
    character, more when the highlight classifier calls it a decision, cause, fix,
    convention or lesson (``keep``: its probability)."""
    return novelty.gain(sentence) / (len(sentence) + 40) * (0.5 + keep)


@dataclass(frozen=True, slots=True)
class Kept:
    """What one episode contributes to its summary."""

    day: str
    asked: str      # the question's first sentence
    said: str       # the sentences kept, in their order


def key_lines(episode: Memory, novelty: Novelty, elsewhere: str = "") -> Kept:
    """What an episode contributes to its summary, in its own words: the question's first
    sentence, then, within ``SHARE`` of the episode's text, the sentences of the rest of
    the question and of the conclusion that add the most per character (``_worth``),
    picked greedily (each pick covers its words), in their order. Left out: what
    ``elsewhere`` already holds (the highlights kept from the same session stay memories
    of their own), questions the agent put to the user ("Want me to go on?"), lines
    that only introduce what follows ("Key changes:"), talk about the chat (``talk``)
    and a check's bare outcome (``check_report``); a link to the file it names is said
    as the name (``_unlinked``). A question of fewer than
    ``ASKED_WORDS`` content words, or whose words the fold already holds, is not said."""
    question = _field(episode.content, "Asked").replace(INTERRUPTED, "").strip()
    asked = _cut(_first(question), ASKED) if question else ""
    if len(stems(asked, min_len=2)) < ASKED_WORDS or not novelty.gain(asked):
        asked = ""  # "yes", "clear it out", or a question the fold already holds
    novelty.cover(asked)
    concluded = _field(episode.content, "Concluded") or _field(episode.content, "Stopped at")
    pool = [_unlinked(x) for x in dict.fromkeys([*list(sentences(question))[1:], *sentences(concluded)])
            if " ".join(x.split()) not in elsewhere and not x.rstrip().endswith(("?", ":"))
            and not talk(x) and not check_report(x)]
    keep = [classify(x)[1] for x in pool]
    room = max(ONE, int(SHARE * (len(question) + len(concluded))))
    picked: list[int] = []
    used = 0
    while True:
        left = [i for i in range(len(pool)) if i not in picked and used + len(pool[i]) <= room]
        worth = {i: _worth(pool[i], keep[i], novelty) for i in left}
        best = max(left, key=lambda i: (worth[i], -i), default=None)
        if best is None or worth[best] < WORTH:
            break
        picked.append(best)
        used += len(pool[best]) + 1
        novelty.cover(pool[best])
    return Kept(episode.recorded_at[:10], asked, " ".join(pool[i] for i in sorted(picked)))


def _lines(kept: list[Kept]) -> list[str]:
    """The fold's lines: one per episode ("- question" then "  → what it concluded"), the
    day said when it changes, a question asked again (a retried turn) said once, an
    episode with nothing left to say left out."""
    out: list[str] = []
    seen: set[str] = set()
    day = ""
    for k in kept:
        asked = k.asked if k.asked not in seen else ""
        seen.add(k.asked)
        if not asked and not k.said:
            continue
        head = "- " + (f"{k.day}: " if k.day != day else "")
        day = k.day
        out.append(head + (f"{asked}\n  → {k.said}" if asked and k.said else asked or f"→ {k.said}"))
    return out


_MORE = re.compile(r"\s+and \d+ more$")
#: A path outside the repository (absolute, home-relative or on a drive): an agent's plan,
#: memory or scratch file, not the project's code.
_OUTSIDE = re.compile(r"^(?:/|~|[A-Za-z]:[\\/])")


def files_changed(episodes: Iterable[Memory]) -> list[str]:
    """The repository's files the episodes changed, each once, in order of first change
    (an episode names the files inside its repository relative to it: the ones outside it
    are left out, and so is the count of files an episode's own list left out)."""
    names = (_MORE.sub("", f.strip()) for m in episodes for f in _field(m.content, "Changed").split(","))
    return list(dict.fromkeys(f for f in names if f and not _OUTSIDE.match(f)))


def plan(episodes: Iterable[Memory], kept: Iterable[Memory] = ()) -> list[Fold]:
    """Group ``episodes`` by project, topic and week; a group of one is left as it is
    (folding it would save little and lose its wording). ``kept``: the other memories
    of their sessions (highlights), whose sentences a summary need not repeat."""
    episodes, kept = list(episodes), list(kept)
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
    novelty: dict[str | None, Novelty] = {}
    for project, topic, week, found in runs:
        if len(found) < 2:
            continue
        if project not in novelty:  # rarity within the project; its highlights count as said
            novelty[project] = Novelty([*(x for m in episodes if m.project == project for x in sentences(m.content)),
                                        *(m.content for m in kept if m.project == project)])
            for m in kept:
                if m.project == project:
                    novelty[project].cover(m.content)
        head = f"SUMMARY of {len(found)} episodes, week {week}:"
        files = files_changed(found)
        tail = ["Changed: " + ", ".join(files[:FILES]) + (f" and {len(files) - FILES} more" if len(files) > FILES else "")]
        folds.append(Fold(project, topic, week, tuple(found),
                          "\n".join([head, *_lines([key_lines(m, novelty[project], elsewhere.get(m.session, ""))
                                               for m in found]),
                                     *(tail if files else [])])))
    return folds
