"""Where marm keeps its files, and the runtime settings every process reads fresh.

Precedence for a setting: an explicit flag on the command line > a value saved in the
database with ``marm config set`` > an environment variable > the default here. A saved
value beats the environment on purpose: a user who turned capture off with
``marm config set capture off`` must not be overridden by a stale shell profile.
"""

from __future__ import annotations

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


ON_OFF = ("on", "off")

#: Every runtime setting marm knows. ``marm config set`` refuses other keys.
SETTINGS: dict[str, Setting] = {
    s.key: s
    for s in (
        Setting("capture", "on", "hooks capture what a turn decided or fixed", "MARM_CAPTURE", ON_OFF),
        Setting("inject", "on", "hooks inject recall into the agent's context", "MARM_INJECT", ON_OFF),
        Setting("inject.max_chars", "1500", "cap on text a hook injects", "MARM_INJECT_MAX_CHARS"),
        Setting("inject.recall", "auto", "recall lane for prompt hooks: auto (meaning when the "
                "model is available) or lexical (fastest)", "MARM_INJECT_RECALL", ("auto", "lexical")),
        Setting("inject.min_score", "0.24", "least fused recall score (0-1) a memory needs to be "
                "injected for a prompt", "MARM_INJECT_MIN_SCORE"),
        Setting("inject.min_meaning", "0.35", "least cosine (0-1) between a prompt and a memory for "
                "it to be injected", "MARM_INJECT_MIN_MEANING"),
        Setting("auto_concepts", "on", "the drain extracts concepts from new memories",
                "MARM_AUTO_CONCEPTS", ON_OFF),
        Setting("auto_code_index", "on", "the drain re-indexes repositories hooks marked dirty",
                "MARM_AUTO_CODE_INDEX", ON_OFF),
        Setting("embed.model", "sentence-transformers/all-MiniLM-L6-v2",
                "fastembed model id used for vectors", "MARM_EMBED_MODEL"),
        Setting("embed.download", "off", "allow fastembed to download a configured model",
                "MARM_EMBED_DOWNLOAD", ON_OFF),
        Setting("session", "default", "the session new memories are tagged with", "MARM_SESSION"),
    )
}

#: Longest memory text accepted, in characters. Long texts are chunked for embedding.
MAX_CONTENT_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class Resolved:
    """A setting's value and where it came from: ``saved``, ``env NAME`` or ``default``."""

    value: str
    source: str


def resolve(key: str, saved: Mapping[str, str], env: Mapping[str, str]) -> Resolved:
    """The one precedence rule: a value saved in the database > the environment > the default.

    Pure: the caller passes what the database holds (``flags``) and its environment.
    """
    spec = SETTINGS[key]
    if key in saved:
        return Resolved(saved[key], "saved")
    if spec.env and env.get(spec.env):
        return Resolved(env[spec.env], f"env {spec.env}")
    return Resolved(spec.default, "default")
