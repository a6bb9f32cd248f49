"""Memories: insert, read, delete and search. The only module that writes ``memories``.

Every insert enqueues the memory's ``embed`` and ``concepts`` tasks and appends its
``memory.create`` event in the caller's write transaction, so a memory never exists
without its background work or its audit trail.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from marm.store import events, outbox
from marm.store.db import Store, now
from marm.store.records import Memory

COLUMNS = (
    "m.id, m.content, m.content_hash, m.kind, m.session, m.project, m.platform, m.source,"
    " m.recorded_at, m.valid_from, m.valid_to, m.status, m.status_reason, m.superseded_by,"
    " m.metadata"
)

#: Background tasks every new memory gets, drained by ``marm drain``.
TASK_KINDS = ("embed", "concepts")

VISIBLE_STATUSES = ("active", "doubted")


def to_memory(row: Sequence[Any]) -> Memory:
    return Memory(*row[:14], metadata=orjson.loads(row[14]) if row[14] else {})  # type: ignore[misc]  # the row is the leading fields


@dataclass(frozen=True, slots=True)
class Filter:
    """Which memories a read may see. The default is the caller's project plus global
    memories, every session, active and doubted rows only."""

    project: str | None = None
    all_projects: bool = False
    session: str | None = None
    kind: str | None = None
    statuses: tuple[str, ...] = VISIBLE_STATUSES
    as_of: str | None = None

    def where(self, alias: str = "m") -> tuple[str, list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        if not self.all_projects:
            if self.project is None:
                clauses.append(f"{alias}.project IS NULL")
            else:
                clauses.append(f"({alias}.project IS NULL OR {alias}.project = ?)")
                args.append(self.project)
        if self.session is not None:
            clauses.append(f"{alias}.session = ?")
            args.append(self.session)
        if self.kind is not None:
            clauses.append(f"{alias}.kind = ?")
            args.append(self.kind)
        if self.statuses:
            clauses.append(f"{alias}.status IN ({','.join('?' * len(self.statuses))})")
            args.extend(self.statuses)
        if self.as_of is not None:
            # Validity time, as known now: a memory back-dated with valid_from counts from
            # then; one without counts from when it was recorded.
            clauses.append(
                f"coalesce({alias}.valid_from, {alias}.recorded_at) <= ?"
                f" AND ({alias}.valid_to IS NULL OR {alias}.valid_to > ?)"
            )
            args.extend([self.as_of, self.as_of])
        return (" AND ".join(clauses) or "1"), args


def insert(
    store: Store,
    *,
    content: str,
    content_hash: str,
    kind: str,
    session: str | None,
    project: str | None,
    valid_from: str | None = None,
    valid_to: str | None = None,
    metadata: dict[str, Any] | None = None,
    recorded_at: str | None = None,
    status: str = "active",
    memory_id: int | None = None,
    detail: dict[str, Any] | None = None,
    named_dates: Sequence[tuple[str, str]] = (),
) -> Memory:
    """Insert one memory with its outbox tasks and event (``detail`` adds to the event's
    detail, e.g. that a tombstone was overridden) and the dates it names
    (``marm.store.mentions``). Call inside ``store.write()``."""
    assert store.in_transaction, "insert runs inside the caller's write transaction"
    recorded = recorded_at or now()
    cur = store.conn.execute(
        "INSERT INTO memories (id, content, content_hash, kind, session, project, platform, source,"
        " recorded_at, valid_from, valid_to, status, metadata) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            memory_id, content, content_hash, kind, session, project, store.actor.platform,
            store.actor.source, recorded, valid_from, valid_to, status,
            orjson.dumps(metadata or {}).decode(),
        ),
    )
    new_id = int(cur.lastrowid or 0)
    store.conn.executemany("INSERT INTO memory_dates (memory_id, start, end) VALUES (?, ?, ?)",
                           [(new_id, start, end) for start, end in named_dates])
    for task in TASK_KINDS:
        outbox.enqueue(store, task, new_id, content_hash)
    events.append(
        store, "memory.create", "memory", new_id, after_hash=content_hash,
        session=session, project=project, detail={"kind": kind, **(detail or {})},
    )
    return get(store, new_id)  # type: ignore[return-value]


def get(store: Store, memory_id: int) -> Memory | None:
    row = store.conn.execute(f"SELECT {COLUMNS} FROM memories m WHERE m.id = ?", (memory_id,)).fetchone()
    return None if row is None else to_memory(row)


def get_many(store: Store, ids: Iterable[int]) -> dict[int, Memory]:
    ids = list(dict.fromkeys(ids))
    out: dict[int, Memory] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        rows = store.conn.execute(
            f"SELECT {COLUMNS} FROM memories m WHERE m.id IN ({','.join('?' * len(part))})", part
        ).fetchall()
        out.update((r[0], to_memory(r)) for r in rows)
    return out


def find_by_hash(store: Store, content_hash: str, project: str | None) -> Memory | None:
    """The newest memory with this normalised hash in exactly this scope, any status."""
    row = store.conn.execute(
        f"SELECT {COLUMNS} FROM memories m WHERE m.content_hash = ? AND m.project IS ?"
        " ORDER BY m.id DESC LIMIT 1",
        (content_hash, project),
    ).fetchone()
    return None if row is None else to_memory(row)


def delete(store: Store, memory_id: int, reason: str | None = None, action: str = "memory.delete") -> Memory | None:
    """Hard-delete one memory (its vectors and log mirror cascade); record the event and
    re-arm its ``concepts`` task so its contribution leaves the derived graph."""
    with store.write():
        memory = get(store, memory_id)
        if memory is None:
            return None
        store.conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
        store.conn.execute("DELETE FROM outbox WHERE kind = 'embed' AND target = ?", (str(memory_id),))
        outbox.enqueue(store, "concepts", memory_id, None)
        events.append(
            store, action, "memory", memory_id, reason=reason,
            before_hash=memory.content_hash, session=memory.session, project=memory.project,
        )
    return memory


def set_status(
    store: Store,
    memory_id: int,
    status: str,
    *,
    reason: str | None,
    action: str,
    superseded_by: int | None = None,
    valid_to: str | None = None,
    detail: dict[str, Any] | None = None,
) -> Memory:
    """Change a memory's trust state, with an event. Call inside ``store.write()``."""
    assert store.in_transaction
    before = get(store, memory_id)
    assert before is not None
    store.conn.execute(
        "UPDATE memories SET status = ?, status_reason = ?, superseded_by = ?, valid_to = ?"
        " WHERE id = ?",
        (status, reason, superseded_by, valid_to, memory_id),
    )
    outbox.enqueue(store, "concepts", memory_id, before.content_hash)
    events.append(
        store, action, "memory", memory_id, reason=reason, before_hash=before.content_hash,
        after_hash=before.content_hash, session=before.session, project=before.project,
        detail={"status": [before.status, status], **(detail or {})},
    )
    return get(store, memory_id)  # type: ignore[return-value]


def recent(store: Store, flt: Filter, limit: int = 20, kinds: Sequence[str] | None = None) -> list[Memory]:
    """Newest first, within the filter."""
    where, args = flt.where()
    if kinds:
        where += f" AND m.kind IN ({','.join('?' * len(kinds))})"
        args.extend(kinds)
    rows = store.conn.execute(
        f"SELECT {COLUMNS} FROM memories m WHERE {where} ORDER BY m.recorded_at DESC, m.id DESC LIMIT ?",
        [*args, limit],
    ).fetchall()
    return [to_memory(r) for r in rows]


def search_words(store: Store, fts_query: str, flt: Filter, limit: int) -> list[tuple[Memory, float]]:
    """BM25 over words (porter). ``fts_query`` must already be a safe FTS5 expression.
    Returns (memory, score) with score = -bm25 (higher is better)."""
    where, args = flt.where()
    try:
        rows = store.conn.execute(
            f"SELECT {COLUMNS}, bm25(memories_fts) AS rank FROM memories_fts"
            f" JOIN memories m ON m.id = memories_fts.rowid"
            f" WHERE memories_fts MATCH ? AND {where} ORDER BY rank LIMIT ?",
            [fts_query, *args, limit],
        ).fetchall()
    except sqlite3.OperationalError:
        return []
    return [(to_memory(r), -float(r[15])) for r in rows]


def literal_sql(text: str, flt: Filter, limit: int, columns: str = COLUMNS) -> tuple[str, list[Any], str]:
    """The statement that finds memories containing exactly ``text`` (case-sensitive),
    newest first, as (sql, args, retrieval_mode): ``search_literal``'s, and a piece of
    the recall read model's (``marm.store.recall_reads``).

    Uses the trigram index when the text has at least three characters, else a scan.
    Every candidate is checked with ``instr`` on the stored characters, so what comes
    back contains the query verbatim.
    """
    where, args = flt.where()
    if len(text) >= 3:
        phrase = '"' + text.replace('"', '""') + '"'
        return (f"SELECT {columns} FROM memories_tri JOIN memories m ON m.id = memories_tri.rowid"
                f" WHERE memories_tri MATCH ? AND instr(m.content, ?) > 0 AND {where}"
                f" ORDER BY m.recorded_at DESC, m.id DESC LIMIT ?", [phrase, text, *args, limit], "exact_fts")
    return (f"SELECT {columns} FROM memories m WHERE instr(m.content, ?) > 0 AND {where}"
            f" ORDER BY m.recorded_at DESC, m.id DESC LIMIT ?", [text, *args, limit], "exact_substring")


def search_literal(store: Store, text: str, flt: Filter, limit: int) -> tuple[list[Memory], str]:
    """Memories containing exactly ``text`` (``literal_sql``), newest first, and the
    retrieval mode that found them."""
    sql, args, mode = literal_sql(text, flt, limit)
    return [to_memory(r) for r in store.conn.execute(sql, args).fetchall()], mode


def counts(store: Store) -> dict[str, int]:
    """Memory counts by status, plus the total."""
    out = dict.fromkeys(("active", "doubted", "superseded", "retracted"), 0)
    for status, n in store.conn.execute("SELECT status, count(*) FROM memories GROUP BY status"):
        out[status] = n
    out["total"] = sum(out.values())
    return out


def projects(store: Store) -> list[tuple[str | None, int]]:
    return [
        (p, n)
        for p, n in store.conn.execute(
            "SELECT project, count(*) FROM memories GROUP BY project ORDER BY count(*) DESC"
        )
    ]


def newest_id(store: Store) -> int:
    """The highest memory id so far (0 for none): a cheap mark to count what a run adds."""
    row = store.conn.execute("SELECT max(id) FROM memories").fetchone()
    return int(row[0] or 0)


def added_since(store: Store, mark: int, source: str) -> int:
    """Memories with an id above ``mark`` written by ``source`` (a range scan of the key)."""
    row = store.conn.execute("SELECT count(*) FROM memories WHERE id > ? AND source = ?",
                             (mark, source)).fetchone()
    return int(row[0])


def add_metadata(store: Store, memory_id: int, key: str, value: Any, *, action: str,
                 reason: str | None = None) -> Memory:
    """Append ``value`` to the list at metadata ``key`` (e.g. the provenance of a duplicate
    merged into this memory), with an event. The content is untouched. Call inside
    ``store.write()``."""
    assert store.in_transaction
    before = get(store, memory_id)
    assert before is not None
    meta = dict(before.metadata)
    meta[key] = [*meta.get(key, []), value]
    store.conn.execute("UPDATE memories SET metadata = ? WHERE id = ?", (orjson.dumps(meta).decode(), memory_id))
    events.append(store, action, "memory", memory_id, reason=reason, before_hash=before.content_hash,
                  after_hash=before.content_hash, session=before.session, project=before.project,
                  detail={key: value})
    return get(store, memory_id)  # type: ignore[return-value]
