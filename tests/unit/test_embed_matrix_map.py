"""A matrix file is mapped once per process, and a rebuilt one is never mistaken for it."""

from __future__ import annotations

import numpy as np

from marm.store import vectors


def test_a_matrix_file_is_mapped_once_and_a_replaced_one_is_read_again(tmp_path):
    path = tmp_path / "vectors" / "m" / "p.vec"
    header = {"model": "m", "project": "p", "dim": 4, "count": 2, "max_rowid": 2}
    vectors.write_matrix(path, header, np.array([1, 2]), np.ones((2, 4), dtype=np.float32))
    first = vectors.read_matrix(path)
    again = vectors.read_matrix(path)
    assert again is first and again[1].tolist() == [1, 2]  # the same mapping, not re-read
    bigger = {**header, "count": 3, "max_rowid": 3}
    vectors.write_matrix(path, bigger, np.array([1, 2, 7]), np.full((3, 4), 2.0, dtype=np.float32))
    header_now, ids, matrix = vectors.read_matrix(path)
    assert header_now["count"] == 3 and ids.tolist() == [1, 2, 7] and float(matrix[2, 0]) == 2.0
    assert first[1].tolist() == [1, 2]  # a caller still holding the old mapping keeps the old file
    path.write_bytes(b"MARMVEC1 but truncated")
    assert vectors.read_matrix(path) is None
