"""MARM_HOME is private: the folder and every folder in it 0700, every file 0600.

Files are created that way (``connect``, the vector and log writers), but a home made
by hand, an older marm, ``mkdir(parents=True)``'s intermediate folders or an extracted
model keep the umask's 0755/0644. So every open of the store walks the home (a few
dozen entries) and takes the group and other bits away. What it found looser is kept
for the process, so ``marm doctor`` can say what was tightened, or what could not be
(a file owned by someone else).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Loose:
    path: Path
    mode: int       # as found
    fixed: bool     # tightened now; False when chmod was refused


#: What ``tighten`` found looser in this process, by path.
FOUND: dict[Path, Loose] = {}


def _looser(root: Path) -> Iterator[tuple[Path, int]]:
    """(path, mode) of everything under ``root`` (itself included, symlinks and what they
    point to left out) that group or others may use."""
    for base, dirs, files in os.walk(root, followlinks=False):
        for name in [None, *dirs, *files]:
            path = Path(base) if name is None else Path(base) / name
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077:
                yield path, stat.S_IMODE(st.st_mode)
        dirs[:] = [d for d in dirs if not (Path(base) / d).is_symlink()]


def tighten(root: Path) -> list[Loose]:
    """Take group/other bits off ``root`` and everything under it (symlinks untouched)."""
    found: list[Loose] = []
    if not root.is_dir():
        return found
    for path, mode in _looser(root):
        try:
            os.chmod(path, mode & ~0o077)
            fixed = True
        except OSError:
            fixed = False
        found.append(Loose(path, mode, fixed))
    for loose in found:
        FOUND.setdefault(loose.path, loose)
    return found


def looser_now(root: Path) -> list[Loose]:
    """What under ``root`` is looser than 0700/0600 at this moment (changes nothing)."""
    return [Loose(path, mode, False) for path, mode in _looser(root)]


def private(path: Path) -> Path:
    """Make one file marm just wrote 0600 (a folder 0700); a refused chmod is left to doctor."""
    try:
        os.chmod(path, 0o700 if path.is_dir() else 0o600)
    except OSError:
        pass
    return path


def open_append(path: Path) -> int:
    """A file descriptor appending to ``path``, created 0600 (a log a detached process writes)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    private(path)
    return fd
