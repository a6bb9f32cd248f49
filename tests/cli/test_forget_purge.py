"""Finding 5 of issue 15: ``marm forget`` purges everything derived in the same
command. After a drain (real model, concept graph, matrix files) the forgotten text,
an entity only it named and each of its vectors' bytes are in no file under MARM_HOME,
while the other memory, its entity and its vector are still there. The CLI runs in this
process (``invoke_marm``): the model loads once per test worker, not once per command."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from marm.store import vecfile
from tests.helpers import invoke_marm

GONE = "Zorblax Quimbyfeld signed the Frobnicator contract in Vladivostok"
KEPT = "DECISION: the Frobnicator rollout waits for the Tuesday review"


def _every_byte(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


def _vectors(db: Path, memory_id: int) -> list[bytes]:
    """The bytes of ``memory_id``'s vectors, read from the vector files the books name."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT f.model, f.project, f.dim, f.generation, f.rows, v.row FROM memory_vectors v"
                            " JOIN vector_files f ON f.id = v.file_id WHERE v.memory_id = ?", (memory_id,)).fetchall()
    finally:
        conn.close()
    out = []
    for model, project, dim, generation, committed, row in rows:
        found = vecfile.read(vecfile.path_for(db.parent, model, project, generation), model, project, dim, committed)
        assert found is not None and found[0][row] == memory_id
        out.append(found[1][row].tobytes())
    return out


@pytest.mark.slow
def test_forget_leaves_no_text_entity_or_vector_anywhere(marm_home):
    gone = invoke_marm("log", GONE).json()["id"]
    kept = invoke_marm("log", KEPT).json()["id"]
    drain = invoke_marm("drain")
    assert drain.code == 0, drain.err
    gone_vectors, kept_vectors = _vectors(marm_home / "marm.db", gone), _vectors(marm_home / "marm.db", kept)
    assert gone_vectors and kept_vectors
    before = _every_byte(marm_home)
    assert b"Quimbyfeld" in before and all(v in before for v in gone_vectors)
    recalled = invoke_marm("concepts", "recall", "Quimbyfeld").out
    assert "Quimbyfeld" in recalled

    forget = invoke_marm("forget", str(gone))
    assert forget.code == 0, forget.err
    after = _every_byte(marm_home)
    for text in (GONE.encode(), b"Quimbyfeld", b"Zorblax", b"Vladivostok"):
        assert text not in after, text
    for vector in gone_vectors:
        assert vector not in after
    # the other memory, its entity and its vector are all still there
    assert KEPT.encode() in after and b"Frobnicator" in after and all(v in after for v in kept_vectors)
    assert invoke_marm("concepts", "recall", "Quimbyfeld").json()["entities"] == []
    assert [e for e in invoke_marm("concepts", "recall", "Frobnicator").json()["entities"]
            if "Frobnicator" in str(e)]
    hybrid = invoke_marm("recall", "who signed the Frobnicator contract", "--mode", "hybrid")
    assert "Tuesday review" in hybrid.out and "Quimbyfeld" not in hybrid.out
