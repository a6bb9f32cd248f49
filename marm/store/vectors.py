"""Vectors: the ``memory_vectors`` rows and the fast matrix files built from them.

The database is the truth: one row per (memory, model, chunk) with the vector as a
little-endian float32 BLOB, its dimension, its character span and the content hash it
was computed from. A cold CLI process must not decode 100,000 BLOBs to answer one
query, so the vectors of each (model, project) are also kept as one contiguous file
under ``$MARM_HOME/vectors/<model>/``: a small JSON header, the memory ids (int64) and
the float32 matrix, memory-mapped on read. The files are derived and disposable:

- the drain rebuilds a project's file after it writes vectors there;
- a file records the highest ``memory_vectors`` rowid it contains; a reader takes the
  rows written since then from the database (the "delta"), so a file is never
  trusted past what it saw; a file claiming rows the database does not have (a
  restored database) or a wrong model/dimension is rebuilt, as is a missing one;
- rows of deleted memories may linger in a file until its rebuild; recall only
  returns memories the database still has, so they are never shown.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from marm.store import events, outbox, perms
from marm.store.db import Store

MAGIC = b"MARMVEC1"
_HEAD = struct.Struct("<8sQ")           # magic, header length
_ALIGN = 64
#: A reader rebuilds a file whose delta has grown past this many rows.
REBUILD_DELTA = 2000


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk: int
    start_char: int
    end_char: int


def replace(store: Store, memory_id: int, model: str, content_hash: str,
            chunks: Sequence[Chunk], vectors: Any) -> None:
    """Set the vectors of one memory for ``model`` (all chunks at once). Idempotent.

    Call inside ``store.write()``: deleting the old rows and inserting the new ones in
    one transaction is what makes a re-run (after a killed drain) leave exactly one
    vector per chunk.
    """
    assert store.in_transaction
    store.conn.execute("DELETE FROM memory_vectors WHERE memory_id = ? AND model = ?", (memory_id, model))
    dim = int(vectors.shape[1])
    store.conn.executemany(
        "INSERT INTO memory_vectors (memory_id, model, chunk, dim, start_char, end_char,"
        " content_hash, vector) VALUES (?,?,?,?,?,?,?,?)",
        [
            (memory_id, model, c.chunk, dim, c.start_char, c.end_char, content_hash,
             vectors[i].astype("<f4").tobytes())
            for i, c in enumerate(chunks)
        ],
    )


def record_batch(store: Store, model: str, memory_ids: Sequence[int]) -> None:
    """The audit event for one batch of vector writes (one event, not one per vector)."""
    events.append(store, "vectors.write", "vectors", model,
                  detail={"memories": list(memory_ids)[:200], "count": len(memory_ids)})


def max_rowid(store: Store) -> int:
    return int(store.conn.execute("SELECT coalesce(max(rowid), 0) FROM memory_vectors").fetchone()[0])


def chunks_of(store: Store, memory_id: int, model: str) -> list[tuple[int, int, int, str]]:
    """(chunk, start_char, end_char, content_hash) of one memory's vectors, in chunk order."""
    return [tuple(r) for r in store.conn.execute(
        "SELECT chunk, start_char, end_char, content_hash FROM memory_vectors"
        " WHERE memory_id = ? AND model = ? ORDER BY chunk", (memory_id, model))]


def by_model(store: Store) -> list[tuple[str, int, int, int]]:
    """(model, dim, vectors, memories) for every model with stored vectors."""
    return [tuple(r) for r in store.conn.execute(
        "SELECT model, dim, count(*), count(DISTINCT memory_id) FROM memory_vectors GROUP BY model, dim"
        " ORDER BY model")]


def delete_other_models(store: Store, keep: str) -> int:
    """Drop vectors of every model but ``keep`` (after a model change), with an event."""
    with store.write() as conn:
        n = conn.execute("DELETE FROM memory_vectors WHERE model != ?", (keep,)).rowcount
        if n:
            events.append(store, "vectors.delete", "vectors", keep, reason="model changed",
                          detail={"deleted": n, "kept_model": keep})
    return n


def memories_to_embed(store: Store, model: str, everything: bool) -> list[tuple[int, str]]:
    """(id, content_hash) of memories lacking ``model`` vectors (or all, for a full re-embed)."""
    sql = "SELECT m.id, m.content_hash FROM memories m"
    if not everything:
        sql += (" WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id"
                " AND v.model = ? AND v.content_hash = m.content_hash)")
        return [tuple(r) for r in store.conn.execute(sql + " ORDER BY m.id", (model,))]
    return [tuple(r) for r in store.conn.execute(sql + " ORDER BY m.id")]


def projects_of(store: Store, memory_ids: Iterable[int]) -> set[str | None]:
    ids = list(dict.fromkeys(memory_ids))
    out: set[str | None] = set()
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        out.update(r[0] for r in store.conn.execute(
            f"SELECT DISTINCT project FROM memories WHERE id IN ({','.join('?' * len(part))})", part))
    return out


def all_projects(store: Store) -> list[str | None]:
    return [r[0] for r in store.conn.execute("SELECT DISTINCT project FROM memories")]


def _rows(store: Store, model: str, project: str | None, after: int) -> tuple[Any, Any, int]:
    """(memory ids, float32 matrix, highest rowid) of ``project``'s vectors with rowid > after."""
    import numpy as np

    rows = store.conn.execute(
        "SELECT v.rowid, v.memory_id, v.dim, v.vector FROM memory_vectors v"
        " JOIN memories m ON m.id = v.memory_id"
        " WHERE v.model = ? AND v.rowid > ? AND m.project IS ? ORDER BY v.rowid",
        (model, after, project),
    ).fetchall()
    dims = {r[2] for r in rows}
    if len(dims) > 1:
        raise ValueError(f"vectors of {model} have mixed dimensions {sorted(dims)}")
    dim = dims.pop() if dims else 0
    ids = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4").reshape(len(rows), dim) \
        if rows else np.zeros((0, dim), dtype=np.float32)
    return ids, matrix, max((r[0] for r in rows), default=after)


def _slug(text: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[-40:]
    return f"{safe}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def matrix_path(home: Path, model: str, project: str | None) -> Path:
    name = "_global" if project is None else _slug(project)
    return home / "vectors" / _slug(model) / f"{name}.vec"


def write_matrix(path: Path, header: dict[str, Any], ids: Any, matrix: Any) -> None:
    """Write one matrix file atomically (temp file + rename)."""
    import numpy as np

    meta = orjson.dumps(header)
    body_at = -(-(_HEAD.size + len(meta)) // _ALIGN) * _ALIGN
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    perms.private(path.parent.parent)  # ``vectors/``: mkdir(parents=True) made it with the umask's mode
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600), "wb") as f:
        f.write(_HEAD.pack(MAGIC, len(meta)) + meta)
        f.write(b"\0" * (body_at - _HEAD.size - len(meta)))
        f.write(np.ascontiguousarray(ids, dtype="<i8").tobytes())
        f.write(np.ascontiguousarray(matrix, dtype="<f4").tobytes())
    os.replace(tmp, path)


#: Matrix files this process has mapped: {path: (file identity, what ``read_matrix`` read)}.
#: A file is only ever replaced whole (``write_matrix`` renames a new one over it), so a
#: file with the same device, inode, size and mtime is the same file.
_MAPPED: dict[Path, tuple[tuple[int, ...], tuple[dict[str, Any], Any, Any]]] = {}


def read_matrix(path: Path) -> tuple[dict[str, Any], Any, Any] | None:
    """(header, ids, memory-mapped matrix) of a matrix file, or None if absent or damaged.

    Mapped once per process and file (a process answering many recalls would otherwise
    re-read the header and re-map the file on each), from the opened file itself, so a
    file renamed over it meanwhile cannot be mixed in.
    """
    import numpy as np

    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            cached = _MAPPED.get(path)
            if cached is not None and cached[0] == key:
                return cached[1]
            magic, length = _HEAD.unpack(f.read(_HEAD.size))
            if magic != MAGIC or length > st.st_size:  # a damaged length must not read gigabytes
                return None
            header = orjson.loads(f.read(length))
            n, dim = int(header["count"]), int(header["dim"])
            body_at = -(-(_HEAD.size + length) // _ALIGN) * _ALIGN
            if st.st_size != body_at + n * 8 + n * dim * 4:
                return None
            if n == 0:
                found = (header, np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32))
            else:
                found = (header, np.memmap(f, dtype="<i8", mode="r", offset=body_at, shape=(n,)),
                         np.memmap(f, dtype="<f4", mode="r", offset=body_at + n * 8, shape=(n, dim)))
    except (OSError, ValueError, KeyError, struct.error):
        return None
    _MAPPED[path] = (key, found)
    return found


def rebuild(store: Store, home: Path, model: str, project: str | None) -> tuple[Any, Any]:
    """Rebuild ``project``'s matrix file for ``model`` from the database; return (ids, matrix)."""
    top = max_rowid(store)  # read first: rows added meanwhile are a later reader's delta
    ids, matrix, _ = _rows(store, model, project, 0)
    header = {"model": model, "project": project, "dim": int(matrix.shape[1]),
              "count": int(len(ids)), "max_rowid": top}
    try:
        write_matrix(matrix_path(home, model, project), header, ids, matrix)
    except OSError:
        pass  # a read-only home still answers from memory
    return ids, matrix


def load(store: Store, home: Path, model: str, dim: int, project: str | None) -> list[tuple[Any, Any]]:
    """[(memory ids, matrix), ...] of every ``model`` vector in ``project``: the file plus its delta.

    Verified against the database: a file for another model or dimension, or one that
    claims rows the database never had, is rebuilt; so is one whose delta is large.
    The parts are returned separately so that a 100k-row file is never copied.
    """
    found = read_matrix(matrix_path(home, model, project))
    top = max_rowid(store)
    if (found is None or found[0].get("model") != model or found[0].get("project") != project
            or (found[0]["count"] and found[0]["dim"] != dim) or found[0]["max_rowid"] > top):
        return [rebuild(store, home, model, project)]
    header, ids, matrix = found
    if header["max_rowid"] == top:
        return [(ids, matrix)]
    d_ids, d_matrix, _ = _rows(store, model, project, int(header["max_rowid"]))
    if len(d_ids) > REBUILD_DELTA or (len(d_ids) and d_matrix.shape[1] != dim):
        return [rebuild(store, home, model, project)]
    return [(ids, matrix), (d_ids, d_matrix)]


def purge(store: Store, home: Path, memory_id: int) -> int:
    """Rewrite every matrix file (any model, any project) that holds ``memory_id``'s rows,
    from the database, where they are already gone; returns how many files were
    rewritten. Run by ``forget`` so the vector leaves the disk in the same command."""
    rewritten = 0
    for path in sorted((home / "vectors").glob("*/*.vec")):
        found = read_matrix(path)
        if found is None:
            continue
        header, ids, _ = found
        if memory_id not in set(int(i) for i in ids):
            continue
        _MAPPED.pop(path, None)
        rebuild(store, home, str(header["model"]), header.get("project"))
        rewritten += 1
    return rewritten


def enqueue_reindex(store: Store, model: str, everything: bool) -> int:
    """Queue ``embed`` tasks for memories lacking current ``model`` vectors (or for all)."""
    todo = memories_to_embed(store, model, everything)
    with store.write():
        for memory_id, content_hash in todo:
            outbox.enqueue(store, "embed", memory_id, content_hash)
        events.append(store, "vectors.reindex", "vectors", model,
                      detail={"queued": len(todo), "everything": everything})
    return len(todo)
