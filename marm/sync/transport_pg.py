"""The PostgreSQL transport: one table of wire events on an existing server.

Only ``marm sync`` imports this module (it imports psycopg). The schema is created on
first use and needs no extension (vectors never travel)::

    marm_events(pos bigserial, origin, seq, at, action, project, memory, data jsonb,
                UNIQUE (origin, seq))

- Push inserts with ``ON CONFLICT (origin, seq) DO NOTHING``: pushing again (after a
  ``kill -9``, or from a rewound cursor) stores nothing twice.
- Pushers take a transaction-scoped advisory lock, so positions (``pos``) become
  visible in the order they were handed out and a puller reading ``pos > cursor`` never
  skips a row that commits late.
- A pushed forget erases, in the same transaction, the text of that memory's create
  (``content``, ``log``, ``metadata`` leave its ``data``); the forget itself carries a
  hash only, which is the tombstone the server keeps.

Credentials never reach marm.db: the URL is stored without a password (one given is
refused), and libpq finds it in ``PGPASSWORD``, ``~/.pgpass`` or a service file.
"""

from __future__ import annotations

from typing import Any

import orjson
import psycopg

from marm.errors import Unavailable
from marm.sync.protocol import WireEvent, check_url

_CREATES = ("memory.create", "memory.import")


def _one(row: tuple | None) -> Any:
    """The single value of a one-row, one-column answer (an aggregate always has a row)."""
    assert row is not None
    return row[0]
_LOCK = 0x6D61726D  # "marm": the advisory lock pushers serialise on

SCHEMA = """
CREATE TABLE IF NOT EXISTS marm_events (
    pos      bigserial PRIMARY KEY,
    origin   text NOT NULL,
    seq      bigint NOT NULL,
    at       text NOT NULL,
    action   text NOT NULL,
    project  text,
    memory   text,
    data     jsonb NOT NULL,
    UNIQUE (origin, seq)
);
CREATE INDEX IF NOT EXISTS marm_events_memory ON marm_events (memory);
CREATE INDEX IF NOT EXISTS marm_events_hash ON marm_events (project, (data->>'content_hash'));
CREATE INDEX IF NOT EXISTS marm_events_forgets ON marm_events (project, (data->>'content_hash'))
    WHERE action = 'memory.forget';
"""


class PgTransport:
    def __init__(self, url: str, connect_timeout: int = 10) -> None:
        try:
            self.conn = psycopg.connect(check_url(url), autocommit=True, connect_timeout=connect_timeout)
        except psycopg.Error as exc:
            raise Unavailable(f"cannot reach {url}: {str(exc).strip().splitlines()[0]}") from None
        if _one(self.conn.execute("SELECT to_regclass('marm_events_forgets') IS NOT NULL").fetchone()):
            return  # the schema is there: one round trip, not six, on every sync
        with self.conn.transaction():
            # Two first syncs at once must not both create the table.
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    self.conn.execute(statement)

    def push(self, events: list[WireEvent]) -> int:
        if not events:
            return 0
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
            cur.execute("CREATE TEMP TABLE IF NOT EXISTS marm_incoming (origin text, seq bigint, at text,"
                        " action text, project text, memory text, data jsonb) ON COMMIT DELETE ROWS")
            with cur.copy("COPY marm_incoming (origin, seq, at, action, project, memory, data)"
                          " FROM STDIN") as copy:
                for e in events:
                    copy.write_row((e["origin"], e["seq"], e["at"], e["action"], e.get("project"),
                                    e.get("memory"), orjson.dumps(e.get("data") or {}).decode()))
            cur.execute("INSERT INTO marm_events (origin, seq, at, action, project, memory, data)"
                        " SELECT origin, seq, at, action, project, memory, data FROM marm_incoming"
                        " ORDER BY seq ON CONFLICT (origin, seq) DO NOTHING")
            added = cur.rowcount
            # Erasure: the creates a pushed forget names (by id, or by text in its
            # project), and any create pushed now of a text forgotten before.
            forgets = [e for e in events if e["action"] == "memory.forget"]
            if forgets:
                cur.execute(
                    "UPDATE marm_events SET data = (data - 'content' - 'log' - 'metadata')"
                    " || '{\"erased\": true}'::jsonb WHERE action IN ('memory.create', 'memory.import')"
                    " AND data ? 'content' AND (memory = ANY(%s)"
                    " OR (project, data->>'content_hash') IN (SELECT * FROM unnest(%s::text[], %s::text[])))",
                    ([f["memory"] for f in forgets], [f.get("project") for f in forgets],
                     [(f.get("data") or {}).get("content_hash") for f in forgets]))
            projects = sorted({e["project"] for e in events if e.get("project") and e["action"] in _CREATES})
            if projects and _one(cur.execute(
                    "SELECT EXISTS (SELECT 1 FROM marm_events WHERE action = 'memory.forget'"
                    " AND project = ANY(%s))", (projects,)).fetchone()):
                cur.execute(
                    "UPDATE marm_events c SET data = (c.data - 'content' - 'log' - 'metadata')"
                    " || '{\"erased\": true}'::jsonb WHERE c.origin = %s AND c.seq = ANY(%s)"
                    " AND c.data ? 'content' AND EXISTS (SELECT 1 FROM marm_events f"
                    " WHERE f.action = 'memory.forget' AND f.project = c.project"
                    " AND (f.data->>'content_hash') = (c.data->>'content_hash'))",
                    (events[0]["origin"], [e["seq"] for e in events if e["action"] in _CREATES]))
        return added

    def pull(self, cursor: str, origin: str, limit: int) -> tuple[list[WireEvent], str]:
        after = int(cursor or 0)
        rows = self.conn.execute(
            "SELECT pos, origin, seq, at, action, project, memory, data FROM marm_events"
            " WHERE pos > %s ORDER BY pos LIMIT %s", (after, limit)).fetchall()
        events = [{"origin": r[1], "seq": r[2], "at": r[3], "action": r[4], "project": r[5],
                   "memory": r[6], "data": r[7]} for r in rows if r[1] != origin]
        return events, str(rows[-1][0]) if rows else str(after)

    def behind(self, cursor: str, origin: str) -> int:
        return int(_one(self.conn.execute("SELECT count(*) FROM marm_events WHERE pos > %s AND origin <> %s",
                                          (int(cursor or 0), origin)).fetchone()))

    def close(self) -> None:
        self.conn.close()
