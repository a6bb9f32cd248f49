"""The replication protocol: what travels between a store and a remote, and how.

The audit trail is the log. Each event made in a store has a globally unique id: the
store's origin id (random, stamped once by migration 4) and the event's sequence there
(``events.id``). A *wire event* is one JSON object::

    {"origin": "9f3c...", "seq": 812, "at": "2026-...Z", "action": "memory.retract",
     "project": "team-api", "memory": "9f3c...:57", "data": {"reason": "..."}}

- ``project`` is the project's *shared name* (``marm share --as``), not the local path,
  so two checkouts at different paths meet in one project. Events of a project that is
  not shared never become wire events; global memories do not travel either.
- ``memory`` is the origin-qualified id of the memory (``origin:id`` where it was first
  written); every store maps it to its own id (``sync_ids``).
- A create carries the text as it is at push time, cleaned again (secrets redacted,
  ``<private>`` spans dropped) before it leaves. A create whose memory is gone by then
  (forgotten) carries no text at all. A forget carries only the hash.
- Vectors and the derived graphs never travel: a pulled memory is queued for its
  embedding and concepts like any local write.

A transport (``transport_pg``, ``transport_dir``) stores wire events keyed on
(origin, seq), so pushing twice stores nothing twice, and hands them back in an order
where an event comes after the events it depends on. When a forget is pushed, the
transport erases the text of that memory's create wherever it keeps it.
"""

from __future__ import annotations

from marm.errors import BadInput

from typing import Any, Protocol

import orjson

from marm.store import sync_state
from marm.store.db import Store
from marm.text import clean, content_hash

WireEvent = dict[str, Any]


class Transport(Protocol):
    """What ``marm sync`` needs of a remote."""

    def push(self, events: list[WireEvent]) -> int:
        """Store ``events`` (already stored ones are ignored); erase the text of every
        memory a pushed forget names. Returns how many were new."""

    def pull(self, cursor: str, origin: str, limit: int) -> tuple[list[WireEvent], str]:
        """Events after ``cursor`` not made by ``origin``, and the cursor after them."""

    def behind(self, cursor: str, origin: str) -> int:
        """How many events after ``cursor`` were made elsewhere."""

    def close(self) -> None: ...


def gid(origin: str, memory_id: int) -> str:
    return f"{origin}:{memory_id}"


def redact(text: str) -> str:
    """What of ``text`` may leave the machine (idempotent on stored text, which was
    cleaned when written; imported text may not have been)."""
    return clean(text).text.strip()


def wire_events(store: Store, local: list[sync_state.LocalEvent], shared: dict[str, str]) -> list[WireEvent]:
    """Turn local events into wire events (reading the memories' current text)."""
    own = sync_state.origin(store)
    memory_ids = [int(e.entity_id) for e in local if e.entity_id.isdigit() and not e.action.startswith("concept.")]
    refs = [int(e.detail["superseded_by"]) for e in local
            if e.action == "memory.supersede" and isinstance(e.detail.get("superseded_by"), int)]
    foreign = sync_state.gids_of(store, memory_ids + refs)
    rows = sync_state.memory_rows(store, [int(e.entity_id) for e in local if e.action in sync_state.CREATES])

    def qualify(memory_id: int) -> str:
        return foreign.get(memory_id) or gid(own, memory_id)

    out: list[WireEvent] = []
    for e in local:
        wire: WireEvent = {"origin": own, "seq": e.id, "at": e.at, "action": e.action,
                           "project": shared.get(e.project) if e.project else None, "memory": None}
        if e.action.startswith("concept."):
            wire["data"] = {**e.detail, "name": e.entity_id, "reason": e.reason}
            out.append(wire)
            continue
        wire["memory"] = qualify(int(e.entity_id))
        if e.action in sync_state.CREATES:
            row = rows.get(int(e.entity_id))
            wire["data"] = _create(row, e) if row else {"content_hash": e.after_hash, "erased": True}
        elif e.action in sync_state.ERASURES:
            wire["data"] = {"content_hash": e.before_hash, "reason": e.reason}
        else:
            data: dict[str, Any] = {"reason": e.reason}
            if e.action == "memory.supersede":
                by = e.detail.get("superseded_by")
                data["superseded_by"] = qualify(int(by)) if isinstance(by, int) else None
            out_valid = e.detail.get("valid_to")
            if isinstance(out_valid, list) and len(out_valid) == 2:
                data["valid_to"] = out_valid[1]
            wire["data"] = data
        out.append(wire)
    return out


def _create(row: dict[str, Any], event: sync_state.LocalEvent) -> dict[str, Any]:
    content = redact(row["content"])
    log = row["log"]
    if log is not None:
        log = {**log, "summary": redact(log["summary"])}
    metadata = row["metadata"]
    try:
        metadata = orjson.loads(redact(orjson.dumps(metadata).decode()) or "{}")
    except orjson.JSONDecodeError:
        metadata = {}
    status = event.detail.get("status", "active") if event.action == "memory.import" else "active"
    return {
        "content": content,
        "content_hash": row["content_hash"] if content == row["content"] else content_hash(content),
        "kind": row["kind"], "session": row["session"], "recorded_at": row["recorded_at"],
        "valid_from": row["valid_from"], "valid_to": row["valid_to"], "metadata": metadata,
        "log": log, "status": status if isinstance(status, str) else "active",
    }


def encode(event: WireEvent) -> bytes:
    return orjson.dumps(event, option=orjson.OPT_SORT_KEYS)


def erase(event: WireEvent) -> WireEvent:
    """A create without its text (what a forget leaves of it on a remote)."""
    data = {k: v for k, v in (event.get("data") or {}).items() if k not in ("content", "log", "metadata")}
    return {**event, "data": {**data, "erased": True}}


def check_url(url: str) -> str:
    """What ``marm remote add`` accepts (never a password; no psycopg import)."""
    from urllib.parse import parse_qsl, urlsplit

    if url.startswith("dir:"):
        if not url[len("dir:"):].strip():
            raise BadInput("dir: needs a path, e.g. dir:../team-memory")
        return url
    if not url.startswith(("postgresql://", "postgres://")):
        raise BadInput(f"unknown remote {url!r}: use postgresql://USER@HOST/DB or dir:PATH")
    parts = urlsplit(url)
    if parts.password is not None or any(k.lower() == "password" for k, _ in parse_qsl(parts.query)):
        raise BadInput("the URL holds a password; leave it out and give it in PGPASSWORD, ~/.pgpass "
                       "or a service file (marm never stores credentials)")
    return url
