"""The hygiene review queue, code baselines and sweep marks (migration m008).

A proposal names two memories by id (what a person acts on) and is keyed by their
content hashes (what a verdict holds for): ``propose`` inserts or ignores on that key,
so a pair that was dismissed, accepted or handled automatically is never proposed
again, whatever ids the memories carry by then. Every state change is an event.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from marm.store import events
from marm.store.db import Store, now

KINDS = ("duplicate", "contradiction", "stale")


@dataclass(frozen=True, slots=True)
class Proposal:
    id: int
    kind: str                      # duplicate | contradiction | stale
    project: str | None
    old_id: int                    # merged into new_id's twin / superseded / flagged stale
    new_id: int | None             # the duplicate kept, or the memory that reverses old_id
    state: str                     # open | accepted | dismissed | auto
    created_at: str
    decided_at: str | None
    detail: dict[str, Any] = field(default_factory=dict)


_COLUMNS = "id, kind, project, old_id, new_id, state, created_at, decided_at, detail"


def _proposal(row: Sequence[Any]) -> Proposal:
    return Proposal(*row[:8], detail=orjson.loads(row[8]) if row[8] else {})  # type: ignore[misc]


def propose(store: Store, kind: str, project: str | None, old_id: int, new_id: int | None,
            hash_a: str, hash_b: str, detail: dict[str, Any], state: str = "open") -> Proposal | None:
    """Queue a proposal unless this value pair already has one (any state); returns the
    new row, or None when the pair was known. Call inside ``store.write()``."""
    assert store.in_transaction
    cur = store.conn.execute(
        "INSERT OR IGNORE INTO hygiene_queue (kind, project, old_id, new_id, hash_a, hash_b, detail,"
        " state, created_at, decided_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (kind, project, old_id, new_id, hash_a, hash_b, orjson.dumps(detail).decode(), state, now(),
         now() if state != "open" else None),
    )
    if not cur.rowcount:
        return None
    item = get(store, int(cur.lastrowid or 0))
    assert item is not None
    events.append(store, f"hygiene.{kind}", "hygiene", item.id, project=project,
                  detail={"old": old_id, "new": new_id, "state": state, **detail})
    return item


def get(store: Store, item_id: int) -> Proposal | None:
    row = store.conn.execute(f"SELECT {_COLUMNS} FROM hygiene_queue WHERE id = ?", (item_id,)).fetchone()
    return None if row is None else _proposal(row)


def listing(store: Store, project: str | None, all_projects: bool, states: Sequence[str] = ("open",),
            kind: str | None = None, limit: int = 200) -> list[Proposal]:
    """Proposals in ``states`` of this project (and global memories), oldest first."""
    where = [f"state IN ({','.join('?' * len(states))})"]
    args: list[Any] = list(states)
    if not all_projects:
        where.append("(project IS NULL OR project IS ?)")
        args.append(project)
    if kind is not None:
        where.append("kind = ?")
        args.append(kind)
    rows = store.conn.execute(
        f"SELECT {_COLUMNS} FROM hygiene_queue WHERE {' AND '.join(where)} ORDER BY id LIMIT ?",
        [*args, limit]).fetchall()
    return [_proposal(r) for r in rows]


def open_counts(store: Store, project: str | None, all_projects: bool = False) -> dict[str, int]:
    """{kind: open proposals} of this project (and global memories), as ``listing`` scopes them."""
    where, args = ("", []) if all_projects else (" AND (project IS NULL OR project IS ?)", [project])
    return {k: n for k, n in store.conn.execute(
        f"SELECT kind, count(*) FROM hygiene_queue WHERE state = 'open'{where} GROUP BY kind ORDER BY kind", args)}


def decide(store: Store, item_id: int, state: str, reason: str | None = None) -> Proposal:
    """Record a verdict (accepted, dismissed) on a proposal. Call inside ``store.write()``."""
    assert store.in_transaction
    store.conn.execute("UPDATE hygiene_queue SET state = ?, decided_at = ? WHERE id = ?", (state, now(), item_id))
    item = get(store, item_id)
    assert item is not None
    events.append(store, f"hygiene.{state}", "hygiene", item_id, reason=reason, project=item.project,
                  detail={"kind": item.kind, "old": item.old_id, "new": item.new_id})
    return item


def open_flags(store: Store, memory_ids: Iterable[int]) -> dict[int, list[Proposal]]:
    """Open proposals naming each memory as the one in question (``old_id``)."""
    ids = list(dict.fromkeys(int(i) for i in memory_ids))
    out: dict[int, list[Proposal]] = {}
    for start in range(0, len(ids), 500):
        part = ids[start: start + 500]
        for row in store.conn.execute(
                f"SELECT {_COLUMNS} FROM hygiene_queue WHERE state = 'open'"
                f" AND old_id IN ({','.join('?' * len(part))})", part):
            item = _proposal(row)
            out.setdefault(item.old_id, []).append(item)
    return out


# -- sweep marks -------------------------------------------------------------------

def mark(store: Store, name: str) -> str | None:
    row = store.conn.execute("SELECT value FROM hygiene_marks WHERE name = ?", (name,)).fetchone()
    return None if row is None else str(row[0])


def set_mark(store: Store, name: str, value: str) -> None:
    with store.write():
        store.conn.execute(
            "INSERT INTO hygiene_marks (name, value) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value", (name, value))


def memories_after(store: Store, mark_id: int, limit: int) -> list[int]:
    """Ids of memories above ``mark_id`` (any status), ascending: what the sweep has not seen."""
    return [r[0] for r in store.conn.execute(
        "SELECT id FROM memories WHERE id > ? ORDER BY id LIMIT ?", (mark_id, limit))]


# -- code baselines ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CodeRef:
    memory_id: int
    repo: str
    path: str
    file_hash: str | None
    symbols: tuple[str, ...]
    lines: int
    at: str


def add_code_refs(store: Store, refs: Iterable[CodeRef]) -> None:
    """Keep the code state a memory named when it was first checked (the baseline a
    later index run is compared with). Call inside ``store.write()``."""
    assert store.in_transaction
    store.conn.executemany(
        "INSERT OR IGNORE INTO hygiene_code_refs (memory_id, repo, path, file_hash, symbols, lines, at)"
        " VALUES (?,?,?,?,?,?,?)",
        [(r.memory_id, r.repo, r.path, r.file_hash, orjson.dumps(list(r.symbols)).decode(), r.lines, r.at)
         for r in refs])


def code_refs(store: Store, repo: str) -> list[CodeRef]:
    """Every baseline kept for files of ``repo`` whose memory is still visible."""
    rows = store.conn.execute(
        "SELECT r.memory_id, r.repo, r.path, r.file_hash, r.symbols, r.lines, r.at FROM hygiene_code_refs r"
        " JOIN memories m ON m.id = r.memory_id WHERE r.repo = ? AND m.status IN ('active', 'doubted')"
        " ORDER BY r.memory_id", (repo,)).fetchall()
    return [CodeRef(r[0], r[1], r[2], r[3], tuple(orjson.loads(r[4])), r[5], r[6]) for r in rows]


def episodes_before(store: Store, project: str | None, cutoff: str) -> list[int]:
    """Ids of active episodes of exactly ``project`` valid before ``cutoff``, oldest first."""
    return [r[0] for r in store.conn.execute(
        "SELECT id FROM memories WHERE kind = 'episode' AND status = 'active' AND project IS ?"
        " AND coalesce(valid_from, recorded_at) < ? ORDER BY recorded_at, id", (project, cutoff))]
