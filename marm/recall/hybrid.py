"""The hybrid lane: words and meaning fused into one score in [0, 1].

Every part of the score is an absolute measure, not a rank within this query, so a
score means the same thing across queries (hooks inject only above a threshold):

- ``meaning``: cosine of the query with the memory's best chunk (chunk collapse),
  clipped at 0. Memories without a vector yet score 0 here and compete on words.
- ``words``: BM25 of the memory divided by the summed IDF of the query's words, capped
  at 1: roughly the share of the query's information the memory contains.
- ``before`` / ``after``: the ``words`` score of the memory written just before / after
  it in the same session, times the share of the query's words the memory itself
  misses (``_context``). A memory often answers the one before it (the question's
  words are there, not in the answer), or is explained by the one after it; a memory
  that holds the words itself needs no credit for its neighbour's, or a near-duplicate
  written just before a new memory would outrank it with the new memory's words.
- ``reply_words`` / ``reply_meaning``: when the memory just before asks a question
  (it holds a "?"), that question's ``words`` and ``meaning`` scores. A question is
  phrased like the query; the memory after it is where the answer is.
- ``statement``: the memory is not a bare question (it does not end with "?"): a
  question repeats the query's words but answers nothing.
- ``names``: the share of the names the query mentions (capitalised words, code
  identifiers) that the memory contains verbatim, and ``lead``: the share it names in
  its label, where a memory says who or what it is about ("Ana: ...",
  "PaymentService: ...": the text before a colon in its first characters; without
  one, the first characters). A name in the label is what the memory is about; a
  name later on ("Thanks, Ana!") is often only who it talks to. Names are matched
  here, exactly. Common names (in more than ``COMMON_NAME`` of the memories in scope:
  the user, a teammate, the project) are left out of the ``words`` and ``meaning``
  parts: such a name may be rare in the store but on every memory of a project, and
  would swamp BM25, and it pulls a small embedding model towards every memory that
  mentions it, whatever it says. Rare
  names (a pet, a book, an identifier) stay in: they are what the query is about.
- ``time``: closeness of the memory's validity time to a date the query names
  ("on 7 July 2023", "in March 2024", "yesterday"), or the share of a date the memory
  itself names (resolved when it was written: "yesterday" in a memory of 4 October is
  3 October) that falls inside it, whichever is higher; 0 when it names none.
  ``when``: for a query that asks for a time ("When did we switch to postgres?", "In
  which month ...", "How long ago ..."), whether the memory says when (a date, a
  weekday, "last week", ...).
- ``recency``: a small term that halves every 90 days of validity age.

Candidates are the best word matches, the best vector matches, the session
neighbours of the best word matches, the replies to the questions among both, and the
memories valid at or naming a date the query names; the weighted sum ranks them, and
the top is diversified (``marm.recall.diverse``: a near-duplicate of a higher result
gives way to the next distinct memory). A query holding a literal that memories in
scope hold ranks those first (``only``, from ``marm.recall.shape.holding``, raised by
``LITERAL_BOOST``). What a question
sets aside ("besides pottery") is left out of its words and meaning. The weights were
tuned on a public conversational-memory benchmark (LoCoMo, dev half) and rounded;
nothing in them is specific to it.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from marm.recall import aging, bm25, dates, diverse, lexical, shape
from marm.store import Store, recall_reads, vectors
from marm.store.memories import Filter
from marm.store.records import Hit, Memory
from marm.text import STAMP

if TYPE_CHECKING:  # start-up cost: numpy and the thread pool load when a query is scored
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    from numpy.typing import NDArray

    from marm.embed import Embedder
    from marm.embed.drain import QueryBatch

    #: One matrix part: memory ids and, per row, a vector (or a cosine).
    Part = tuple[NDArray[np.int64], NDArray[np.float32]]


@dataclass(frozen=True, slots=True)
class Weights:
    """Weights of the score's parts; they sum to 1, so the score lies in [0, 1]."""

    meaning: float = 0.25
    words: float = 0.13
    before: float = 0.06
    after: float = 0.06
    reply_words: float = 0.08
    reply_meaning: float = 0.04
    statement: float = 0.03
    names: float = 0.06
    lead: float = 0.06
    time: float = 0.17
    when: float = 0.04
    recency: float = 0.02


WEIGHTS = Weights()
#: How far below a highlight the episode holding the same sentence ranks.
SAME_CONTENT_GAP = 0.001
#: How much better than its highlight an episode may score and still give way to it:
#: within this, the match is the highlight's sentence, which says it more precisely;
#: beyond it, the episode matches on something else it holds and keeps its score.
GIVES_WAY_WITHIN = 0.05
#: What a memory holding the literal a question names (a path, a key, code) gains: more
#: than the spread of a typical top 5, so the holders rank first, yet the question is
#: still answered by memories that say it without the literal (the file a fix was in
#: is often not named in the fix).
LITERAL_BOOST = 0.2
#: Candidates taken from each side before fusion.
WORD_CANDIDATES = 150
VECTOR_CANDIDATES = 100
#: Memories still waiting for vectors (a drain holds them) that a recall embeds for
#: itself, newest first, without storing them.
FRESH_ON_RECALL = 8
RECENCY_HALF_LIFE_DAYS = 90.0
#: Hits scoring below this share of the best hit are dropped: they only fill the list
#: (a small embedding model gives unrelated text a cosine of 0.2), and a caller reading
#: five results should not have to guess which of them are noise.
RELATIVE_FLOOR = 0.3
#: A name in more than this share of the memories is common (see ``common_names``).
COMMON_NAME = 0.05
#: Characters at the start of a memory where its label ("Ana:", "DECISION:") is looked for.
LEAD_CHARS = 40
_LABEL = re.compile(rf"\s*([^:\n]{{1,{LEAD_CHARS}}}):")

_NAME = re.compile(r"\b(?:[A-Z][\w-]*[a-z0-9][\w-]*|[A-Za-z]+_[\w]+|[a-z]+[A-Z]\w*)\b")
_QUESTION_WORDS = frozenset(
    "what when where which who whom whose why how did does do is are was were can could "
    "would should will has have had the a an in on at for of to and or but if".split()
)


def names_in(query: str) -> list[str]:
    """Names the query mentions: capitalised words (not sentence-initial function words)
    and code identifiers (snake_case, camelCase). Possessive 's is dropped."""
    out: list[str] = []
    for match in _NAME.finditer(query):
        word = match.group(0)
        if word.endswith("'s"):
            word = word[:-2]
        if word.lower() in _QUESTION_WORDS or word.lower() in lexical.STOPWORDS:
            continue
        out.append(word)
    return list(dict.fromkeys(out))


def without_names(query: str, names: list[str]) -> str:
    """``query`` with the names taken out (the whole query if nothing else is left)."""
    return _cut(query, _mentions(query, names), set(names))


@functools.lru_cache(maxsize=8)
def _mention_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for every name (the longest first, so "Ana-Maria" is not "Ana"), as
    a word of its own, possessive 's included."""
    alternatives = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?:'s)?(?!\w)")


def _mentions(text: str, names: list[str]) -> list[tuple[int, int, str]]:
    """Where ``text`` mentions each of ``names``: (start, end, name), in order, found in
    one pass (a pasted prompt holds hundreds of names, and ``topics`` cuts them out
    of it in up to 128 ways)."""
    if not names:
        return []
    return [(m.start(), m.end(), m.group(0).removesuffix("'s"))
            for m in _mention_pattern(tuple(names)).finditer(text)]


def _cut(text: str, mentions: list[tuple[int, int, str]], drop: set[str]) -> str:
    """``text`` without the ``mentions`` of the names in ``drop`` (the whole text if
    nothing else is left), its white space made single."""
    pieces, at = [], 0
    for start, end, name in mentions:
        if name in drop:
            pieces.append(text[at:start])
            at = end
    pieces.append(text[at:])
    rest = " ".join(" ".join(pieces).split())
    return rest if lexical.words(rest) else text


#: Names whose every combination ``topics`` spells out (2 ** 6 topics at most).
TOPIC_NAMES = 6


def topics(query: str, names: list[str]) -> list[str]:
    """Every topic ``query`` can have, whichever of ``names`` turn out common: the word
    statistics of all of them are read in the recall's first statement, with the counts
    that decide which names are common (``common_names``).

    The combinations double with each name, and a pasted prompt can hold dozens of
    capitalised words: past ``TOPIC_NAMES`` names the rest are kept or dropped together.
    Every topic's words are among the query's own, which are always counted; only a
    compound spelled across names dropped in another combination can go uncounted,
    and counts as held by no memory.
    """
    rest = lexical.without_exceptions(query)
    head, tail = names[:TOPIC_NAMES], names[TOPIC_NAMES:]
    masks = [(*mask, *([last] * len(tail))) for mask in itertools.product((False, True), repeat=len(head))
             for last in ((False, True) if tail else (False,))]
    mentions = _mentions(rest, names)
    return list(dict.fromkeys(_cut(rest, mentions, {n for n, out in zip(names, mask, strict=True) if out})
                              for mask in masks))


def query_terms(topic: str) -> list[str]:
    """The words and compound spellings of ``topic`` whose index counts a recall reads."""
    return [*lexical.words(topic), *lexical.compounds(topic)]


def common_names(facts: recall_reads.Facts, names: list[str]) -> list[str]:
    """The names among ``names`` that many memories in scope mention (over ``COMMON_NAME``
    of them, as ``facts`` counted them): the user, a teammate, the project. Rare names
    ("Coco", "Becoming Nicole", ``idempotency_key``) say what a memory is about and stay
    in the query's words."""
    common = facts.common(COMMON_NAME)
    return [n for n in names if n.lower() in common]


def _name_share(names: list[str], content: str) -> float:
    if not names:
        return 0.0
    found = sum(1 for n in names if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", content))
    return found / len(names)


def lead_of(content: str) -> str:
    """What a memory says it is about: its label ("Ana: ..." -> "Ana"), else its start."""
    label = _LABEL.match(content)
    return label.group(1) if label else content[:LEAD_CHARS]


def _statement(content: str) -> float:
    return 0.0 if content.rstrip().endswith("?") else 1.0


def _recency(stamp: str, now: datetime) -> float:
    when = dates.parse_stamp(stamp)
    if when is None:
        return 0.0
    age = max(0.0, (now - when).total_seconds() / 86400)
    return 0.5 ** (age / RECENCY_HALF_LIFE_DAYS)


def word_scores(store: Store, query: str, flt: Filter, limit: int,
                facts: recall_reads.Facts | None = None) -> tuple[dict[int, float], recall_reads.Neighbours]:
    """({id: words score in [0, 1]}, their session neighbours) for the best BM25 matches of
    ``query``; ``facts`` counted its terms (read here when the caller has none)."""
    terms = lexical.words(query)
    if not terms:
        return {}, recall_reads.Neighbours()
    if facts is None:
        facts = recall_reads.facts(store, flt, terms=query_terms(query))
    df = facts.words.df
    # The share is of the query's own words: another spelling of one adds no information.
    ceiling = sum(bm25.idf(facts.words.total, df[t]) for t in terms if df.get(t)) or 1.0
    held = [c for c in lexical.compounds(query) if c not in terms and df.get(c)]
    terms = terms + held
    found = bm25.matches(store, terms, flt, limit, recall_reads.WordStats(facts.words.total, df))
    return {mid: min(1.0, max(0.0, raw) / ceiling) for mid, raw in found.ranked}, found.near


_WORKER: ThreadPoolExecutor | None = None


def _worker() -> ThreadPoolExecutor:
    """The process's threads for query embeddings and vector scans (started on first use)."""
    global _WORKER
    if _WORKER is None:
        from concurrent.futures import ThreadPoolExecutor  # start-up cost: see TYPE_CHECKING above

        _WORKER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="marm-meaning")
    return _WORKER


class Meaning:
    """Cosine scores of one query against every stored chunk in scope (best chunk per memory).

    The query is embedded and scored on a worker thread while the caller reads the
    word side: onnxruntime, numpy and SQLite all release the GIL, so on two cores the
    two halves of a recall overlap (100k memories: ~18 ms of meaning, ~15 ms of words).
    The store is only read on the caller's thread (a connection belongs to its thread):
    the vector files and the ids a narrow filter allows come from the recall's first
    statement (``recall_reads.facts``); ``top`` and ``of`` wait for the scores.
    """

    def __init__(self, home: Path, encoder: Embedder, query: str, facts: recall_reads.Facts,
                 fresh: QueryBatch | None = None) -> None:
        import numpy as np

        self.np = np
        parts = [p for p in vectors.read(home, facts.files) if len(p[0])]
        allowed = np.asarray(facts.allowed, dtype=np.int64) if facts.allowed is not None else None
        self._scores = _worker().submit(self._score, encoder, query, parts, allowed, fresh)

    def _score(self, encoder: Embedder, query: str, parts: list[Part],
               allowed: NDArray[np.int64] | None, fresh: QueryBatch | None) -> list[Part]:
        np = self.np
        if fresh is None:
            q = encoder.embed([query])[0]
        else:  # the memories waiting for their vectors are embedded in the query's model call
            q, new = fresh.embed_with(encoder, query)
            parts = parts if new is None else [*parts, new]
        # ``vecdot``, not ``matrix @ q``: BLAS runs a matrix-vector product on every core,
        # and on a busy machine its threads wait for each other (100k vectors: 16 ms
        # against 11 ms on one core) and then spin, taking CPU from the rest of the query.
        scored = [(ids, np.vecdot(matrix, q)) for ids, matrix in parts]
        if allowed is not None:
            scored = [(ids[m], sims[m]) for ids, sims in scored if (m := np.isin(ids, allowed)).any()]
        return scored

    @property
    def parts(self) -> list[Part]:
        """[(memory ids, cosines), ...] per matrix part, once the worker has scored them."""
        return self._scores.result()

    def top(self, k: int) -> dict[int, float]:
        """The ``k`` best memories by their best chunk (possibly fewer)."""
        np = self.np
        best: dict[int, float] = {}
        for ids, sims in self.parts:
            take = min(len(sims), k * 3)
            idx = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
            for mid, s in zip(ids[idx].tolist(), sims[idx].tolist(), strict=True):
                if s > best.get(mid, -2.0):
                    best[mid] = s
        return dict(sorted(best.items(), key=lambda kv: -kv[1])[:k])

    def of(self, memory_ids: list[int]) -> dict[int, float]:
        """Best-chunk cosine of the given memories (those with a vector)."""
        np = self.np
        want = np.asarray(memory_ids, dtype=np.int64)
        best: dict[int, float] = {}
        for ids, sims in self.parts:
            mask = np.isin(ids, want)
            for mid, s in zip(ids[mask].tolist(), sims[mask].tolist(), strict=False):
                if s > best.get(mid, -2.0):
                    best[mid] = s
        return best


def _narrow(flt: Filter) -> bool:
    """Does ``flt`` select by more than scope and status (the vector side then keeps only
    the ids it allows)?"""
    return flt.session is not None or flt.kind is not None or flt.as_of is not None


def search(store: Store, home: Path, encoder: Embedder, query: str, flt: Filter, limit: int,
           semantic_only: bool = False, weights: Weights | None = None,
           pieces: Sequence[str] = (),
           episode_half_life_days: float = aging.EPISODE_HALF_LIFE_DAYS,
           fresh: QueryBatch | None = None) -> list[Hit]:
    """Rank memories for ``query`` by the fused score (or by meaning alone), reading the
    store in at most three statements (``marm.store.recall_reads``). The memories in
    scope holding every literal ``pieces`` of the query (``shape.holding``) are raised
    by ``LITERAL_BOOST``; ``fresh`` embeds the newest memories still waiting for their
    vectors with the query (``marm.embed.drain.QueryBatch``), which are then scored like
    the rest."""
    weights = weights or WEIGHTS
    names = names_in(query)
    now = datetime.now(timezone.utc)
    spans = [] if semantic_only else dates.query_spans(query, now)
    projects = None if flt.all_projects else ([None] if flt.project is None else [flt.project, None])
    facts = recall_reads.facts(
        store, flt, terms=[] if semantic_only else [t for topic in topics(query, names) for t in query_terms(topic)],
        names=[n.lower() for n in names], share=COMMON_NAME, files=(encoder.model, encoder.dim, projects),
        narrow=_narrow(flt), spans=[(start.strftime(STAMP), end.strftime(STAMP)) for start, end in spans],
        pieces=[] if semantic_only else pieces, held_limit=shape.COMMON_LITERAL,
        waiting=0 if fresh is None else FRESH_ON_RECALL)
    topic = without_names(lexical.without_exceptions(query), common_names(facts, names))
    if fresh is not None:
        fresh.see(facts.waiting)
    meaning = Meaning(home, encoder, topic, facts, fresh)  # scores on a worker
    if semantic_only:
        return _by_meaning(store, meaning, flt, limit)
    only = shape.holding(facts.held)
    found = _candidates(store, meaning, topic, flt, limit, facts, only, dated=bool(spans))
    base = _id_scores(found, weights)
    if only is not None:  # what holds the question's literal comes first; the rest may follow
        base = {mid: sc + (LITERAL_BOOST if mid in only else 0.0) for mid, sc in base.items()}
    when = dates.asks_when(query)
    # The parts that need only ids first; the parts that read a memory's text and time
    # can add at most ``reach``, so candidates that cannot reach the top are not scored.
    reach = weights.recency + weights.statement + (weights.names + weights.lead if names else 0.0) + (
        weights.time if spans else 0.0) + (weights.when if when else 0.0)
    rows = _rows_worth_reading(found.rows.rows, base, reach, limit)
    named = found.rows.named
    scored: list[tuple[float, int]] = []
    for mid, row in rows.items():
        score = (
            base[mid]
            + weights.names * _name_share(names, row.content)
            + weights.lead * _name_share(names, lead_of(row.content))
            + weights.statement * _statement(row.content)
            + weights.time * max(dates.closeness(row.valid_at, spans), dates.overlap(named.get(mid, []), spans))
            + (weights.when if when and dates.says_when(row.content) else 0.0)
            + weights.recency * _recency(row.valid_at, now)
        )
        scored.append((min(1.0, max(0.0, score)), mid))
    scored.sort(key=lambda sm: (-sm[0], -sm[1]))
    pool = scored[: limit * 3]
    seen = {mid: rows[mid].memory() for _, mid in pool}
    pool = aging.aged(pool, seen, now, episode_half_life_days)
    pool = below_its_highlights(pool, seen)
    # Noise is dropped before diversifying: it must not take the place of a near-duplicate
    # of a higher result that is worth listing.
    pool = [(sc, mid) for sc, mid in pool if sc >= RELATIVE_FLOOR * pool[0][0]] if pool else []
    pool = diverse.rerank(pool, {mid: m.content for mid, m in seen.items()}, limit)
    return [Hit(seen[mid], score, "hybrid", meaning=max(0.0, found.sims[mid]) if mid in found.sims else None)
            for score, mid in pool if mid in seen]


def below_its_highlights(pool: list[tuple[float, int]], seen: dict[int, Memory]) -> list[tuple[float, int]]:
    """``pool`` (score, id) re-sorted so that an episode ranks just below a highlight of
    the same content (a sentence of the turn's conclusion kept on its own, in the same
    session) when the two match about as well (``GIVES_WAY_WITHIN``): the highlight says
    it more precisely. An episode that matches far better than its highlights matches on
    something else it holds, and keeps its score, as do other episodes."""
    flat = {mid: " ".join(m.content.split()) for mid, m in seen.items()}
    best: dict[int, float] = {}
    for score, mid in pool:
        m = seen.get(mid)
        if m is None or m.kind == "episode":
            continue
        for other_score, other in pool:
            e = seen.get(other)
            if (e is not None and e.kind == "episode" and e.session == m.session and flat[mid] in flat[other]
                    and other_score - score <= GIVES_WAY_WITHIN):
                best[other] = min(best.get(other, other_score), score - SAME_CONTENT_GAP)
    moved = [(min(score, best[mid]) if mid in best else score, mid) for score, mid in pool]
    return sorted(moved, key=lambda sm: (-sm[0], -sm[1]))


def _by_meaning(store: Store, meaning: Meaning, flt: Filter, limit: int) -> list[Hit]:
    """The semantic lane: the best chunks' cosines alone."""
    top = meaning.top(max(VECTOR_CANDIDATES, limit * 3))
    seen = recall_reads.visible(store, top, flt)
    ranked = sorted((mid for mid in top if mid in seen), key=lambda mid: -top[mid])[:limit]
    return [Hit(seen[mid], max(0.0, min(1.0, top[mid])), "semantic") for mid in ranked]


@dataclass(frozen=True, slots=True)
class Candidates:
    """Every memory that may rank, with the parts of its score that need only ids, and
    the visible ones as the read model's third statement read them."""

    ids: set[int]
    words: dict[int, float]           # words score of the word matches
    sims: dict[int, float]            # best-chunk cosine (candidates and replied questions)
    before: dict[int, float]          # words score of the memory just before
    after: dict[int, float]           # words score of the memory just after
    replies: dict[int, int]           # answer -> the question just before it
    rows: recall_reads.CandidateRows  # the visible candidates' records, and the dates they name


def _candidates(store: Store, meaning: Meaning, topic: str, flt: Filter, limit: int,
                facts: recall_reads.Facts, only: set[int] | None = None, dated: bool = False) -> Candidates:
    """The best word matches, the best vector matches, the session neighbours of the word
    matches, the replies to the questions among both, the memories valid at (or naming)
    a date the query names, and ``only`` (memories a literal of the query picked); with
    ``dated`` (the query names a date), the dates each candidate names. Two statements: the word matches with their neighbours while the worker scores the
    meaning, then every candidate's row with the vector matches' neighbours."""
    words, near = word_scores(store, topic, flt, max(WORD_CANDIDATES, limit * 3), facts)
    top = meaning.top(max(VECTOR_CANDIDATES, limit * 3))
    # Context credit flows from a match to its session neighbours: the memory after a
    # word match gets the match's words score as ``before``, the memory before it as
    # ``after``; the memory after a matching question gets the question's scores.
    before = {near.after[p]: words[p] for p in words if p in near.after}
    after = {near.before[q]: words[q] for q in words if q in near.before}
    known = set(top) | set(words) | set(before) | set(after) | (only or set()) | set(facts.dated)
    known.update(near.after[p] for p in near.asking if p in near.after)
    read = recall_reads.rows(store, flt, known, top, dates=dated)
    asking = near.asking | read.near.asking
    follows = {**read.near.after, **near.after}
    replies = {follows[p]: p for p in asking if p in follows}
    ids = set(top) | set(words) | set(before) | set(after) | set(replies) | (only or set())
    ids.update(facts.dated)
    sims = {**meaning.of([c for c in ids | set(replies.values()) if c not in top]), **top}
    return Candidates(ids, words, sims, before, after, replies, read)


def _context(neighbour: float, own: float) -> float:
    """A session neighbour's ``words`` credit for a memory whose own score is ``own``:
    what the neighbour holds of the query, for the part the memory lacks. (Measured on
    LoCoMo dev against the plain neighbour score: any@5 0.814 against 0.816, MRR 0.639
    against 0.637; the difference ``neighbour - own`` gave 0.813 and 0.637.)"""
    return neighbour * (1.0 - own)


def _id_scores(c: Candidates, weights: Weights) -> dict[int, float]:
    """The score parts that need no text: meaning, words, neighbours, replies."""
    base = {mid: weights.meaning * max(0.0, c.sims.get(mid, 0.0)) + weights.words * c.words.get(mid, 0.0)
            + weights.before * _context(c.before.get(mid, 0.0), c.words.get(mid, 0.0))
            + weights.after * _context(c.after.get(mid, 0.0), c.words.get(mid, 0.0))
            for mid in c.ids}
    for mid, question in c.replies.items():
        base[mid] += (weights.reply_words * c.words.get(question, 0.0)
                      + weights.reply_meaning * max(0.0, c.sims.get(question, 0.0)))
    return base


def _rows_worth_reading(visible: dict[int, recall_reads.Row], base: dict[int, float], reach: float,
                        limit: int) -> dict[int, recall_reads.Row]:
    """The visible candidates that can still reach the top ``limit`` (all of them when
    too few of those are visible): the ones whose text is scored."""
    ordered = sorted(base, key=base.__getitem__, reverse=True)
    floor = base[ordered[min(len(ordered), limit * 4) - 1]] if ordered else 0.0
    rows = {m: visible[m] for m in ordered if base[m] + reach >= floor and m in visible}
    if sum(1 for m in rows if base[m] >= floor) < min(limit, len(rows)) or len(rows) < limit:
        rows = {m: visible[m] for m in ordered if m in visible}  # too few visible: score them all
    return rows
