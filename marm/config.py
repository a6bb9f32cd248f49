"""Where marm keeps its files, and the runtime settings every process reads fresh.

Precedence for a setting: an explicit flag on the command line > a value saved for the
project (``marm config set KEY VALUE --project``) > the repository's own ``.marm.toml`` >
a value saved globally (``marm config set``) > an environment variable > the default
here. A saved value beats the environment on purpose: a user who turned capture off with
``marm config set capture off`` must not be overridden by a stale shell profile; a
project's value beats the global one because it is the narrower choice.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    """The data directory: ``$MARM_HOME`` when set, else the platform's user data dir."""
    env = os.environ if env is None else env
    explicit = env.get("MARM_HOME")
    if explicit:
        return Path(explicit).expanduser()
    import platformdirs  # only paid by processes that have no MARM_HOME

    return Path(platformdirs.user_data_dir("marm", appauthor=False))


def database_path(home: Path) -> Path:
    return home / "marm.db"


def derived_path(home: Path) -> Path:
    """The disposable database of derived graphs (concepts, code); safe to delete."""
    return home / "derived.db"


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    default: str
    help: str
    env: str | None = None
    choices: tuple[str, ...] | None = None
    bounds: tuple[float, float] | None = None  # a number from .. to (both included)
    whole: bool = False                        # ... and a whole one

    def number(self, raw: str) -> float:
        """``raw`` as this setting's number; ValueError saying what it takes otherwise."""
        assert self.bounds is not None, self.key
        low, high = self.bounds
        try:
            value = float(raw) if not self.whole else float(int(raw))
        except ValueError:
            value = math.nan
        if not low <= value <= high:  # NaN fails too
            what = "a whole number" if self.whole else "a number"
            raise ValueError(f"{self.key} takes {what} from {low:g} to {high:g}, not {raw!r}")
        return value

    def number_or_default(self, raw: str) -> float:
        """``raw`` as this setting's number, or the default's when it is not one within
        the bounds: for readers that must not fail on a setting (hooks, drains, recall)."""
        try:
            return self.number(raw)
        except ValueError:
            return self.number(self.default)

    def refusal(self, raw: str) -> str | None:
        """Why ``raw`` cannot be saved for this setting, or None when it can."""
        if self.choices and raw not in self.choices:
            return f"{self.key} takes one of {', '.join(self.choices)}, not {raw!r}"
        if self.bounds is not None:
            try:
                self.number(raw)
            except ValueError as e:
                return str(e)
        return None


ON_OFF = ("on", "off")
#: Scores and cosines; ages in days (0 switches ``recall.episode_half_life_days`` off).
UNIT = (0.0, 1.0)
DAYS = (0.0, 36_500.0)

#: Every runtime setting marm knows. ``marm config set`` refuses other keys.
SETTINGS: dict[str, Setting] = {
    s.key: s
    for s in (
        Setting("memory", "on", "marm is active here: off makes every hook exit at once (nothing "
                "stored or injected)", "MARM_MEMORY", ON_OFF),
        Setting("mode", "opt-out", "opt-in: only repositories that say memory = true (their "
                ".marm.toml or `config set memory on --project`) are active", "MARM_MODE",
                ("opt-out", "opt-in")),
        Setting("capture", "on", "hooks capture what a turn decided or fixed", "MARM_CAPTURE", ON_OFF),
        Setting("inject", "on", "hooks inject recall into the agent's context", "MARM_INJECT", ON_OFF),
        Setting("inject.max_chars", "1500", "cap on text a hook injects", "MARM_INJECT_MAX_CHARS",
                bounds=(200, 8000), whole=True),
        Setting("inject.recall", "auto", "recall lane for prompt hooks: auto (meaning when the "
                "model is available) or lexical (fastest)", "MARM_INJECT_RECALL", ("auto", "lexical")),
        Setting("inject.min_score", "0.24", "least fused recall score (0-1) a memory needs to be "
                "injected for a prompt", "MARM_INJECT_MIN_SCORE", bounds=UNIT),
        Setting("inject.min_meaning", "0.35", "least cosine (0-1) between a prompt and a memory for "
                "it to be injected", "MARM_INJECT_MIN_MEANING", bounds=UNIT),
        Setting("inject.ask_min_score", "0.22", "inject.min_score for a prompt that asks a question "
                "(how, why, which ...?) rather than asks for work", "MARM_INJECT_ASK_MIN_SCORE", bounds=UNIT),
        Setting("inject.ask_min_meaning", "0.30", "inject.min_meaning for a prompt that asks a question",
                "MARM_INJECT_ASK_MIN_MEANING", bounds=UNIT),
        Setting("auto_concepts", "on", "the drain extracts concepts from new memories",
                "MARM_AUTO_CONCEPTS", ON_OFF),
        Setting("auto_code_index", "on", "the drain re-indexes repositories hooks marked dirty",
                "MARM_AUTO_CODE_INDEX", ON_OFF),
        Setting("embed.model", "sentence-transformers/all-MiniLM-L6-v2",
                "fastembed model id used for vectors", "MARM_EMBED_MODEL"),
        Setting("embed.download", "off", "allow fastembed to download a configured model",
                "MARM_EMBED_DOWNLOAD", ON_OFF),
        Setting("compact.older_than_days", "30", "`marm compact` folds episodes older than this "
                "many days", "MARM_COMPACT_OLDER_THAN_DAYS", bounds=DAYS),
        Setting("summarize.staged_days", "14", "a summary staged with `marm summarize stage` that "
                "nobody applies or discards within this many days is discarded (by the drain, or when "
                "clusters are listed)", "MARM_SUMMARIZE_STAGED_DAYS", bounds=DAYS),
        Setting("recall.episode_half_life_days", "180", "an episode's recall score halves over this "
                "many days of age (highlights and hand-written memories do not age)",
                "MARM_EPISODE_HALF_LIFE_DAYS", bounds=DAYS),
        Setting("sync.batch", "2000", "events `marm sync` sends or fetches per request to a remote "
                "(smaller on a slow link; a killed sync redoes at most one)", "MARM_SYNC_BATCH",
                bounds=(1, 100_000), whole=True),
        Setting("session", "default", "the session new memories are tagged with", "MARM_SESSION"),
    )
}

#: Longest memory text accepted, in characters. Long texts are chunked for embedding.
MAX_CONTENT_CHARS = 100_000


#: Settings that only make sense for the whole machine: never per project or per file.
GLOBAL_ONLY = frozenset({"mode", "embed.model", "embed.download", "session", "recall.episode_half_life_days",
                         "sync.batch"})
#: The file a repository carries at its root to opt out or in.
PROJECT_FILE = ".marm.toml"


@dataclass(frozen=True, slots=True)
class Resolved:
    """A setting's value and where it came from: ``project``, ``project file .marm.toml``,
    ``global``, ``environment NAME`` or ``default``."""

    value: str
    source: str


def resolve(key: str, saved: Mapping[str, str], env: Mapping[str, str],
            project: Mapping[str, str] | None = None, repository: Mapping[str, str] | None = None) -> Resolved:
    """The one precedence rule: project > repository file > global > environment > default.

    Pure: the caller passes what the database holds (``saved``: the global ``flags``;
    ``project``: what is saved for the current project), the repository's
    ``.marm.toml`` (``repository``, values already ``on``/``off``) and its environment.
    """
    spec = SETTINGS[key]
    if key not in GLOBAL_ONLY:
        if project and key in project:
            return Resolved(project[key], "project")
        if repository and key in repository:
            return Resolved(repository[key], f"project file {PROJECT_FILE}")
    if key in saved:
        return Resolved(saved[key], "global")
    if spec.env and env.get(spec.env):
        return Resolved(env[spec.env], f"environment {spec.env}")
    return Resolved(spec.default, "default")
