"""Finding 7 of issue 15: an existing MARM_HOME of 0755 with a 0755 ``vectors/`` and
0644 files is tightened to 0700/0600 by the next open, and doctor says what it found."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.helpers import run_marm


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _loosen(home: Path) -> list[Path]:
    home.mkdir(mode=0o755, exist_ok=True)
    home.chmod(0o755)
    vectors = home / "vectors" / "some-model"
    vectors.mkdir(parents=True, exist_ok=True)
    (home / "vectors").chmod(0o755)
    vectors.chmod(0o755)
    matrix = vectors / "project.vec"
    matrix.write_bytes(b"\x00" * 16)
    matrix.chmod(0o644)
    log = home / "logs" / "drain.log"
    log.parent.mkdir(exist_ok=True)
    log.write_text("drained\n")
    log.chmod(0o644)
    return [home, home / "vectors", vectors, matrix, log.parent, log]


def test_every_open_tightens_the_home_and_doctor_flags_what_was_looser(marm_home):
    assert run_marm("log", "DECISION: keep the store private").code == 0
    paths = _loosen(marm_home)
    (marm_home / "marm.db").chmod(0o644)
    assert _mode(marm_home) == 0o755 and _mode(paths[3]) == 0o644
    doctor = run_marm("doctor")
    checks = {c["name"]: c for c in doctor.json()["checks"]}
    home_check = checks["home permissions"]
    assert home_check["ok"] is False and "0o755" in home_check["detail"] and "tightened now" in home_check["detail"]
    for path in [*paths, marm_home / "marm.db"]:
        assert _mode(path) == (0o700 if path.is_dir() else 0o600), path
    again = {c["name"]: c for c in run_marm("doctor").json()["checks"]}
    assert again["home permissions"]["ok"] is True, again["home permissions"]
    assert again["permissions"]["ok"] is True
    # the store still works
    recall = run_marm("recall", "keep the store private", "--mode", "lexical")
    assert recall.code == 0 and "keep the store private" in recall.out
