"""The vector file format: a small header, then fixed-size rows appended at the end.

One file per (model, project, generation) under ``$MARM_HOME/vectors/<model>/``. A row
is a memory id (int64, little-endian) followed by its chunk's vector (float32 x dim):
one row per chunk, in the order they were written. Rows are only ever appended, or
overwritten in place with zeros and the id ``DEAD`` (a replaced or forgotten vector);
a compaction writes a new generation. Nothing here knows which rows count: that is
the database's word (``marm.store.vectors``); a reader maps exactly the rows it was
told, so a torn or uncommitted tail left by a killed writer is never read.

No ``Store`` here: the schema migration that moves vectors out of the database writes
these files too, and must not import the store it is migrating.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path
from typing import Any

import orjson

from marm.store import perms

MAGIC = b"MARMVEC2"
_HEAD = struct.Struct("<8sQ")           # magic, header length
_ALIGN = 64
#: The id of a row whose vector was replaced or forgotten (its bytes are zeros).
DEAD = -1


def _slug(text: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[-40:]
    return f"{safe}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def model_dir(home: Path, model: str) -> Path:
    return home / "vectors" / _slug(model)


def path_for(home: Path, model: str, project: str | None, generation: int) -> Path:
    name = "_global" if project is None else _slug(project)
    return model_dir(home, model) / f"{name}.{generation}.vec"


def row_size(dim: int) -> int:
    return 8 + 4 * dim


def _header(model: str, project: str | None, dim: int) -> bytes:
    meta = orjson.dumps({"model": model, "project": project, "dim": dim})
    head = _HEAD.pack(MAGIC, len(meta)) + meta
    return head + b"\0" * (-len(head) % _ALIGN)


def body_at(model: str, project: str | None, dim: int) -> int:
    """Where the rows of this file start (the header's length, padded)."""
    return len(_header(model, project, dim))


def open_for_append(path: Path, model: str, project: str | None, dim: int, rows: int) -> int:
    """A descriptor of ``path`` holding exactly its header and ``rows`` committed rows.

    Creates the file (0600, in 0700 directories) when it does not exist yet. Whatever
    lies past the committed rows (what a writer killed before its commit appended) is
    cut off. Raises ``ValueError`` when the file is shorter than ``rows`` rows or has
    another header: its rows are lost and the caller must start it again.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    perms.private(path.parent.parent)  # ``vectors/``: mkdir(parents=True) made it with the umask's mode
    head = _header(model, project, dim)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size < len(head):
            if rows:
                raise ValueError(f"{path.name} is shorter than its header")
            os.pwrite(fd, head, 0)
        elif os.pread(fd, len(head), 0) != head:
            raise ValueError(f"{path.name} has another header")
        end = len(head) + rows * row_size(dim)
        if os.fstat(fd).st_size < end:
            raise ValueError(f"{path.name} holds fewer than its {rows} committed rows")
        os.ftruncate(fd, end)
    except BaseException:
        os.close(fd)
        raise
    return fd


def pack(ids: Any, matrix: Any) -> bytes:
    """Rows for ``ids`` and their vectors (an (n, dim) array), as the file stores them."""
    import numpy as np

    n, dim = matrix.shape
    rows = np.zeros(n, dtype=_dtype(dim))
    rows["id"] = ids
    rows["v"] = matrix
    return rows.tobytes()


def append(fd: int, data: bytes, durable: bool = False) -> None:
    """Write ``data`` at the end of the file, before the caller commits the new count.

    A kill loses nothing the page cache holds, so an everyday append is not synced (an
    fsync costs 4-20 ms here, most of a recall that embeds a new memory): after a power
    loss a file may lack rows its books committed, and ``vectors.repair`` then drops it
    and queues its memories again (ext4's ordered data mode extends a file only after
    its data is written). ``durable`` syncs first, for writes whose source is gone once
    the caller commits (the migration's move of the BLOBs, a compaction)."""
    end = os.fstat(fd).st_size
    written = 0
    while written < len(data):
        written += os.pwrite(fd, data[written:], end + written)
    if durable:
        os.fdatasync(fd)


def kill_rows(path: Path, model: str, project: str | None, dim: int, rows: list[int]) -> None:
    """Overwrite ``rows`` with zeros and the id ``DEAD``: the vector's bytes leave the disk."""
    if not rows:
        return
    dead = struct.pack("<q", DEAD) + b"\0" * (4 * dim)
    start, size = body_at(model, project, dim), row_size(dim)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        end = os.fstat(fd).st_size
        for row in rows:
            if start + (row + 1) * size <= end:
                os.pwrite(fd, dead, start + row * size)
        os.fdatasync(fd)
    finally:
        os.close(fd)


def write_whole(path: Path, model: str, project: str | None, dim: int, data: bytes) -> None:
    """Write a new file (a compaction's next generation) with ``data`` as its rows, durably."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.pwrite(fd, _header(model, project, dim), 0)
        append(fd, data, durable=True)
    finally:
        os.close(fd)


def _dtype(dim: int) -> Any:
    import numpy as np

    return np.dtype([("id", "<i8"), ("v", "<f4", (dim,))])


#: Files this process has mapped: {path: (file identity, rows mapped, the mapped rows)}.
#: A file grows in place and is otherwise only ever replaced by a new file, so the same
#: device and inode with at least the rows asked for is the same data.
_MAPPED: dict[Path, tuple[tuple[int, int], int, Any]] = {}


def read(path: Path, model: str, project: str | None, dim: int, rows: int) -> tuple[Any, Any] | None:
    """(ids, matrix) of the first ``rows`` rows of ``path``, memory-mapped; None when the
    file is missing, has another header or is shorter than that (the drain repairs it).

    Mapped once per process and file, and mapped again only when it has grown past what
    was mapped, so a long-lived process answering many recalls does not re-read it.
    """
    import mmap

    import numpy as np

    if rows == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    head = _header(model, project, dim)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            key = (st.st_dev, st.st_ino)
            have = (st.st_size - len(head)) // row_size(dim)
            if have < rows:  # short of its committed rows (a mapping past the end would fault)
                return None
            cached = _MAPPED.get(path)
            if cached is None or cached[0] != key or cached[1] < rows:
                if f.read(len(head)) != head:
                    return None
                mapped = np.frombuffer(mmap.mmap(f.fileno(), len(head) + have * row_size(dim),
                                                 prot=mmap.PROT_READ),
                                       dtype=_dtype(dim), offset=len(head), count=have)
                cached = (key, have, mapped)
                _MAPPED[path] = cached
    except (OSError, ValueError):
        return None
    part = cached[2][:rows]
    return part["id"], part["v"]


def forget_mapping(path: Path) -> None:
    _MAPPED.pop(path, None)
