"""Every operation marm offers, registered once in ``REGISTRY``.

``load()`` imports the op modules (each registers its ops at import). The modules are
light: heavy libraries are imported inside the ops that need them. A CLI process that
runs one command imports only the module that defines it (``load(word)``), so a new
module costs ``marm log`` nothing; ``COMMANDS`` says which module that is, and a test
checks it against what the modules register.
"""

from __future__ import annotations

import importlib

from marm.ops.registry import REGISTRY, Op, Param, op

#: Op module -> the first words of the commands it registers, in `marm --help` order.
COMMANDS: dict[str, tuple[str, ...]] = {
    "marm.ops.memory": ("log", "recall", "show", "delete", "summary", "log-show"),
    "marm.ops.review": ("doubt", "retract", "supersede", "restore", "forget", "history"),
    "marm.ops.notebook": ("notebook", "sessions", "session"),
    "marm.ops.transfer": ("export", "import"),
    "marm.ops.system": ("status", "doctor", "config"),
    "marm.ops.background": ("drain",),
    "marm.ops.embedding": ("embed",),
    "marm.ops.concepts": ("concepts",),
    "marm.ops.code": ("code",),
    "marm.ops.agents": ("hook", "init"),
    "marm.ops.serve": ("mcp",),
}
MODULES = tuple(COMMANDS)


def load(word: str | None = None) -> dict[tuple[str, ...], Op]:
    """The registry: every op, or (given a command's first word that some module
    defines) just that module's ops."""
    owners = [m for m, words in COMMANDS.items() if word in words] if word else []
    for name in owners or MODULES:
        importlib.import_module(name)
    return REGISTRY


__all__ = ["COMMANDS", "MODULES", "REGISTRY", "Op", "Param", "load", "op"]
