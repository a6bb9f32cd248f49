"""What an extraction is, and the rules every extractor shares.

An extractor turns one memory's text into ``Mention``s (entities as that memory names
them) and ``Relation``s between them. Two kinds of relation exist:

- typed: a subject-verb-object triple whose verb lemma is a key of ``PREDICATES``,
  matched exactly (``cause`` is never read as ``use``);
- ``related_to``: a co-occurrence edge, at most ``COOCCURRENCE_PER_SENTENCE`` per
  sentence, only between salient mentions, never one for every pair.

``finish`` then resolves names through the review verdicts (aliases, suppressions),
drops what they remove, and caps a memory at ``MAX_EDGES`` relations and
``MAX_MENTIONS`` mentions, so no memory floods the graph.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

# The graph's input rows are the store's types: extraction produces what the graph holds.
from marm.store.concept_graph import TYPE_RANK, Extraction, Mention, Relation  # noqa: F401

MAX_EDGES = 10
MAX_MENTIONS = 40
COOCCURRENCE_PER_SENTENCE = 2
#: Mentions below this salience take part in typed relations but not in co-occurrence.
COOCCURRENCE_MIN_SALIENCE = 0.5
RELATED = "related_to"
#: Characters of a memory that extraction reads; the rest of a very long memory is skipped.
MAX_TEXT_CHARS = 20_000


#: Exact verb lemma -> (predicate, the preposition that introduces the object, if any).
PREDICATES: dict[str, tuple[str, str | None]] = {
    "fix": ("fixes", None),
    "resolve": ("fixes", None),
    "solve": ("fixes", None),
    "repair": ("fixes", None),
    "patch": ("fixes", None),
    "workaround": ("fixes", None),
    "use": ("uses", None),
    "utilize": ("uses", None),
    "employ": ("uses", None),
    "leverage": ("uses", None),
    "adopt": ("uses", None),
    "call": ("calls", None),
    "invoke": ("calls", None),
    "cause": ("causes", None),
    "trigger": ("causes", None),
    "induce": ("causes", None),
    "produce": ("causes", None),
    "break": ("breaks", None),
    "replace": ("replaces", None),
    "supersede": ("replaces", None),
    "substitute": ("replaces", None),
    "deprecate": ("deprecates", None),
    "depend": ("depends_on", "on"),
    "rely": ("depends_on", "on"),
    "require": ("depends_on", None),
    "need": ("depends_on", None),
    "implement": ("implements", None),
    "extend": ("extends", None),
    "subclass": ("extends", None),
    "inherit": ("extends", "from"),
    "contain": ("contains", None),
    "include": ("contains", None),
    "wrap": ("wraps", None),
    "import": ("imports", None),
    "prevent": ("prevents", None),
    "block": ("prevents", None),
    "avoid": ("prevents", None),
    "create": ("creates", None),
    "generate": ("creates", None),
    "spawn": ("creates", None),
    "configure": ("configures", None),
    "test": ("tests", None),
    "verify": ("tests", None),
    "store": ("stores", None),
    "persist": ("stores", None),
    "cache": ("stores", None),
    "read": ("reads", None),
    "write": ("writes", None),
    "parse": ("parses", None),
    "remove": ("removes", None),
    "delete": ("removes", None),
    "drop": ("removes", None),
    "add": ("adds", None),
    "introduce": ("adds", None),
    "migrate": ("migrates_to", "to"),
    "switch": ("migrates_to", "to"),
    "move": ("migrates_to", "to"),
    "support": ("supports", None),
    "own": ("owns", None),
    "maintain": ("owns", None),
    "like": ("likes", None),
    "love": ("likes", None),
    "enjoy": ("likes", None),
    "prefer": ("prefers", None),
    "hate": ("dislikes", None),
    "dislike": ("dislikes", None),
    "visit": ("visits", None),
    "attend": ("attends", None),
    "join": ("joins", None),
    "build": ("builds", None),
}

#: Head lemmas that make a noun phrase an ``error``.
ERROR_WORDS = frozenset(
    "error bug deadlock crash exception contention leak race failure timeout panic regression"
    " segfault hang stall overflow corruption outage traceback warning flake flakiness"
    " conflict bottleneck slowdown vulnerability incident breakage".split()
)
#: Head lemmas that make a noun phrase a ``decision``.
DECISION_WORDS = frozenset("decision choice policy convention tradeoff trade-off rule adr".split())
#: Lower-case names of common developer tools; the phrase becomes a ``tool``.
TOOLS = frozenset(
    "git github gitlab sqlite postgres postgresql mysql redis kafka rabbitmq docker kubernetes"
    " k8s helm terraform ansible nginx python node nodejs npm pnpm yarn pip uv poetry pytest"
    " jest mypy ruff black eslint prettier webpack vite cargo rustc go gcc clang cmake make"
    " bazel ninja spacy numpy pandas torch pytorch tensorflow fastembed onnx onnxruntime"
    " tree-sitter fastapi flask django react vue svelte typer click celery airflow grafana"
    " prometheus sentry jenkins circleci vscode vim emacs bash zsh tmux ssh curl jq sed awk"
    " s3 aws gcp azure linux macos windows wal fts5 mcp openai claude codex gemini".split()
)
#: Phrases too generic to be an entity on their own.
GENERIC = frozenset(
    "thing things something anything everything nothing stuff lot lots bit way ways time times"
    " day days today yesterday tomorrow tonight week weekend month year one ones kind sort"
    " part piece place people guy guys person someone everyone anyone fact idea point case"
    " while moment hey hi hello yeah yes no thanks thank lol wow okay ok".split()
)

_EDGE_PUNCT = "\"'`“”‘’()[]{}<>.,;:!?*~#"  # not - or _: they begin --flags and _names
_SPACE = re.compile(r"\s+")


def normal_key(text: str) -> str:
    """The cheap normal form (no model): trimmed of surrounding punctuation, one space
    between words, lower case. Extractors add the head lemma; review verbs and queries
    use this directly."""
    return _SPACE.sub(" ", text.strip().strip(_EDGE_PUNCT).strip()).lower()


def phrase_type(words: Sequence[str], head: str) -> str:
    """The type of a noun phrase from its lower-case words and its head lemma."""
    if head in ERROR_WORDS:
        return "error"
    if head in DECISION_WORDS:
        return "decision"
    if " ".join(words) in TOOLS or (len(words) == 1 and head in TOOLS):
        return "tool"
    return "concept"


def merge_mentions(found: Sequence[Mention]) -> dict[str, Mention]:
    """One mention per key: the most specific type, the highest salience, plus a little
    for every repetition."""
    out: dict[str, Mention] = {}
    for m in found:
        old = out.get(m.key)
        if old is None:
            out[m.key] = m
            continue
        better = m if TYPE_RANK.get(m.type, 99) < TYPE_RANK.get(old.type, 99) else old
        out[m.key] = Mention(
            m.key,
            better.name,
            better.type,
            round(min(1.0, max(old.salience, m.salience) + 0.05), 3),
        )
    return out


def cooccurrence(sentence: Sequence[Mention], linked: set[frozenset[str]]) -> list[Relation]:
    """At most ``COOCCURRENCE_PER_SENTENCE`` edges: the sentence's most salient mention
    to the next most salient ones, skipping pairs a typed relation already links."""
    ranked = sorted(
        {m.key: m for m in sentence if m.salience >= COOCCURRENCE_MIN_SALIENCE}.values(),
        key=lambda m: -m.salience,
    )
    if len(ranked) < 2:
        return []
    top, out = ranked[0], []
    for other in ranked[1:]:
        pair = frozenset((top.key, other.key))
        if pair in linked:
            continue
        linked.add(pair)
        out.append(
            Relation(top.key, RELATED, other.key, round(0.5 * min(top.salience, other.salience), 3))
        )
        if len(out) >= COOCCURRENCE_PER_SENTENCE:
            break
    return out


def finish(raw: Extraction, resolve: Callable[[str], str | None]) -> Extraction:
    """Apply the review verdicts (``resolve`` maps a key to its canonical key, or None
    when suppressed) and the per-memory bounds."""
    mapped: dict[str, str | None] = {}
    mentions: list[Mention] = []
    for m in raw.mentions:
        key = resolve(m.key)
        mapped[m.key] = key
        if key is None:
            continue
        mentions.append(m if key == m.key else Mention(key, key, m.type, m.salience))
    kept = merge_mentions(mentions)
    if len(kept) > MAX_MENTIONS:
        kept = dict(sorted(kept.items(), key=lambda kv: -kv[1].salience)[:MAX_MENTIONS])
    relations: dict[tuple[str, str, str], Relation] = {}
    for r in raw.relations:
        source, target = mapped.get(r.source), mapped.get(r.target)
        if (
            source is None
            or target is None
            or source == target
            or source not in kept
            or target not in kept
        ):
            continue
        k = (source, r.predicate, target)
        if k not in relations or relations[k].weight < r.weight:
            relations[k] = Relation(source, r.predicate, target, r.weight)
    ordered = sorted(relations.values(), key=lambda r: (r.predicate == RELATED, -r.weight))
    return Extraction(tuple(kept.values()), tuple(ordered[:MAX_EDGES]))
