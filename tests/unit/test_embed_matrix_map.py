"""A vector file is mapped once per process, mapped again when it grew, and a file
replaced by another (a new generation, a repair) is never mistaken for it."""

from __future__ import annotations

import os

import numpy as np

from marm.store import vecfile


def _append(path, ids, value, committed):
    fd = vecfile.open_for_append(path, "m", "p", 4, committed)
    try:
        vecfile.append(fd, vecfile.pack(ids, np.full((len(ids), 4), value, dtype=np.float32)))
    finally:
        os.close(fd)


def test_a_vector_file_is_mapped_once_and_a_replaced_one_is_read_again(tmp_path):
    path = tmp_path / "vectors" / "m" / "p.1.vec"
    _append(path, [1, 2], 1.0, 0)
    first = vecfile.read(path, "m", "p", 4, 2)
    assert first is not None and first[0].tolist() == [1, 2]
    mapped = vecfile._MAPPED[path]
    assert vecfile.read(path, "m", "p", 4, 1)[0].tolist() == [1]
    assert vecfile._MAPPED[path] is mapped  # the same mapping, not mapped again
    _append(path, [7], 2.0, 2)
    ids, matrix = vecfile.read(path, "m", "p", 4, 3)
    assert ids.tolist() == [1, 2, 7] and float(matrix[2, 0]) == 2.0 and vecfile._MAPPED[path] is not mapped
    path.unlink()
    _append(path, [9], 3.0, 0)  # another file at the same path
    assert vecfile.read(path, "m", "p", 4, 1)[0].tolist() == [9]
    assert first[0].tolist() == [1, 2]  # a caller still holding the old mapping keeps the old file
    path.write_bytes(b"MARMVEC2 but truncated")
    assert vecfile.read(path, "m", "p", 4, 1) is None
    assert vecfile.read(path, "other-model", "p", 4, 0)[0].tolist() == []
