"""Every operation marm offers, registered once in ``REGISTRY``.

``load()`` imports the op modules (each registers its ops at import). The modules are
light: heavy libraries are imported inside the ops that need them.
"""

from __future__ import annotations

import importlib

from marm.ops.registry import REGISTRY, Op, Param, op

#: Op modules, in the order their commands appear in `marm --help`.
MODULES = (
    "marm.ops.memory",
    "marm.ops.notebook",
    "marm.ops.system",
    "marm.ops.background",
    "marm.ops.embedding",
)


def load() -> dict[tuple[str, ...], Op]:
    for name in MODULES:
        importlib.import_module(name)
    return REGISTRY


__all__ = ["REGISTRY", "Op", "Param", "load", "op"]
