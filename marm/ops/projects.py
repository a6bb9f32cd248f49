"""Whether marm is active in a directory, and why not.

One answer for every surface: the hooks ask it before doing anything (an inactive
directory costs a settings read and nothing else: no memory written, no model loaded)
and ``marm status`` shows it. Inactive means one of: ``memory = off`` for the project
(its ``.marm.toml``, a ``--project`` setting, or globally); the directory is the home
directory or a temporary directory and nobody asked for it; or the global ``mode`` is
``opt-in`` and this repository does not say ``memory = true``.
"""

from __future__ import annotations

from dataclasses import dataclass

from marm import config, scope
from marm.context import Ctx

#: Where a ``memory = on`` counts as this repository asking for marm.
_ASKED_HERE = ("project", f"project file {config.PROJECT_FILE}")


@dataclass(frozen=True, slots=True)
class Activity:
    active: bool
    reason: str
    project: str | None


def activity(ctx: Ctx) -> Activity:
    """Is marm active for ``ctx`` (its cwd and project)? With the reason either way."""
    project = ctx.project()
    here = scope.display(project)
    _, problem = ctx.project_file(project)
    memory = ctx.resolved("memory", project)
    if memory.value == "off":
        why = problem or f"memory = off ({memory.source})"
        return Activity(False, f"marm is off for {here}: {why}", project)
    asked = memory.source in _ASKED_HERE or bool(ctx.env.get("MARM_PROJECT"))
    if not asked:
        from pathlib import Path

        candidates = [ctx.cwd] + ([Path(project)] if project and scope.looks_like_path(project) else [])
        for path in candidates:
            place = scope.never_a_project(path, ctx.env)
            if place:
                return Activity(False, f"{path.name or path} is {place}, never a project unless asked "
                                       f"(memory = true in its {config.PROJECT_FILE}, or MARM_PROJECT)", project)
        mode = ctx.resolved("mode", project)
        if mode.value == "opt-in":
            return Activity(False, f"mode = opt-in ({mode.source}) and {here} does not say memory = true "
                                   f"(in its {config.PROJECT_FILE}, or `marm config set memory on --project`)",
                            project)
    return Activity(True, f"active for {here}", project)
