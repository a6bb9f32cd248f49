"""Trust verdicts on memories: tombstones, restore, forget, and a memory's history.

Status changes themselves go through ``memories.set_status`` (it records the event and
re-arms the ``concepts`` task); this module holds what the verdicts need around it.

- A tombstone is keyed on a value: the normalised content hash and the scope (the
  project, or ``''`` for global memories). It outlives the row, so a retracted text
  written again is refused even after the memory was forgotten or the store rebuilt.
- Forgetting erases a memory's text for good: the row (its vectors cascade, its FTS
  entries go through the triggers), its log row, and with ``secure_delete`` and an FTS
  merge no copy of the text is left in the database file. Events keep hashes only.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from marm.store import events, logs, outbox
from marm.store.db import Store, now
from marm.store.records import Event, Memory


def scope_key(project: str | None) -> str:
    """The tombstone scope of a project: the project itself, or ``''`` for global."""
    return project or ""


@dataclass(frozen=True, slots=True)
class Tombstone:
    content_hash: str
    scope: str
    memory_id: int | None
    reason: str | None
    at: str


_TOMB_COLUMNS = "content_hash, scope, memory_id, reason, at"


def tombstone(store: Store, content_hash: str, project: str | None) -> Tombstone | None:
    """The tombstone that refuses ``content_hash`` in ``project``'s scope, if any."""
    row = store.conn.execute(
        f"SELECT {_TOMB_COLUMNS} FROM tombstones WHERE content_hash = ? AND scope = ?",
        (content_hash, scope_key(project)),
    ).fetchone()
    return None if row is None else Tombstone(*row)


def add_tombstone(store: Store, memory: Memory, reason: str | None) -> None:
    """Refuse ``memory``'s text in its scope from now on. Call inside ``store.write()``."""
    assert store.in_transaction
    store.conn.execute(
        "INSERT INTO tombstones (content_hash, scope, memory_id, reason, at) VALUES (?,?,?,?,?)"
        " ON CONFLICT (content_hash, scope) DO UPDATE SET memory_id = excluded.memory_id,"
        " reason = excluded.reason, at = excluded.at",
        (memory.content_hash, scope_key(memory.project), memory.id, reason, now()),
    )
    events.append(
        store, "tombstone.add", "tombstone", memory.content_hash, reason=reason,
        after_hash=memory.content_hash, project=memory.project, detail={"memory_id": memory.id},
    )


def lift_tombstone(store: Store, memory: Memory) -> bool:
    """Stop refusing ``memory``'s text, unless another retracted memory of the same text
    and scope still stands (the tombstone then points at that one). True if lifted."""
    assert store.in_transaction
    other = store.conn.execute(
        "SELECT id FROM memories WHERE content_hash = ? AND project IS ? AND status = 'retracted'"
        " AND id != ? ORDER BY id DESC LIMIT 1",
        (memory.content_hash, memory.project, memory.id),
    ).fetchone()
    if other is not None:
        store.conn.execute(
            "UPDATE tombstones SET memory_id = ? WHERE content_hash = ? AND scope = ?",
            (other[0], memory.content_hash, scope_key(memory.project)),
        )
        return False
    gone = store.conn.execute(
        "DELETE FROM tombstones WHERE content_hash = ? AND scope = ?",
        (memory.content_hash, scope_key(memory.project)),
    ).rowcount
    if gone:
        events.append(
            store, "tombstone.remove", "tombstone", memory.content_hash,
            before_hash=memory.content_hash, project=memory.project, detail={"memory_id": memory.id},
        )
    return bool(gone)


def valid_to_before_supersede(store: Store, memory_id: int) -> str | None:
    """The valid_to a memory had before its latest supersede (restore puts it back)."""
    row = store.conn.execute(
        "SELECT detail FROM events WHERE entity = 'memory' AND entity_id = ?"
        " AND action = 'memory.supersede' ORDER BY at DESC, id DESC LIMIT 1",
        (str(memory_id),),
    ).fetchone()
    if row is None:
        return None
    valid_to = orjson.loads(row[0]).get("valid_to")
    return valid_to[0] if isinstance(valid_to, list) and valid_to else None


def superseded_by(store: Store, memory_id: int) -> list[int]:
    """Ids of the memories ``memory_id`` supersedes."""
    return [r[0] for r in store.conn.execute(
        "SELECT id FROM memories WHERE superseded_by = ? ORDER BY id", (memory_id,)
    )]


def forget(store: Store, memory: Memory, reason: str | None) -> None:
    """Erase ``memory`` for good, leaving content-free events.

    Deletes the row (vectors cascade, FTS entries leave through the triggers) and its
    log row; memories it superseded keep their status but lose the link, each with an
    event. ``secure_delete`` zeroes the freed pages and an FTS ``optimize`` rewrites the
    indexes, so neither the text nor its index terms stay behind in the file.
    """
    store.conn.execute("PRAGMA secure_delete = ON")
    with store.write():
        log_row = logs.for_memory(store, memory.id)
        for older in superseded_by(store, memory.id):
            events.append(
                store, "memory.unlink", "memory", older, reason="the superseding memory was forgotten",
                detail={"superseded_by": [memory.id, None]},
            )
        store.conn.execute("DELETE FROM memories WHERE id = ?", (memory.id,))
        store.conn.execute("DELETE FROM outbox WHERE kind = 'embed' AND target = ?", (str(memory.id),))
        outbox.enqueue(store, "concepts", memory.id, None)
        for index in ("memories_fts", "memories_tri"):
            store.conn.execute(f"INSERT INTO {index}({index}) VALUES ('optimize')")
        if log_row is not None:
            events.append(
                store, "log.forget", "log", log_row.id, before_hash=memory.content_hash,
                session=memory.session, project=memory.project, detail={"memory_id": memory.id},
            )
        events.append(
            store, "memory.forget", "memory", memory.id, reason=reason,
            before_hash=memory.content_hash, session=memory.session, project=memory.project,
            detail={"status": [memory.status, None], "kind": memory.kind},
        )


def purge_derived(store: Store, memory_ids: list[int]) -> None:
    """What was derived from forgotten memories leaves with them, not at the next drain:
    their concept mentions (and entities only they named) and their rows in every vector
    file (zeroed in place). Run after the forget committed; the queued ``concepts`` tasks
    then find nothing left to do. Free pages pass back to the file system once many
    forgets have freed enough of them (``space.reclaim``)."""
    from marm import config
    from marm.store import space, vectors
    from marm.store.concept_graph import Graph

    if not memory_ids:
        return
    home = store.path.parent
    for memory_id in memory_ids:
        vectors.purge(store, home, memory_id)
    path = config.derived_path(home)
    if path.exists():
        graph = Graph.open(path)
        try:
            for memory_id in memory_ids:
                graph.erase_memory(memory_id)
        finally:
            graph.close()
    space.reclaim(store)


def flush_wal(store: Store) -> bool:
    """Checkpoint the WAL into the database file and truncate it, so erased pages do not
    linger in the log. False when a reader kept it from completing (it does later)."""
    busy, _, _ = store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return busy == 0


def history(store: Store, memory_id: int) -> list[Event]:
    """Every event of a memory, of its log row and tombstone, and the supersedes that
    name it as the newer memory; oldest first."""
    return events.matching(
        store,
        "(entity = 'memory' AND entity_id = ?)"
        " OR (entity IN ('log', 'tombstone') AND json_extract(detail, '$.memory_id') = ?)"
        " OR (action = 'memory.supersede' AND json_extract(detail, '$.superseded_by') = ?)",
        [str(memory_id), memory_id, memory_id],
    )


def forgotten(store: Store, memory_id: int) -> bool:
    return store.conn.execute(
        "SELECT 1 FROM events WHERE entity = 'memory' AND entity_id = ? AND action = 'memory.forget'",
        (str(memory_id),),
    ).fetchone() is not None

