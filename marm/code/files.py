"""Which files a repository has, and whether each can be indexed.

Files come from git: tracked plus untracked-not-ignored, so a build directory listed in
``.gitignore`` is never read. A file is skipped, with a reason, when it is binary, not
UTF-8, or larger than ``MAX_BYTES`` (generated bundles, vendored dumps).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from marm.code.languages import language_of
from marm.errors import BadInput, Unavailable

MAX_BYTES = 2_000_000


def repo_root(path: Path) -> Path:
    """The top-level of the git work tree containing ``path`` (a linked worktree is a
    tree of its own: its files differ from the main one's). No subprocess: queries
    call this on every invocation."""
    here = path.resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    raise BadInput(f"{path} is not inside a git repository")


def git(root: Path, *args: str, timeout: float = 120) -> bytes:
    """Standard output of ``git -C root ARGS``; a git that cannot run, hangs or fails is a
    one-line error (``Unavailable`` / ``BadInput``), never a traceback."""
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"cannot run git {args[0]} in {root}: {exc}") from None
    if out.returncode != 0:
        raise BadInput(f"git {args[0]} failed in {root}: {out.stderr.decode(errors='replace').strip()}")
    return out.stdout


def source_files(root: Path) -> list[tuple[str, str]]:
    """(path relative to ``root``, language) of every source file git knows or would add."""
    listed = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    seen = set()
    files = []
    for raw in listed.split(b"\0"):
        if not raw:
            continue
        path = raw.decode("utf-8", "surrogateescape")
        lang = language_of(path)
        if lang is not None and path not in seen:
            seen.add(path)
            files.append((path, lang))
    return files


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def problem(data: bytes) -> str | None:
    """Why ``data`` cannot be indexed as source text, or None."""
    if b"\0" in data[:8192]:
        return "binary file"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start}"
    return None
