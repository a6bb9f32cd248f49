"""The turn journal: what a live session's hooks saw, until its turn is captured.

Hooks are separate processes, so what one sees (the prompt, a file an edit changed, a
command that failed) is written here for the one that captures the turn (stop,
pre-compact, session-end) to read. Every call is one indexed insert or read of a
session's few newest rows: O(1) per hook, whatever the size of the store.

Kinds: ``prompt`` (subject: the prompt), ``edit`` (a file), ``fail`` (a command and its
error line), ``pass`` (a failed command that later passed), ``turn`` (a captured turn's
marker), ``compact`` (the agent summarised its context away).
"""

from __future__ import annotations

from dataclasses import dataclass

from marm.store.db import Store, now

KINDS = ("prompt", "edit", "fail", "pass", "turn", "compact")
#: Rows a turn reads at most (a turn with more edits or failures keeps the newest).
TURN_ROWS = 400
#: Journal rows are pruned once older than this many days.
KEEP_DAYS = 14


@dataclass(frozen=True, slots=True)
class Entry:
    id: int
    session: str
    kind: str
    subject: str
    detail: str
    at: str


def _entry(row: tuple) -> Entry:
    return Entry(*row)


def add(store: Store, session: str, kind: str, subject: str = "", detail: str = "") -> int:
    """Append one row (its own short transaction unless the caller holds one)."""
    assert kind in KINDS, kind
    with store.write():
        cur = store.conn.execute(
            "INSERT INTO turn_journal (session, kind, subject, detail, at) VALUES (?,?,?,?,?)",
            (session, kind, subject, detail, now()),
        )
    return int(cur.lastrowid or 0)


def last(store: Store, session: str, kinds: tuple[str, ...]) -> Entry | None:
    """The newest row of the session of one of ``kinds``."""
    marks = ",".join("?" * len(kinds))
    row = store.conn.execute(
        f"SELECT id, session, kind, subject, detail, at FROM turn_journal"
        f" WHERE session = ? AND kind IN ({marks}) ORDER BY id DESC LIMIT 1",
        (session, *kinds),
    ).fetchone()
    return None if row is None else _entry(row)


def since(store: Store, session: str, after_id: int) -> list[Entry]:
    """The session's rows after ``after_id``, oldest first (at most ``TURN_ROWS``)."""
    rows = store.conn.execute(
        "SELECT id, session, kind, subject, detail, at FROM turn_journal"
        " WHERE session = ? AND id > ? ORDER BY id DESC LIMIT ?",
        (session, after_id, TURN_ROWS),
    ).fetchall()
    return [_entry(r) for r in reversed(rows)]


def open_turn(store: Store, session: str) -> tuple[Entry | None, list[Entry]]:
    """(the prompt of the session's uncaptured turn, its rows after that prompt);
    (None, rows since the last marker) when no prompt was journaled."""
    mark = last(store, session, ("turn",))
    rows = since(store, session, mark.id if mark else 0)
    prompts = [r for r in rows if r.kind == "prompt"]
    if not prompts:
        return None, rows
    head = prompts[-1]
    return head, [r for r in rows if r.id > head.id]


def open_failure(store: Store, session: str, command: str) -> Entry | None:
    """The newest failure of ``command`` in the session that no later pass closed."""
    row = store.conn.execute(
        "SELECT id, session, kind, subject, detail, at FROM turn_journal"
        " WHERE session = ? AND kind IN ('fail', 'pass') AND subject = ? ORDER BY id DESC LIMIT 1",
        (session, command),
    ).fetchone()
    return _entry(row) if row is not None and row[2] == "fail" else None


def edits_since(store: Store, session: str, after_id: int) -> list[str]:
    """Files edited in the session after row ``after_id``, in order, once each."""
    rows = store.conn.execute(
        "SELECT subject FROM turn_journal WHERE session = ? AND kind = 'edit' AND id > ?"
        " ORDER BY id LIMIT ?",
        (session, after_id, TURN_ROWS),
    ).fetchall()
    return list(dict.fromkeys(r[0] for r in rows))


def prune(store: Store, older_than: str) -> int:
    """Drop rows recorded before ``older_than`` (a stored timestamp)."""
    with store.write():
        cur = store.conn.execute("DELETE FROM turn_journal WHERE at < ?", (older_than,))
    return cur.rowcount
