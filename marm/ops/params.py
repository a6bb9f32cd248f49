"""Parameters several ops share, so their help reads the same everywhere."""

from __future__ import annotations

from typing import Annotated

from marm.ops.registry import Param

ProjectOpt = Annotated[
    str | None,
    Param("project: a name or a path in a git repository (default: the current repository, "
          "or $MARM_PROJECT)", short="-p"),
]
AllProjects = Annotated[bool, Param("look in every project, not just the current one and global")]
SessionOpt = Annotated[str | None, Param("session name (default: the active session for writes, "
                                         "every session for reads)", short="-s")]
