"""The real MARM (marm-mcp-server from the package index) in a venv of its own, for the
import test in ``tests/unit/test_import_marm.py``.

Its install takes about two minutes here (and ~40 s of CPU), longer than any test, so
``tests/run.sh`` keeps it in the git-ignored ``.peer/`` of the checkout, installs it there
in the background before mypy when it is missing or of another version (``python3
tests/peer.py DIR &``, stdlib only), and the test's fixture waits for it (``wait``); run
without run.sh, the fixture installs inline. The install writes ``DIR/version`` and then
``DIR/rc`` last, so a reader never sees half a result; ``python3 tests/peer.py --ready DIR``
exits 0 when DIR holds a finished install of ``VERSION``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

VERSION = "marm-mcp-server==2.60.1"
INSTALL_TIMEOUT = 900


def stdio(directory: Path) -> Path:
    """The peer's STDIO server in an install made by ``install(directory)``."""
    return directory / "venv" / "bin" / "marm-mcp-stdio"


def install(directory: Path) -> str | None:
    """Install the peer into ``directory/venv``; None, or pip's last line saying why not."""
    venv = directory / "venv"
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", VERSION], capture_output=True,
                             text=True, timeout=INSTALL_TIMEOUT)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if pip.returncode != 0:
        return (pip.stderr.strip().splitlines() or [f"pip exited {pip.returncode}"])[-1]
    return None


def wait(directory: Path, timeout: float = INSTALL_TIMEOUT + 60) -> str | None:
    """Wait for a background ``install`` (``main``) into ``directory``; None, or why it failed."""
    rc = directory / "rc"
    end = time.monotonic() + timeout
    while not rc.exists():
        if time.monotonic() > end:
            return f"the background install into {directory} did not finish in {timeout:.0f}s"
        time.sleep(0.5)
    why = (directory / "why").read_text() if (directory / "why").exists() else ""
    return None if rc.read_text().strip() == "0" else why or "the background install failed"


def ready(directory: Path) -> bool:
    """Whether ``directory`` holds a finished, successful install of ``VERSION``."""
    try:
        return ((directory / "rc").read_text().strip() == "0"
                and (directory / "version").read_text().strip() == VERSION and stdio(directory).is_file())
    except OSError:
        return False


def main(directory: Path) -> int:
    """Install, then write ``why`` (on failure), ``version`` and ``rc``, the last atomically, last."""
    directory.mkdir(parents=True, exist_ok=True)
    why = install(directory)
    if why is not None:
        (directory / "why").write_text(why)
    (directory / "version").write_text(VERSION)
    tmp = directory / "rc.tmp"
    tmp.write_text("0" if why is None else "1")
    os.replace(tmp, directory / "rc")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--ready":
        sys.exit(0 if ready(Path(sys.argv[2])) else 1)
    sys.exit(main(Path(sys.argv[1])))
