"""Schema migrations of the durable database, keyed on ``PRAGMA user_version``.

``user_version`` counts the migrations applied. Each step runs in its own
``BEGIN IMMEDIATE`` transaction together with its version bump, so a crash leaves the
database at a whole version. Steps are append-only: never edit a released one, add a
new one. A database whose version is higher than ``len(MIGRATIONS)`` was written by a
newer marm and is refused (``StoreTooNew``) rather than guessed at.

No ``executescript`` inside a step: it would commit the open transaction first.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from marm.errors import StoreTooNew
from marm.store.core import atomic
from marm.text import stamp


def _run(conn: sqlite3.Connection, script: str) -> None:
    """Execute a ';'-separated script statement by statement inside the open transaction."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            conn.execute(buf)
            buf = ""
    if buf.strip():
        raise ValueError(f"incomplete SQL statement in migration: {buf[:80]!r}")


def m001_initial(conn: sqlite3.Connection) -> None:
    _run(
        conn,
        """
        -- One row per memory. Times are ISO-8601 UTC strings of fixed width, so they sort.
        CREATE TABLE memories (
            id             INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
            content        TEXT NOT NULL,                      -- raw, never HTML-escaped
            content_hash   TEXT NOT NULL,                      -- sha256 of normalised content
            kind           TEXT NOT NULL,
            session        TEXT,
            project        TEXT,                               -- NULL: global, every project sees it
            platform       TEXT,
            source         TEXT NOT NULL,                      -- cli | mcp | hook:<event> | import
            recorded_at    TEXT NOT NULL,                      -- transaction time, immutable
            valid_from     TEXT,
            valid_to       TEXT,
            status         TEXT NOT NULL DEFAULT 'active'
                           CHECK (status IN ('active', 'doubted', 'superseded', 'retracted')),
            status_reason  TEXT,
            superseded_by  INTEGER REFERENCES memories(id) ON DELETE SET NULL,
            metadata       TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX memories_scope ON memories(project, status, recorded_at);
        CREATE INDEX memories_session ON memories(session);
        CREATE INDEX memories_hash ON memories(content_hash);

        -- Words, for BM25 (porter stemming).
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, content='memories', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        -- Exact characters, for the exact lane: substring search with an index.
        CREATE VIRTUAL TABLE memories_tri USING fts5(
            content, content='memories', content_rowid='id',
            tokenize='trigram case_sensitive 1'
        );
        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content);
            INSERT INTO memories_tri(rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
            INSERT INTO memories_tri(memories_tri, rowid, content) VALUES ('delete', old.id, old.content);
        END;
        CREATE TRIGGER memories_au AFTER UPDATE OF content ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
            INSERT INTO memories_tri(memories_tri, rowid, content) VALUES ('delete', old.id, old.content);
            INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content);
            INSERT INTO memories_tri(rowid, content) VALUES (new.id, new.content);
        END;

        -- Log entries (YYYY-MM-DD-topic-summary or free text); each mirrors one memory.
        CREATE TABLE log_entries (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id    INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            entry_date   TEXT,
            topic        TEXT,
            summary      TEXT NOT NULL,
            session      TEXT,
            project      TEXT,
            recorded_at  TEXT NOT NULL
        );
        CREATE INDEX log_entries_memory ON log_entries(memory_id);
        CREATE INDEX log_entries_scope ON log_entries(project, session, recorded_at);

        -- Named reusable instructions; `use` activates one for a session.
        CREATE TABLE notebook (
            name        TEXT PRIMARY KEY,
            content     TEXT NOT NULL,
            created_at  TEXT NOT NULL,
            updated_at  TEXT NOT NULL
        );
        CREATE TABLE notebook_active (
            session     TEXT NOT NULL,
            name        TEXT NOT NULL REFERENCES notebook(name) ON DELETE CASCADE,
            since       TEXT NOT NULL,
            PRIMARY KEY (session, name)
        );

        CREATE TABLE sessions (
            name          TEXT PRIMARY KEY,
            project       TEXT,
            platform      TEXT,
            created_at    TEXT NOT NULL,
            last_seen_at  TEXT NOT NULL
        );

        -- Append-only audit of every mutation. No foreign keys: events outlive their rows.
        CREATE TABLE events (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            at           TEXT NOT NULL,
            action       TEXT NOT NULL,        -- e.g. memory.create, memory.delete, flag.set
            entity       TEXT NOT NULL,        -- memory | log | notebook | session | flag | concept | ...
            entity_id    TEXT NOT NULL,
            source       TEXT NOT NULL,        -- which surface: cli | mcp | hook:<event> | import
            platform     TEXT,
            session      TEXT,
            project      TEXT,
            reason       TEXT,
            before_hash  TEXT,
            after_hash   TEXT,
            detail       TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX events_entity ON events(entity, entity_id, id);

        -- Durable outbox of background work, filled in the same transaction as the write.
        CREATE TABLE outbox (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            kind          TEXT NOT NULL,        -- embed | concepts | ...
            target        TEXT NOT NULL,        -- e.g. a memory id
            content_hash  TEXT,
            state         TEXT NOT NULL DEFAULT 'pending'
                          CHECK (state IN ('pending', 'parked')),
            attempts      INTEGER NOT NULL DEFAULT 0,
            last_error    TEXT,
            lease_token   TEXT,
            lease_until   TEXT,
            created_at    TEXT NOT NULL,
            updated_at    TEXT NOT NULL,
            UNIQUE (kind, target)
        );
        CREATE INDEX outbox_ready ON outbox(kind, state, lease_until, id);

        -- Who holds a background lease (the exclusion itself is a file lock).
        CREATE TABLE leases (
            name          TEXT PRIMARY KEY,
            holder        TEXT NOT NULL,
            pid           INTEGER NOT NULL,
            started_at    TEXT NOT NULL,
            heartbeat_at  TEXT NOT NULL,
            progress      TEXT NOT NULL DEFAULT '{}'
        );

        -- Runtime settings saved with `marm config set`; read fresh by every process.
        CREATE TABLE flags (
            key         TEXT PRIMARY KEY,
            value       TEXT NOT NULL,
            updated_at  TEXT NOT NULL
        );

        -- Value-keyed tombstones: the normalised hash of retracted text, per scope.
        CREATE TABLE tombstones (
            content_hash  TEXT NOT NULL,
            scope         TEXT NOT NULL,        -- project, or '' for global
            memory_id     INTEGER,
            reason        TEXT,
            at            TEXT NOT NULL,
            PRIMARY KEY (content_hash, scope)
        );

        -- Vectors, one per chunk of a memory and per model (filled by the embedding drain).
        CREATE TABLE memory_vectors (
            memory_id     INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            model         TEXT NOT NULL,
            chunk         INTEGER NOT NULL,
            dim           INTEGER NOT NULL,
            start_char    INTEGER NOT NULL,
            end_char      INTEGER NOT NULL,
            content_hash  TEXT NOT NULL,
            vector        BLOB NOT NULL,         -- float32, little-endian, L2-normalised
            PRIMARY KEY (memory_id, model, chunk)
        );

        -- Human verdicts on the derived concept graph, keyed on names (values), so that
        -- they survive a rebuild of the disposable graph database.
        CREATE TABLE concept_aliases (
            alias       TEXT PRIMARY KEY,       -- normalised name that resolves to canonical
            canonical   TEXT NOT NULL,
            at          TEXT NOT NULL
        );
        CREATE TABLE concept_suppressions (
            name        TEXT PRIMARY KEY,       -- normalised name never extracted again
            reason      TEXT,
            at          TEXT NOT NULL
        );
        CREATE TABLE concept_dismissals (
            a           TEXT NOT NULL,          -- normalised names, a < b
            b           TEXT NOT NULL,
            at          TEXT NOT NULL,
            PRIMARY KEY (a, b)
        );

        -- Repositories marm indexes, and the dirty marks hooks leave on them.
        CREATE TABLE code_repos (
            path             TEXT PRIMARY KEY,  -- absolute top-level of the work tree
            project          TEXT,
            added_at         TEXT NOT NULL,
            dirty_since      TEXT,
            last_indexed_at  TEXT
        );
        """,
    )


def m002_validity_index(conn: sqlite3.Connection) -> None:
    """An index on a memory's validity time (``valid_from``, else ``recorded_at``), which
    a recall naming a date filters on: without it that filter read every memory in
    scope (50-100 ms at 100k memories)."""
    _run(conn, "CREATE INDEX memories_validity ON memories(coalesce(valid_from, recorded_at), project, status);")


def m003_memory_count(conn: sqlite3.Connection) -> None:
    """How many memories there are, kept by triggers in a one-row table: bm25's IDF needs
    the count of the word index's rows (one per memory) on every recall, and counting
    an index costs milliseconds at 100k memories. It replaces reading FTS5's private
    averages record."""
    _run(
        conn,
        """
        CREATE TABLE memory_count (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
        INSERT INTO memory_count (id, n) SELECT 1, count(*) FROM memories;
        CREATE TRIGGER memory_count_ai AFTER INSERT ON memories BEGIN
            UPDATE memory_count SET n = n + 1 WHERE id = 1;
        END;
        CREATE TRIGGER memory_count_ad AFTER DELETE ON memories BEGIN
            UPDATE memory_count SET n = n - 1 WHERE id = 1;
        END;
        """,
    )


def m004_turn_journal(conn: sqlite3.Connection) -> None:
    """What the hooks of a live session saw, until its turn is captured: the prompt, the
    files a tool changed, the commands that failed (and later passed), compactions.
    Rows are small and short-lived; a captured turn leaves only its marker."""
    _run(
        conn,
        """
        CREATE TABLE turn_journal (
            id        INTEGER PRIMARY KEY,
            session   TEXT NOT NULL,         -- the agent's session id
            kind      TEXT NOT NULL,         -- prompt | edit | fail | pass | turn | compact
            subject   TEXT NOT NULL DEFAULT '',  -- the prompt, file or command
            detail    TEXT NOT NULL DEFAULT '',  -- a failure's error line
            at        TEXT NOT NULL
        );
        CREATE INDEX turn_journal_session ON turn_journal(session, kind, id);
        """,
    )


def m005_sync(conn: sqlite3.Connection) -> None:
    """Replication (``marm sync``): the audit trail becomes the log that travels.

    Each store gets an origin id once; a local event's global id is (origin, events.id).
    An event written while applying a pulled one carries that event's origin and
    sequence, so it is never pushed back. ``sync_ids`` maps origin-qualified memory ids
    to local ones; ``sync_applied`` makes a pull idempotent. No text is kept here."""
    _run(
        conn,
        """
        ALTER TABLE events ADD COLUMN origin TEXT;          -- NULL: made here
        ALTER TABLE events ADD COLUMN origin_seq INTEGER;   -- its sequence at its origin
        CREATE INDEX events_origin ON events(origin, origin_seq);
        CREATE TABLE sync_meta (
            key    TEXT PRIMARY KEY,
            value  TEXT NOT NULL
        );
        INSERT INTO sync_meta (key, value) VALUES ('origin', lower(hex(randomblob(12))));
        CREATE TABLE sync_remotes (
            name          TEXT PRIMARY KEY,
            url           TEXT NOT NULL,              -- never with a password
            added_at      TEXT NOT NULL,
            pushed_upto   INTEGER NOT NULL DEFAULT 0, -- local events.id pushed so far
            pull_cursor   TEXT NOT NULL DEFAULT '',   -- the transport's position
            last_push_at  TEXT,
            last_pull_at  TEXT
        );
        CREATE TABLE sync_shares (
            project    TEXT PRIMARY KEY,              -- the local project key
            name       TEXT NOT NULL UNIQUE,          -- its name on every remote
            at         TEXT NOT NULL
        );
        CREATE TABLE sync_ids (
            gid        TEXT PRIMARY KEY,              -- origin:id of a memory made elsewhere
            local_id   INTEGER NOT NULL,
            adopted    INTEGER NOT NULL DEFAULT 0     -- 1: the same text was already here
        );
        CREATE INDEX sync_ids_local ON sync_ids(local_id);
        CREATE TABLE sync_applied (
            origin     TEXT NOT NULL,
            seq        INTEGER NOT NULL,
            PRIMARY KEY (origin, seq)
        ) WITHOUT ROWID;
        """,
    )


def m006_project_settings(conn: sqlite3.Connection) -> None:
    """Settings saved for one project (``marm config set KEY VALUE --project``); they
    beat the global ``flags`` for hooks and commands run in that project."""
    _run(
        conn,
        """
        CREATE TABLE project_flags (
            project    TEXT NOT NULL,                 -- the project key (a repository's path or a name)
            key        TEXT NOT NULL,
            value      TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (project, key)
        ) WITHOUT ROWID;
        """,
    )


def m007_vectors_once(conn: sqlite3.Connection) -> None:
    """Each vector stored once: the values move from ``memory_vectors.vector`` BLOBs into
    the append-only files (``marm.store.vecfile``), which the database keeps the books
    of (``vector_files``; ``memory_vectors`` keeps the spans, the content hash and the
    row). The matrix files that copied the BLOBs go.

    The files are written and synced before this step commits: a crash before the
    commit leaves the BLOBs in place and this step runs again. A database without a
    file of its own (in memory) cannot hold the files: its vectors are dropped and
    their memories queued for embedding again, so nothing is lost but time.
    """
    import os
    from datetime import datetime, timezone
    from pathlib import Path

    from marm.store import vecfile

    _run(
        conn,
        """
        CREATE TABLE vector_files (
            id          INTEGER PRIMARY KEY,
            model       TEXT NOT NULL,
            project     TEXT,                    -- NULL: global memories
            dim         INTEGER NOT NULL,
            generation  INTEGER NOT NULL DEFAULT 1,   -- a compaction writes the next one
            rows        INTEGER NOT NULL DEFAULT 0    -- committed rows: readers map no more
        );
        CREATE UNIQUE INDEX vector_files_key ON vector_files(model, ifnull(project, char(0)));
        CREATE TABLE vector_books (
            memory_id     INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            model         TEXT NOT NULL,
            chunk         INTEGER NOT NULL,
            dim           INTEGER NOT NULL,
            start_char    INTEGER NOT NULL,
            end_char      INTEGER NOT NULL,
            content_hash  TEXT NOT NULL,
            file_id       INTEGER NOT NULL REFERENCES vector_files(id),
            row           INTEGER NOT NULL,      -- its row in the file
            PRIMARY KEY (memory_id, model, chunk)
        ) WITHOUT ROWID;
        CREATE INDEX memory_vectors_file ON vector_books(file_id, row);
        """,
    )
    path = next((r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"), "")
    home = Path(path).parent if path else None
    groups = conn.execute(
        "SELECT v.model, m.project, v.dim FROM memory_vectors v JOIN memories m ON m.id = v.memory_id"
        " GROUP BY v.model, m.project, v.dim ORDER BY v.model, m.project").fetchall()
    for model, project, dim in groups:
        select = (" FROM memory_vectors v JOIN memories m ON m.id = v.memory_id"
                  " WHERE v.model = ? AND m.project IS ? AND v.dim = ?")
        args = (model, project, dim)
        taken = conn.execute("SELECT 1 FROM vector_files WHERE model = ? AND project IS ?",
                             (model, project)).fetchone()
        if home is None or taken:  # no place for files, or a second dimension of one model
            at = stamp(datetime.now(timezone.utc))
            conn.execute("INSERT INTO outbox (kind, target, content_hash, created_at, updated_at)"
                         " SELECT DISTINCT 'embed', CAST(m.id AS TEXT), m.content_hash, ?, ?"
                         f"{select} ON CONFLICT (kind, target) DO NOTHING", (at, at, *args))
            continue
        file_id = conn.execute("INSERT INTO vector_files (model, project, dim) VALUES (?, ?, ?)",
                               (model, project, dim)).lastrowid
        target = vecfile.path_for(home, model, project, 1)
        fd = vecfile.open_for_append(target, model, project, dim, 0)
        row = 0
        try:
            cursor = conn.execute("SELECT v.memory_id, v.chunk, v.start_char, v.end_char, v.content_hash,"
                                  f" v.vector{select} ORDER BY v.rowid", args)
            while batch := cursor.fetchmany(2048):
                data = b"".join(r[0].to_bytes(8, "little", signed=True) + r[5] for r in batch)
                vecfile.append(fd, data, durable=True)
                conn.executemany(
                    "INSERT INTO vector_books (memory_id, model, chunk, dim, start_char, end_char,"
                    " content_hash, file_id, row) VALUES (?,?,?,?,?,?,?,?,?)",
                    [(r[0], model, r[1], dim, r[2], r[3], r[4], file_id, row + i) for i, r in enumerate(batch)])
                row += len(batch)
        finally:
            os.close(fd)
        conn.execute("UPDATE vector_files SET rows = ? WHERE id = ?", (row, file_id))
    _run(
        conn,
        """
        DROP TABLE memory_vectors;
        ALTER TABLE vector_books RENAME TO memory_vectors;
        """,
    )
    if home is not None:
        for old in (home / "vectors").glob("*/*.vec"):  # the copies: ``<project>.vec``, no generation
            if not old.stem.rpartition(".")[2].isdigit():
                old.unlink(missing_ok=True)


def m008_hygiene(conn: sqlite3.Connection) -> None:
    """Keeping memory clean (issue 19): the review queue of near-duplicates, reversals
    and code-stale memories, the code a memory named when it was checked, and the
    hygiene sweep's position.

    A queue row is keyed on values, not ids: (kind, hash_a, hash_b) is the pair's
    content hashes (a duplicate's sorted; a reversal's older then newer; a stale
    flag's memory hash and a hash of the code state it was flagged for), so a dismissal
    still holds after an export and import gives the memories new ids, and the sweep
    never proposes a dismissed pair again."""
    _run(
        conn,
        """
        CREATE TABLE hygiene_queue (
            id          INTEGER PRIMARY KEY,
            kind        TEXT NOT NULL CHECK (kind IN ('duplicate', 'contradiction', 'stale')),
            project     TEXT,
            old_id      INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            new_id      INTEGER REFERENCES memories(id) ON DELETE CASCADE,  -- NULL: stale
            hash_a      TEXT NOT NULL,
            hash_b      TEXT NOT NULL,
            detail      TEXT NOT NULL DEFAULT '{}',
            state       TEXT NOT NULL DEFAULT 'open'
                        CHECK (state IN ('open', 'accepted', 'dismissed', 'auto')),
            created_at  TEXT NOT NULL,
            decided_at  TEXT,
            UNIQUE (kind, hash_a, hash_b)
        );
        CREATE INDEX hygiene_queue_state ON hygiene_queue(state, project);
        CREATE INDEX hygiene_queue_old ON hygiene_queue(old_id, state);
        CREATE TABLE hygiene_code_refs (
            memory_id   INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            repo        TEXT NOT NULL,             -- the indexed repository's root
            path        TEXT NOT NULL,             -- a file the memory names (or holds a symbol it names)
            file_hash   TEXT,                      -- the file's content hash when checked
            symbols     TEXT NOT NULL,             -- JSON: the file's symbol names then
            lines       INTEGER NOT NULL DEFAULT 0,
            at          TEXT NOT NULL,
            PRIMARY KEY (memory_id, repo, path)
        ) WITHOUT ROWID;
        CREATE INDEX hygiene_code_refs_file ON hygiene_code_refs(repo, path);
        CREATE TABLE hygiene_marks (
            name   TEXT PRIMARY KEY,               -- e.g. checked_upto, tree:<root>
            value  TEXT NOT NULL
        ) WITHOUT ROWID;
        """,
    )


def m009_memory_dates(conn: sqlite3.Connection) -> None:
    """The dates a memory names, resolved at write time against its own date ("yesterday"
    in a memory of 4 October is 3 October): a recall naming a day finds the memories
    that name it, by an index on the interval's start (``marm.store.mentions``).
    Memories written before this step have none recorded."""
    _run(
        conn,
        """
        CREATE TABLE memory_dates (
            memory_id  INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            start      TEXT NOT NULL,                 -- [start, end), fixed-width ISO-8601 UTC
            end        TEXT NOT NULL
        );
        CREATE INDEX memory_dates_start ON memory_dates(start);
        CREATE INDEX memory_dates_memory ON memory_dates(memory_id);
        """,
    )


def m010_staged_summaries(conn: sqlite3.Connection) -> None:
    """Summaries an agent writes for a cluster of old episodes (issue 19): staged first,
    then applied or discarded. A row keeps the cluster's sources and their content
    hashes when it was staged, so an apply whose sources changed since is refused
    instead of folding other texts than the summary was written from. At most one
    staged summary per cluster (its handle: the first source's id)."""
    _run(
        conn,
        """
        CREATE TABLE staged_summaries (
            id          INTEGER PRIMARY KEY,
            cluster     INTEGER NOT NULL,          -- the handle: the first source's id
            project     TEXT,
            session     TEXT,
            week        TEXT NOT NULL,
            sources     TEXT NOT NULL,             -- JSON: [[memory id, content hash], ...]
            summary     TEXT NOT NULL,
            state       TEXT NOT NULL DEFAULT 'staged'
                        CHECK (state IN ('staged', 'applied', 'discarded', 'stale')),
            summary_id  INTEGER,                   -- the memory an apply wrote
            staged_at   TEXT NOT NULL,
            decided_at  TEXT
        );
        CREATE UNIQUE INDEX staged_summaries_open ON staged_summaries(cluster) WHERE state = 'staged';
        CREATE INDEX staged_summaries_state ON staged_summaries(state, project);
        """,
    )


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    m001_initial,
    m002_validity_index,
    m003_memory_count,
    m004_turn_journal,
    m005_sync,
    m006_project_settings,
    m007_vectors_once,
    m008_hygiene,
    m009_memory_dates,
    m010_staged_summaries,
]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring ``conn`` to ``SCHEMA_VERSION``; return how many steps ran.

    ``conn`` must be in autocommit mode (``isolation_level=None``).
    """
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > SCHEMA_VERSION:
        raise StoreTooNew(
            f"the database is at schema version {current}, newer than this marm "
            f"(version {SCHEMA_VERSION}); upgrade marm to use it"
        )
    ran = 0
    for index in range(current, SCHEMA_VERSION):
        with atomic(conn, "the database"):
            # Re-check under the write lock: another process may have migrated meanwhile.
            if conn.execute("PRAGMA user_version").fetchone()[0] != index:
                continue
            MIGRATIONS[index](conn)
            conn.execute(f"PRAGMA user_version = {index + 1}")
            ran += 1
    return ran
