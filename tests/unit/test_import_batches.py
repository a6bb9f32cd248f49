"""The shared import pipeline writes in batches (``marm.importers.BATCH_RECORDS`` and
``BATCH_SECONDS``): another connection can write between them, each batch is committed
on its own, and a dry run counts exactly what the real import does even when a text the
source holds twice falls in two batches. Real SQLite; the batch size is made small here
so that a few hundred records span several batches (a kill -9 of a real import is in
``tests/reliability/test_import_kill.py``)."""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import marm.importers as importers
from marm import config
from marm.context import Ctx
from marm.importers import Record, Tallies, import_records, scoped
from marm.ops.memory import write_memory
from marm.ops.review import retract
from marm.store import transfer

APP = "/src/app"
HOOKED = "/src/hooked"
AT = "2026-01-02T03:04:05.000000Z"


def _ctx(cwd: Path) -> Ctx:
    return Ctx(source="cli", cwd=cwd, env=dict(os.environ))


def _committed(db: Path, project: str) -> int:
    """What another process sees of ``project``: committed rows only."""
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM memories WHERE project = ?", (project,)).fetchone()[0])
    finally:
        conn.close()


def _texts(db: Path) -> Counter[tuple[str | None, str]]:
    conn = sqlite3.connect(db)
    try:
        return Counter(conn.execute("SELECT project, content FROM memories").fetchall())
    finally:
        conn.close()


def test_an_import_larger_than_a_batch_commits_batch_by_batch_and_lets_others_write(
        tmp_path, marm_home, monkeypatch):
    monkeypatch.setattr(importers, "BATCH_RECORDS", 40)
    monkeypatch.setattr(importers, "BATCH_SECONDS", 60.0)  # the record count decides here
    ctx = _ctx(tmp_path)
    db = config.database_path(marm_home)
    write_memory(scoped(ctx, HOOKED), "the store exists before the import")
    seen: list[int] = []
    hook = _ctx(tmp_path)
    hook.store().set_busy_timeout(0)  # a hook that would give up at once on a held lock

    def source() -> Iterator[Record]:
        for i in range(200):
            seen.append(_committed(db, APP))
            if i % 20 == 10:  # mid-import, a hook writes: the lock is free between batches
                write_memory(scoped(hook, HOOKED), f"hook write {i} during the import")
            yield Record(f"r{i}", f"imported fact {i}: a < b && c", APP, AT, kind="note")

    try:
        done = import_records(ctx, "test", source(), None, False, ["test"])
    finally:
        hook.close()
        ctx.close()
    # Several transactions: while the source was still being read, another connection
    # saw the import's rows arrive a batch (at most 40) at a time.
    steps = sorted(set(seen))
    assert steps[0] == 0 and len(steps) >= 200 // 40
    assert all(0 < b - a <= 40 for a, b in zip(steps, steps[1:]))
    assert steps[-1] < 200
    assert done.projects[APP]["added"] == {"note": 200}
    texts = _texts(db)
    assert [texts[(APP, f"imported fact {i}: a < b && c")] for i in range(200)] == [1] * 200
    assert sum(n for (p, _), n in texts.items() if p == APP) == 200
    assert sum(n for (p, _), n in texts.items() if p == HOOKED) == 1 + 10  # every hook write got in


def test_the_time_bound_alone_ends_a_batch(tmp_path, marm_home, monkeypatch):
    """With no time to spare each record is its own transaction: the time bound ends a
    batch after the record that used it up, never before one record is written."""
    monkeypatch.setattr(importers, "BATCH_SECONDS", 0.0)
    monkeypatch.setattr(importers, "BATCH_PAUSE", 0.0)  # twelve batches: no need to wait between them
    ctx = _ctx(tmp_path)
    db = config.database_path(marm_home)
    ctx.store()
    seen: list[int] = []

    def source() -> Iterator[Record]:
        for i in range(12):
            seen.append(_committed(db, APP))
            yield Record(f"r{i}", f"timed fact {i}", APP, AT, kind="note")

    try:
        done = import_records(ctx, "test", source(), None, False, ["test"])
    finally:
        ctx.close()
    assert done.projects[APP]["added"] == {"note": 12}
    # The source is read ahead up to BATCH_RECORDS, so the first batch sees nothing
    # committed; after that every commit is of exactly one record.
    assert seen[0] == 0 and _committed(db, APP) == 12
    assert sorted(set(seen)) == list(range(len(set(seen))))


def _sessions_also(store_ctx: Ctx, names: list[str]):
    """An ``also`` like MARM's: sessions the source names, counted when new here."""
    def also(tallies: Tallies) -> None:
        store = store_ctx.store()
        for name in names:
            record = {"name": name, "project": None, "platform": None, "created_at": AT, "last_seen_at": AT}
            if transfer.put_simple(store, "session", record):
                tallies.of(None).add("session")
    return also


def test_a_dry_run_counts_what_the_import_does_across_batches(tmp_path, marm_home, monkeypatch):
    monkeypatch.setattr(importers, "BATCH_RECORDS", 40)
    monkeypatch.setattr(importers, "BATCH_SECONDS", 60.0)
    twice = "DECISION: retries are bounded: if (a < b && c) { retry(); }"
    kept = "already kept here before the import"
    gone = "retracted here before the import"

    def source() -> list[Record]:
        out = [Record(f"r{i}", f"batch fact {i}", APP, AT, kind="note", session=f"s{i % 3}") for i in range(150)]
        # the same text in three batches (records 5, 45 and 130: batches 1, 2 and 4) and
        # once in another project, where it is new
        for i in (5, 45, 130):
            out[i] = Record(f"r{i}", twice, APP, AT, session="s-twice")
        out[77] = Record("r77", twice, None, AT, session="s-twice")
        out[60] = Record("r60", kept, APP, AT)
        out[99] = Record("r99", gone, APP, AT)
        out[120] = Record("r120", "", APP, AT, skip="unreadable in the source")
        return out

    ctx = _ctx(tmp_path)
    db = config.database_path(marm_home)
    try:
        before_id = write_memory(scoped(ctx, APP), kept).id
        retract(ctx, write_memory(scoped(ctx, APP), gone).id)
        before = _texts(db)
        also = _sessions_also(ctx, ["s0", "s-twice", "only-in-the-source"])
        dry = import_records(ctx, "test", source(), None, True, ["test"], also=also)
        after_dry = _texts(db)
        sessions_after_dry = {r[0] for r in ctx.store().conn.execute("SELECT name FROM sessions")}
        real = import_records(ctx, "test", source(), None, False, ["test"], also=also)
    finally:
        ctx.close()

    assert dry.dry_run and not real.dry_run
    assert dry.projects == real.projects
    app = real.projects[APP]
    assert app["added"] == {"decision": 1, "note": 150 - 3 - 1 - 1 - 1 - 1}
    assert app["skipped"] == {"already here": 2 + 1, "retracted here": 1, "unreadable in the source": 1}
    assert real.projects["(global)"]["added"] == {"decision": 1, "session": 1}  # only the source's own session is new
    # The dry run stored nothing: the store is what it was, the memory kept before the
    # import is there, none of the source's texts is, and no session of theirs was made.
    assert after_dry == before and before[(APP, kept)] == 1
    assert not any(c.startswith("batch fact") for _, c in after_dry)
    assert not sessions_after_dry & {"s0", "s1", "s2", "s-twice", "only-in-the-source"}
    texts = _texts(db)
    assert texts[(APP, twice)] == 1 and texts[(None, twice)] == 1
    assert [texts[(APP, f"batch fact {i}")] for i in range(150) if i not in (5, 45, 130, 77, 60, 99, 120)] \
        == [1] * 143
    assert texts[(APP, kept)] == 1 and texts[(APP, gone)] == 1  # neither came in a second time
    conn = sqlite3.connect(db)
    try:
        status = conn.execute("SELECT status FROM memories WHERE id = ?", (before_id,)).fetchone()[0]
    finally:
        conn.close()
    assert status == "active"


def test_past_sessions_back_to_back_pause_for_waiting_writers(tmp_path, marm_home, monkeypatch):
    """``--transcripts`` writes one transaction per session; once they have held the lock
    for ``BATCH_SECONDS`` it pauses ``BATCH_PAUSE`` before the next, as ``--from`` does
    between batches (with no time to spare: before every session but the first)."""
    import time

    from marm.importers.transcripts import backfill
    from tests.unit.test_import_transcripts import _claude

    home = Path(os.environ["HOME"])
    for n in range(5):
        _claude(home, tmp_path / f"repo{n}", session=f"c-{n}")
    monkeypatch.setattr(importers, "BATCH_SECONDS", 0.0)
    naps: list[float] = []
    monkeypatch.setattr(time, "sleep", naps.append)
    ctx = _ctx(tmp_path)
    try:
        done = backfill(ctx, [], None, False)
    finally:
        ctx.close()
    assert sum(t["sessions"] for t in done.projects.values()) == 5
    assert naps == [importers.BATCH_PAUSE] * 4


def _long_claude_session(home: Path, cwd: Path) -> Path:
    """One Claude Code session of three turns, the third asking and answering what the
    first did."""
    import json

    folder = home / ".claude" / "projects" / str(cwd).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    turns = [("Should the retry queue keep Redis?", "- We decided to move the retry queue to SQLite because Redis was a second store."),
             ("And the cache?", "- We decided to keep the cache in memory because it is small."),
             ("Should the retry queue keep Redis?", "- We decided to move the retry queue to SQLite because Redis was a second store.")]
    rows = []
    for n, (asked, answer) in enumerate(turns):
        rows += [{"type": "user", "sessionId": "long", "cwd": str(cwd), "timestamp": f"2025-03-01T10:0{n}:00.000Z",
                  "message": {"role": "user", "content": asked}},
                 {"type": "assistant", "sessionId": "long", "cwd": str(cwd),
                  "timestamp": f"2025-03-01T10:0{n}:30.000Z",
                  "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}}]
    path = folder / "long.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_a_long_past_session_is_written_in_several_transactions_and_counted_alike(
        tmp_path, marm_home, monkeypatch):
    """With no time to spare each turn of a session is its own transaction (a pause
    between them); a dry run, each rolled back, counts the repeated turn as the import
    does."""
    import time

    from marm.importers.transcripts import backfill
    from tests.helpers import git_init

    repo = git_init(tmp_path / "repo")
    _long_claude_session(Path(os.environ["HOME"]), repo)
    monkeypatch.setattr(importers, "BATCH_SECONDS", 0.0)
    naps: list[float] = []
    monkeypatch.setattr(time, "sleep", naps.append)
    ctx = _ctx(tmp_path)
    try:
        dry = backfill(ctx, [], None, True)
        dry_naps, naps[:] = list(naps), []
        after_dry = _texts(config.database_path(marm_home))
        real = backfill(ctx, [], None, False)
    finally:
        ctx.close()
    assert naps == dry_naps == [importers.BATCH_PAUSE] * 2  # three transactions each
    assert dry.projects == real.projects
    counts = real.projects[str(repo)]
    assert counts["turns"] == 3 and counts["added"] == {"episode": 2, "highlight": 2}
    assert counts["skipped"] == {"already here": 2}  # the repeated turn's episode and highlight
    assert after_dry == Counter()
    texts = _texts(config.database_path(marm_home))
    assert texts[(str(repo), "We decided to move the retry queue to SQLite because Redis was a second store.")] == 1
