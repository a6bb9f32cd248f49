"""Vectors: one copy of each on disk, in append-only files the database keeps the books of.

The values live in one file per (model, project) (``marm.store.vecfile``: rows of a
memory id and a float32 vector, memory-mapped on read). The database says which of
those rows count: ``vector_files`` holds each file's dimension, generation and number of
committed rows; ``memory_vectors`` one row per (memory, model, chunk) with its
character span, the content hash it was computed from and its row in the file.

- **Writing** (``write``, inside ``store.write()``, so SQLite's write lock orders the
  writers of every process): cut the file back to its committed rows (a killed
  writer's tail), append, then record the rows and the new count in the same
  transaction. A new memory costs its own rows, never a rewrite of the file.
- **Reading** (``load``): one query for the files in scope and their committed counts,
  then each file is mapped once per process; a reader never writes.
- **Replacing or forgetting**: the old rows are overwritten with zeros after the
  commit (``retire``; ``purge`` for a forgotten memory, whose bookkeeping is already
  gone). A file with many such rows is rewritten as its next generation (``compact``).
- **Derived**: the text is the truth. A file that is missing, foreign or short of its
  committed rows (a power loss before the page cache reached the disk) is dropped with
  its bookkeeping and its memories are queued for embedding again (``repair``, run by
  the drain). A backup holds ``marm.db`` only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marm.store import events, outbox, vecfile
from marm.store.db import Store

#: A file is rewritten when more than this share of its rows are dead (and at least ``COMPACT_MIN``).
COMPACT_SHARE = 0.25
COMPACT_MIN = 256


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk: int
    start_char: int
    end_char: int


@dataclass(frozen=True, slots=True)
class Embedded:
    """One memory's vectors for a model: its chunks and an (n, dim) array, one row each."""

    memory_id: int
    content_hash: str
    chunks: Sequence[Chunk]
    vectors: Any


@dataclass(frozen=True, slots=True)
class VectorFile:
    """One file's books: where it is and how many of its rows are committed."""

    id: int
    model: str
    project: str | None
    dim: int
    generation: int
    rows: int

    def path(self, home: Path) -> Path:
        return vecfile.path_for(home, self.model, self.project, self.generation)


@dataclass(frozen=True, slots=True)
class Retired:
    """Rows that no longer count, to be zeroed once the transaction that dropped them committed."""

    rows: dict[int, list[int]]      # file id -> rows
    files: dict[int, VectorFile]


#: ``VectorFile``'s fields, in order, as ``vector_files`` columns.
FILE_COLUMNS = "id, model, project, dim, generation, rows"


def _files(store: Store, where: str = "1", args: Sequence[Any] = ()) -> list[VectorFile]:
    return [VectorFile(*r) for r in store.conn.execute(
        f"SELECT {FILE_COLUMNS} FROM vector_files WHERE {where} ORDER BY id", args)]


def _file_for(store: Store, model: str, project: str | None, dim: int) -> VectorFile:
    found = _files(store, "model = ? AND project IS ?", (model, project))
    if found:
        if found[0].dim != dim:
            raise ValueError(f"vectors of {model} have mixed dimensions {found[0].dim} and {dim}")
        return found[0]
    cur = store.conn.execute("INSERT INTO vector_files (model, project, dim) VALUES (?, ?, ?)",
                             (model, project, dim))
    return VectorFile(int(cur.lastrowid or 0), model, project, dim, 1, 0)


def write(store: Store, home: Path, model: str, batch: Sequence[Embedded]) -> Retired:
    """Set the vectors of each memory in ``batch`` for ``model`` (all its chunks). Idempotent.

    Call inside ``store.write()`` and pass the result to ``retire`` after the commit:
    the rows a memory had before are dropped from the books here and zeroed there, so
    a process killed in between leaves a duplicate (cleared by ``compact``), never a
    memory without its vector.
    """
    assert store.in_transaction
    ids = [e.memory_id for e in batch]
    retired = _drop(store, model, ids)
    project_of = _projects(store, ids)
    groups: dict[str | None, list[Embedded]] = {}
    for e in batch:
        if e.memory_id in project_of and len(e.chunks):
            groups.setdefault(project_of[e.memory_id], []).append(e)
    import numpy as np

    for project, items in groups.items():
        dim = int(items[0].vectors.shape[1])
        f = _file_for(store, model, project, dim)
        matrix = np.concatenate([np.asarray(e.vectors, dtype=np.float32) for e in items])
        owners = [e.memory_id for e in items for _ in e.chunks]
        try:
            fd = vecfile.open_for_append(f.path(home), model, project, dim, f.rows)
        except ValueError:  # the file lost committed rows: start it again, re-embed its memories
            _remove_files(home, [f])
            f = _reset(store, f)[0]
            fd = vecfile.open_for_append(f.path(home), model, project, dim, f.rows)
        try:
            vecfile.append(fd, vecfile.pack(owners, matrix))
        finally:
            os.close(fd)
        at = f.rows
        rows = []
        for e in items:
            for c in e.chunks:
                rows.append((e.memory_id, model, c.chunk, dim, c.start_char, c.end_char, e.content_hash, f.id, at))
                at += 1
        store.conn.executemany(
            "INSERT INTO memory_vectors (memory_id, model, chunk, dim, start_char, end_char,"
            " content_hash, file_id, row) VALUES (?,?,?,?,?,?,?,?,?)", rows)
        store.conn.execute("UPDATE vector_files SET rows = ? WHERE id = ?", (at, f.id))
    return retired


def _projects(store: Store, memory_ids: Sequence[int]) -> dict[int, str | None]:
    out: dict[int, str | None] = {}
    for start in range(0, len(memory_ids), 500):
        part = list(memory_ids[start : start + 500])
        out.update((r[0], r[1]) for r in store.conn.execute(
            f"SELECT id, project FROM memories WHERE id IN ({','.join('?' * len(part))})", part))
    return out


def _drop(store: Store, model: str, memory_ids: Sequence[int]) -> Retired:
    """Take the ``model`` rows of ``memory_ids`` off the books; return them for ``retire``."""
    rows: dict[int, list[int]] = {}
    for start in range(0, len(memory_ids), 500):
        part = list(memory_ids[start : start + 500])
        marks = ",".join("?" * len(part))
        for file_id, row in store.conn.execute(
                f"SELECT file_id, row FROM memory_vectors WHERE model = ? AND memory_id IN ({marks})",
                [model, *part]):
            rows.setdefault(file_id, []).append(row)
        store.conn.execute(f"DELETE FROM memory_vectors WHERE model = ? AND memory_id IN ({marks})",
                           [model, *part])
    files = {f.id: f for f in _files(store, f"id IN ({','.join('?' * len(rows))})", list(rows))} if rows else {}
    return Retired(rows, files)


def retire(home: Path, retired: Retired) -> None:
    """Zero the rows ``write`` took off the books (after its transaction committed)."""
    for file_id, rows in retired.rows.items():
        f = retired.files.get(file_id)
        if f is not None:
            vecfile.kill_rows(f.path(home), f.model, f.project, f.dim, rows)


def record_batch(store: Store, model: str, memory_ids: Sequence[int]) -> None:
    """The audit event for one batch of vector writes (one event, not one per vector)."""
    events.append(store, "vectors.write", "vectors", model,
                  detail={"memories": list(memory_ids)[:200], "count": len(memory_ids)})


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


def _remove_files(home: Path, files: Iterable[VectorFile]) -> None:
    for f in files:
        vecfile.forget_mapping(f.path(home))
        f.path(home).unlink(missing_ok=True)


def delete_other_models(store: Store, home: Path, keep: str) -> int:
    """Drop vectors of every model but ``keep`` (after a model change), with an event."""
    with store.write() as conn:
        gone = _files(store, "model != ?", (keep,))
        n = conn.execute("DELETE FROM memory_vectors WHERE model != ?", (keep,)).rowcount
        conn.execute("DELETE FROM vector_files WHERE model != ?", (keep,))
        if n:
            events.append(store, "vectors.delete", "vectors", keep, reason="model changed",
                          detail={"deleted": n, "kept_model": keep})
    _remove_files(home, gone)
    return n


def drop_all(store: Store, home: Path) -> None:
    """Drop every vector and its books (a restored database's books name other files)."""
    with store.write() as conn:
        gone = _files(store)
        conn.execute("DELETE FROM memory_vectors")
        conn.execute("DELETE FROM vector_files")
    _remove_files(home, gone)
    for stray in (home / "vectors").glob("*/*.vec"):
        stray.unlink(missing_ok=True)


def memories_to_embed(store: Store, model: str, everything: bool) -> list[tuple[int, str]]:
    """(id, content_hash) of memories lacking ``model`` vectors (or all, for a full re-embed)."""
    sql = "SELECT m.id, m.content_hash FROM memories m"
    if not everything:
        sql += (" WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id"
                " AND v.model = ? AND v.content_hash = m.content_hash)")
        return [tuple(r) for r in store.conn.execute(sql + " ORDER BY m.id", (model,))]
    return [tuple(r) for r in store.conn.execute(sql + " ORDER BY m.id")]


def in_scope(model: str, dim: int, projects: Sequence[str | None] | None) -> tuple[str, list[Any]]:
    """The ``vector_files`` condition for the committed ``model`` files of ``projects``
    (None: every project): ``load``'s, and the recall read model's, which reads the
    books in its first statement (``marm.store.recall_reads``)."""
    if projects is None:
        return "model = ? AND dim = ? AND rows > 0", [model, dim]
    wanted = [p for p in projects if p is not None]
    clause = f"project IN ({','.join('?' * len(wanted))})" if wanted else "0"
    if None in projects:
        clause = f"({clause} OR project IS NULL)"
    return f"model = ? AND dim = ? AND rows > 0 AND {clause}", [model, dim, *wanted]


def load(store: Store, home: Path, model: str, dim: int,
         projects: Sequence[str | None] | None) -> list[tuple[Any, Any]]:
    """[(memory ids, matrix), ...]: the committed rows of every ``model`` file of
    ``projects`` (None: every project), memory-mapped (``read``). One query; nothing is written."""
    return read(home, _files(store, *in_scope(model, dim, projects)))


def read(home: Path, files: Iterable[VectorFile]) -> list[tuple[Any, Any]]:
    """[(memory ids, matrix), ...] of ``files``' committed rows, memory-mapped.

    Rows of replaced or forgotten vectors have the id ``vecfile.DEAD``; rows of deleted
    memories may linger until a compaction, and recall only returns memories the
    database still has. A file that cannot be read is left out (the drain repairs it).
    """
    parts = []
    for f in files:
        found = vecfile.read(f.path(home), f.model, f.project, f.dim, f.rows)
        if found is not None:
            parts.append(found)
    return parts


def of_memory(store: Store, home: Path, model: str, memory_id: int) -> Any | None:
    """The chunk vectors of one memory for ``model`` (chunks x dim, in chunk order), read
    from its file's committed rows; None when it has none (or its file cannot be read)."""
    import numpy as np

    books = store.conn.execute(
        "SELECT file_id, row FROM memory_vectors WHERE memory_id = ? AND model = ? ORDER BY chunk",
        (memory_id, model)).fetchall()
    if not books:
        return None
    files = {f.id: f for f in _files(store, f"id IN ({','.join('?' * len(books))})", [b[0] for b in books])}
    rows = []
    for file_id, row in books:
        f = files.get(file_id)
        found = vecfile.read(f.path(home), f.model, f.project, f.dim, f.rows) if f is not None else None
        if found is None or row >= len(found[0]) or int(found[0][row]) != memory_id:
            return None
        rows.append(found[1][row])
    return np.stack(rows)


def purge(store: Store, home: Path, memory_id: int) -> int:
    """Zero every row of ``memory_id`` in every file (any model, any project); returns how
    many files held one. Run by ``forget`` after its commit (which already dropped the
    books), so the vector leaves the disk in the same command."""
    touched = 0
    for f in _files(store, "rows > 0"):
        found = vecfile.read(f.path(home), f.model, f.project, f.dim, f.rows)
        if found is None:
            continue
        rows = [int(r) for r in (found[0] == memory_id).nonzero()[0]]
        if rows:
            vecfile.kill_rows(f.path(home), f.model, f.project, f.dim, rows)
            touched += 1
    return touched


def _reset(store: Store, f: VectorFile) -> tuple[VectorFile, int]:
    """Drop ``f``'s books and queue its memories for embedding again (in the caller's
    transaction); the file starts again empty, as its next generation. Returns it and
    how many memories were queued."""
    todo = store.conn.execute(
        "SELECT DISTINCT m.id, m.content_hash FROM memory_vectors v JOIN memories m ON m.id = v.memory_id"
        " WHERE v.file_id = ?", (f.id,)).fetchall()
    store.conn.execute("DELETE FROM memory_vectors WHERE file_id = ?", (f.id,))
    store.conn.execute("UPDATE vector_files SET rows = 0, generation = generation + 1 WHERE id = ?", (f.id,))
    for memory_id, content_hash in todo:
        outbox.enqueue(store, "embed", memory_id, content_hash)
    events.append(store, "vectors.repair", "vectors", f.model,
                  detail={"project": f.project, "queued": len(todo)})
    return VectorFile(f.id, f.model, f.project, f.dim, f.generation + 1, 0), len(todo)


def repair(store: Store, home: Path) -> int:
    """Drop each file that lacks its committed rows (missing, foreign, cut short) with its
    books, and queue its memories for embedding again; returns how many were queued.

    For the drain, under its lease: a ``stat`` and a header read per file."""
    queued = 0
    for f in _files(store, "rows > 0"):
        if vecfile.read(f.path(home), f.model, f.project, f.dim, f.rows) is not None:
            continue
        with store.write():
            queued += _reset(store, f)[1]
        _remove_files(home, [f])
    return queued


def compact(store: Store, home: Path) -> int:
    """Rewrite each file whose dead rows (replaced, forgotten, deleted) pass
    ``COMPACT_SHARE`` as its next generation, live rows only; returns files rewritten.

    The new file is written and synced first, then the books move to it in one
    transaction, then the old file is removed: a kill at any point leaves the books
    naming a whole file. Writers wait meanwhile (the write lock is held).
    """
    import numpy as np

    done = 0
    for f in _files(store, "rows > 0"):
        live = int(store.conn.execute("SELECT count(*) FROM memory_vectors WHERE file_id = ?",
                                      (f.id,)).fetchone()[0])
        if f.rows - live < max(COMPACT_MIN, COMPACT_SHARE * f.rows):
            continue
        with store.write() as conn:
            current = _files(store, "id = ?", (f.id,))[0]
            found = vecfile.read(current.path(home), f.model, f.project, f.dim, current.rows)
            if found is None:
                continue  # ``repair``'s case
            keep = conn.execute("SELECT memory_id, chunk, row FROM memory_vectors WHERE file_id = ?"
                                " ORDER BY row", (f.id,)).fetchall()
            old_rows = np.fromiter((r[2] for r in keep), dtype=np.int64, count=len(keep))
            ids, matrix = found
            nxt = VectorFile(f.id, f.model, f.project, f.dim, current.generation + 1, len(keep))
            vecfile.write_whole(nxt.path(home), f.model, f.project, f.dim,
                                vecfile.pack(ids[old_rows], matrix[old_rows]))
            conn.executemany("UPDATE memory_vectors SET row = ? WHERE memory_id = ? AND model = ? AND chunk = ?",
                             [(i, r[0], f.model, r[1]) for i, r in enumerate(keep)])
            conn.execute("UPDATE vector_files SET rows = ?, generation = ? WHERE id = ?",
                         (nxt.rows, nxt.generation, f.id))
        _remove_files(home, [current])
        done += 1
    return done


def disk_bytes(home: Path) -> int:
    """Bytes of every vector file under ``home`` (for status and the benchmarks)."""
    return sum(p.stat().st_size for p in (home / "vectors").glob("*/*.vec"))


def enqueue_reindex(store: Store, model: str, everything: bool) -> int:
    """Queue ``embed`` tasks for memories lacking current ``model`` vectors (or for all)."""
    todo = memories_to_embed(store, model, everything)
    with store.write():
        for memory_id, content_hash in todo:
            outbox.enqueue(store, "embed", memory_id, content_hash)
        events.append(store, "vectors.reindex", "vectors", model,
                      detail={"queued": len(todo), "everything": everything})
    return len(todo)
