"""Which project an invocation belongs to, decided per invocation (never per process).

The project of a directory is the top-level of its git repository, found through the
*common* git dir so that every worktree of one repository is one project. A
``--project`` flag or ``MARM_PROJECT`` overrides it: a value that looks like a path
(contains a separator, or starts with ``.`` or ``~``) is resolved the same way, any
other value is taken as a project name. Outside a repository there is no project:
memories written there are global and every project sees them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def git_project(directory: Path) -> str | None:
    """The main work tree's top-level of the repository containing ``directory``."""
    try:
        here = directory.resolve()
    except OSError:
        return None
    for candidate in (here, *here.parents):
        dot_git = candidate / ".git"
        try:
            if dot_git.is_dir():
                return str(candidate)
            if dot_git.is_file():
                return _from_gitfile(candidate, dot_git)
        except OSError:
            return None
    return None


def _from_gitfile(top: Path, dot_git: Path) -> str:
    """A worktree (or submodule) has a ``.git`` file: ``gitdir: <path>``."""
    text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return str(top)
    gitdir = (top / text[len("gitdir:"):].strip()).resolve()
    commondir_file = gitdir / "commondir"
    if commondir_file.is_file():
        common = (gitdir / commondir_file.read_text(encoding="utf-8").strip()).resolve()
        if common.name == ".git":
            return str(common.parent)
    return str(top)  # a submodule is a project of its own


def looks_like_path(value: str) -> bool:
    return "/" in value or "\\" in value or value.startswith((".", "~"))


def resolve_project(explicit: str | None, env: Mapping[str, str], cwd: Path) -> str | None:
    """``explicit`` (a flag) beats ``MARM_PROJECT``, which beats the git repository of ``cwd``."""
    value = explicit if explicit else env.get("MARM_PROJECT") or None
    if value is None:
        return git_project(cwd)
    if looks_like_path(value):
        path = (cwd / Path(value).expanduser()).resolve()
        return git_project(path) or str(path)
    return value


def display(project: str | None) -> str:
    """Short form for people: the last path component, or ``(global)``."""
    if project is None:
        return "(global)"
    return Path(project).name if looks_like_path(project) else project
