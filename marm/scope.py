"""Which project an invocation belongs to, decided per invocation (never per process).

The project of a directory is the top-level of its git repository, found through the
*common* git dir so that every worktree of one repository is one project. A
``--project`` flag or ``MARM_PROJECT`` overrides it: a value that looks like a path
(contains a separator, or starts with ``.`` or ``~``) is resolved the same way, any
other value is taken as a project name. Outside a repository there is no project:
memories written there are global and every project sees them.

A repository may carry a ``.marm.toml`` at its root (``memory``, ``capture``,
``inject``: true or false) that travels with it; the home directory and the temporary
directories are never a project unless asked, since a dotfiles repository at ``~`` would
otherwise make every directory under it one project.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

#: Keys a repository's file may set, each true or false.
FILE_KEYS = ("memory", "capture", "inject")


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


def file_directory(project: str | None, cwd: Path) -> Path:
    """Where the opt-out/opt-in file is looked for: the project's root when the project
    is a directory, else the directory itself."""
    if project is not None and looks_like_path(project) and Path(project).is_dir():
        return Path(project)
    return cwd


def read_file(directory: Path, name: str) -> tuple[dict[str, str], str | None]:
    """The settings ``directory/name`` says (``on``/``off``) and a problem, if any.

    A missing file says nothing. A file that cannot be read or parsed says
    ``memory = off``: whoever wrote it meant to restrict marm, so marm stays out.
    """
    path = directory / name
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return {"memory": "off"}, f"{path.name} cannot be read ({exc.strerror})"
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return {"memory": "off"}, f"{path.name} is not valid TOML ({exc})"
    said: dict[str, str] = {}
    for key in FILE_KEYS:
        value = data.get(key)
        if isinstance(value, bool):
            said[key] = "on" if value else "off"
        elif value in ("on", "off"):
            said[key] = str(value)
        elif value is not None:
            return {"memory": "off"}, f"{path.name}: {key} must be true or false"
    return said, None


def never_a_project(path: Path, env: Mapping[str, str]) -> str | None:
    """``"the home directory"`` or ``"a temporary directory"`` when ``path`` is one of
    those (itself, not a folder inside it), else None."""
    try:
        here = path.resolve()
    except OSError:
        return None
    home = env.get("HOME")
    if home and here == Path(home).resolve():
        return "the home directory"
    temps = {tempfile.gettempdir(), "/tmp", "/var/tmp", env.get("TMPDIR") or ""}
    for temp in filter(None, temps):
        try:
            if here == Path(temp).resolve():
                return "a temporary directory"
        except OSError:
            continue
    return None

