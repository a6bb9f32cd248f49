"""What replication keeps in the durable store: the origin id, remotes, shared projects,
the origin-qualified id map and which pulled events were applied.

Only ``marm.sync`` calls this module. Nothing here holds a memory's text: a forget
leaves no copy behind in these tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from marm.store import events
from marm.store.db import Store, now

#: Actions of the audit trail that travel, and the verdicts among them.
VERDICTS = ("memory.doubt", "memory.retract", "memory.supersede", "memory.restore")
CREATES = ("memory.create", "memory.import")
ERASURES = ("memory.forget", "memory.delete")
CONCEPT = ("concept.merge", "concept.suppress", "concept.dismiss")
TRAVELLING = CREATES + VERDICTS + ERASURES + CONCEPT


@dataclass(frozen=True, slots=True)
class Remote:
    name: str
    url: str
    added_at: str
    pushed_upto: int
    pull_cursor: str
    last_push_at: str | None
    last_pull_at: str | None


@dataclass(frozen=True, slots=True)
class LocalEvent:
    """A local event that may travel, with what push needs of its memory."""

    id: int
    at: str
    action: str
    entity_id: str
    project: str | None
    reason: str | None
    before_hash: str | None
    after_hash: str | None
    detail: dict[str, Any]


def origin(store: Store) -> str:
    return str(store.conn.execute("SELECT value FROM sync_meta WHERE key = 'origin'").fetchone()[0])


# -- remotes -----------------------------------------------------------------------------

_REMOTE = "name, url, added_at, pushed_upto, pull_cursor, last_push_at, last_pull_at"


def remotes(store: Store) -> list[Remote]:
    return [Remote(*r) for r in store.conn.execute(f"SELECT {_REMOTE} FROM sync_remotes ORDER BY name")]


def remote(store: Store, name: str) -> Remote | None:
    row = store.conn.execute(f"SELECT {_REMOTE} FROM sync_remotes WHERE name = ?", (name,)).fetchone()
    return None if row is None else Remote(*row)


def add_remote(store: Store, name: str, url: str) -> None:
    store.conn.execute("INSERT INTO sync_remotes (name, url, added_at) VALUES (?,?,?)", (name, url, now()))
    events.append(store, "remote.add", "remote", name, detail={"url": url})


def remove_remote(store: Store, name: str) -> bool:
    gone = store.conn.execute("DELETE FROM sync_remotes WHERE name = ?", (name,)).rowcount > 0
    if gone:
        events.append(store, "remote.remove", "remote", name)
    return gone


def record_sync(store: Store, name: str, pushed: int, new: int, pulled: int) -> None:
    """What a sync moved, in the audit trail (this event itself never travels)."""
    events.append(store, "remote.sync", "remote", name,
                  detail={"pushed": pushed, "new_on_remote": new, "pulled": pulled})


def mark_pushed(store: Store, name: str, upto: int) -> None:
    store.conn.execute(
        "UPDATE sync_remotes SET pushed_upto = max(pushed_upto, ?), last_push_at = ? WHERE name = ?",
        (upto, now(), name),
    )


def mark_pulled(store: Store, name: str, cursor: str) -> None:
    store.conn.execute("UPDATE sync_remotes SET pull_cursor = ?, last_pull_at = ? WHERE name = ?",
                       (cursor, now(), name))


def rewind(store: Store) -> None:
    """Push and pull everything again at the next sync (a project was just shared):
    both sides are idempotent, so this costs time, never a duplicate."""
    store.conn.execute("UPDATE sync_remotes SET pushed_upto = 0, pull_cursor = ''")


# -- shares ------------------------------------------------------------------------------

def shares(store: Store) -> dict[str, str]:
    """Local project key -> its shared name."""
    return dict(store.conn.execute("SELECT project, name FROM sync_shares ORDER BY name"))


def share(store: Store, project: str, name: str) -> bool:
    cur = store.conn.execute("INSERT OR IGNORE INTO sync_shares (project, name, at) VALUES (?,?,?)",
                             (project, name, now()))
    if cur.rowcount:
        events.append(store, "project.share", "project", project, project=project, detail={"name": name})
    return cur.rowcount > 0


def unshare(store: Store, project: str) -> bool:
    gone = store.conn.execute("DELETE FROM sync_shares WHERE project = ?", (project,)).rowcount > 0
    if gone:
        events.append(store, "project.unshare", "project", project, project=project)
    return gone


# -- pushing -----------------------------------------------------------------------------

def pushable(store: Store, after: int, upto: int, projects: list[str], limit: int) -> list[LocalEvent]:
    """Events made here (not applied from elsewhere) after ``after`` that travel: those
    of the shared ``projects``, and concept verdicts (they have no project)."""
    marks = ",".join("?" * len(projects)) or "NULL"
    rows = store.conn.execute(
        "SELECT id, at, action, entity_id, project, reason, before_hash, after_hash, detail FROM events"
        f" WHERE id > ? AND origin IS NULL AND action IN ({','.join('?' * len(TRAVELLING))})"
        f" AND (project IN ({marks}) OR action IN ({','.join('?' * len(CONCEPT))}))"
        " AND id <= ? ORDER BY id LIMIT ?",
        [after, *TRAVELLING, *projects, *CONCEPT, upto, limit],
    ).fetchall()
    return [LocalEvent(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], orjson.loads(r[8] or "{}")) for r in rows]


def count_pushable(store: Store, after: int, projects: list[str]) -> int:
    marks = ",".join("?" * len(projects)) or "NULL"
    return int(store.conn.execute(
        f"SELECT count(*) FROM events WHERE id > ? AND origin IS NULL AND action IN"
        f" ({','.join('?' * len(TRAVELLING))}) AND (project IN ({marks}) OR action IN"
        f" ({','.join('?' * len(CONCEPT))}))",
        [after, *TRAVELLING, *projects, *CONCEPT],
    ).fetchone()[0])


def last_event_id(store: Store) -> int:
    return int(store.conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0])


def memory_rows(store: Store, ids: list[int]) -> dict[int, dict[str, Any]]:
    """What a create carries, for the memories still here (a forgotten one is absent)."""
    out: dict[int, dict[str, Any]] = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        for r in store.conn.execute(
            "SELECT m.id, m.content, m.content_hash, m.kind, m.session, m.recorded_at, m.valid_from,"
            " m.valid_to, m.metadata, l.entry_date, l.topic, l.summary FROM memories m"
            f" LEFT JOIN log_entries l ON l.memory_id = m.id WHERE m.id IN ({','.join('?' * len(part))})",
            part,
        ):
            out[r[0]] = {
                "content": r[1], "content_hash": r[2], "kind": r[3], "session": r[4],
                "recorded_at": r[5], "valid_from": r[6], "valid_to": r[7],
                "metadata": orjson.loads(r[8] or "{}"),
                "log": None if r[11] is None else {"entry_date": r[9], "topic": r[10], "summary": r[11]},
            }
    return out


# -- ids ---------------------------------------------------------------------------------

def local_id(store: Store, gid: str) -> int | None:
    row = store.conn.execute("SELECT local_id FROM sync_ids WHERE gid = ?", (gid,)).fetchone()
    return None if row is None else int(row[0])


def gids_of(store: Store, ids: list[int]) -> dict[int, str]:
    """The origin-qualified id of local memories that were made elsewhere (adopted ones,
    whose text was already here, keep their own id here)."""
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        out.update(store.conn.execute(
            f"SELECT local_id, gid FROM sync_ids WHERE adopted = 0 AND local_id IN ({','.join('?' * len(part))})",
            part,
        ).fetchall())
    return out


def map_id(store: Store, gid: str, local: int, adopted: bool) -> None:
    store.conn.execute("INSERT OR REPLACE INTO sync_ids (gid, local_id, adopted) VALUES (?,?,?)",
                       (gid, local, int(adopted)))


# -- applying ----------------------------------------------------------------------------

def applied(store: Store, origin_id: str, seq: int) -> bool:
    return store.conn.execute("SELECT 1 FROM sync_applied WHERE origin = ? AND seq = ?",
                              (origin_id, seq)).fetchone() is not None


def mark_applied(store: Store, origin_id: str, seq: int) -> None:
    store.conn.execute("INSERT OR IGNORE INTO sync_applied (origin, seq) VALUES (?,?)", (origin_id, seq))


def stamp(store: Store, after: int, origin_id: str, seq: int, at: str) -> None:
    """Give the events appended since ``after`` (by applying one pulled event) that
    event's origin, sequence and time, so they are never pushed back and keep the time
    the verdict was really given."""
    store.conn.execute("UPDATE events SET origin = ?, origin_seq = ?, at = ? WHERE id > ?",
                       (origin_id, seq, at, after))


def latest_verdict(store: Store, memory_id: int, own: str) -> tuple[str, str, int] | None:
    """The (time, origin, sequence) of the newest verdict on a memory, wherever it was given."""
    row = store.conn.execute(
        "SELECT at, coalesce(origin, ?), coalesce(origin_seq, id) FROM events WHERE entity = 'memory'"
        f" AND entity_id = ? AND action IN ({','.join('?' * len(VERDICTS))})"
        " ORDER BY at DESC, coalesce(origin, ?) DESC, coalesce(origin_seq, id) DESC LIMIT 1",
        [own, str(memory_id), *VERDICTS, own],
    ).fetchone()
    return None if row is None else (row[0], row[1], int(row[2]))


def was_forgotten(store: Store, memory_id: int) -> bool:
    return store.conn.execute(
        "SELECT 1 FROM events WHERE entity = 'memory' AND entity_id = ? AND action IN"
        " ('memory.forget', 'memory.delete') LIMIT 1", (str(memory_id),)).fetchone() is not None


def forgotten_texts(store: Store) -> set[tuple[str, str | None]]:
    """(hash, project) of every text forgotten here: a pulled copy of one stays out."""
    return set(store.conn.execute("SELECT before_hash, project FROM events WHERE action = 'memory.forget'"))


def set_valid_to(store: Store, memory_id: int, valid_to: str) -> None:
    """The end a pulled supersede gave its memory where it was given."""
    store.conn.execute("UPDATE memories SET valid_to = ? WHERE id = ?", (valid_to, memory_id))


#: Concept verdict events a replay folds, with the imports that brought verdicts in.
CONCEPT_IMPORTS = ("concept_alias.import", "concept_suppression.import", "concept_dismissal.import")


def replay_concept_verdicts(store: Store, own: str) -> None:
    """Rebuild the concept verdict tables by folding every concept verdict event, local
    and pulled, in (time, origin, sequence) order: merges do not commute (``merge A B``
    then ``merge B C`` differs from the reverse), so applying pulled ones on top of local
    ones in arrival order would leave stores apart. Each step does what
    ``marm.store.concept_verdicts`` does for that verdict; an import only fills a key
    that is free, as ``marm import`` does. Call inside ``store.write()``."""
    assert store.in_transaction
    rows = store.conn.execute(
        "SELECT action, entity_id, reason, detail, at FROM events"
        f" WHERE action IN ({','.join('?' * (len(CONCEPT) + len(CONCEPT_IMPORTS)))})"
        " ORDER BY at, coalesce(origin, ?), coalesce(origin_seq, id)",
        [*CONCEPT, *CONCEPT_IMPORTS, own],
    ).fetchall()
    conn = store.conn
    for table in ("concept_aliases", "concept_suppressions", "concept_dismissals"):
        conn.execute(f"DELETE FROM {table}")
    for action, entity_id, reason, raw, at in rows:
        detail = orjson.loads(raw or "{}")
        if action == "concept.merge" and detail.get("alias") and detail.get("canonical"):
            conn.execute("INSERT INTO concept_aliases (alias, canonical, at) VALUES (?,?,?) ON CONFLICT (alias)"
                         " DO UPDATE SET canonical = excluded.canonical, at = excluded.at",
                         (detail["alias"], detail["canonical"], at))
            conn.execute("DELETE FROM concept_aliases WHERE alias = ?", (detail["canonical"],))
        elif action == "concept.suppress":
            conn.execute("INSERT INTO concept_suppressions (name, reason, at) VALUES (?,?,?) ON CONFLICT (name)"
                         " DO UPDATE SET reason = excluded.reason, at = excluded.at", (entity_id, reason, at))
        elif action == "concept.dismiss" and detail.get("a") and detail.get("b"):
            conn.execute("INSERT OR REPLACE INTO concept_dismissals (a, b, at) VALUES (?,?,?)",
                         (detail["a"], detail["b"], at))
        elif action == "concept_alias.import" and detail.get("canonical"):
            conn.execute("INSERT OR IGNORE INTO concept_aliases (alias, canonical, at) VALUES (?,?,?)",
                         (entity_id, detail["canonical"], at))
        elif action == "concept_suppression.import":
            conn.execute("INSERT OR IGNORE INTO concept_suppressions (name, reason, at) VALUES (?,?,?)",
                         (entity_id, detail.get("reason"), at))
        elif action == "concept_dismissal.import" and "|" in entity_id:
            a, b = entity_id.split("|", 1)
            conn.execute("INSERT OR IGNORE INTO concept_dismissals (a, b, at) VALUES (?,?,?)", (a, b, at))
