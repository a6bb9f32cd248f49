"""What the sync tests share: several stores on one remote, and scans of every byte."""

from __future__ import annotations

import os
from pathlib import Path

from marm.ops import sync as sync_ops
from marm.context import Ctx
from marm.ops.memory import write_memory
from marm.store import memories
from marm.store.memories import Filter

PROJECT = "team-api"


class Stores:
    """N stores sharing the project ``team-api`` through one remote."""

    def __init__(self, root: Path, url: str, n: int) -> None:
        self.url = url
        self.homes = [root / f"store{i}" for i in range(n)]
        self.ctxs: list[Ctx] = []
        for home in self.homes:
            work = home.parent / f"{home.name}-work"
            work.mkdir(parents=True, exist_ok=True)
            env = {**os.environ, "MARM_HOME": str(home), "MARM_PROJECT": PROJECT}
            ctx = Ctx(source="cli", cwd=work, env=env)
            sync_ops.remote_add(ctx, "team", url)
            sync_ops.share(ctx, name=PROJECT)
            self.ctxs.append(ctx)

    def env(self, i: int) -> dict[str, str]:
        return {"MARM_HOME": str(self.homes[i]), "MARM_PROJECT": PROJECT}

    def log(self, i: int, text: str) -> int:
        return write_memory(self.ctxs[i], text).id

    def sync(self, i: int) -> dict:
        return sync_ops.sync(self.ctxs[i], "team").remotes[0]

    def id_of(self, i: int, text: str) -> int:
        store = self.ctxs[i].store()
        found = [m for m in memories.recent(store, Filter(project=PROJECT, statuses=()), limit=100_000)
                 if m.content == text]
        assert len(found) == 1, (i, text, found)
        return found[0].id

    def state(self, i: int) -> dict:
        """What must be the same in every store: each memory of the project by its text
        (status, kind, validity, what supersedes it), tombstones and concept verdicts.
        Not ``recorded_at``: a text two stores wrote independently is one memory, and each
        keeps the time it learned it (``recorded_times`` checks the others)."""
        store = self.ctxs[i].store()
        rows = memories.recent(store, Filter(project=PROJECT, statuses=()), limit=100_000)
        by_id = {m.id: m.content for m in rows}
        conn = store.conn
        return {
            "memories": sorted((m.content, m.status, m.kind, m.valid_to,
                                by_id.get(m.superseded_by) if m.superseded_by else None) for m in rows),
            "tombstones": sorted(conn.execute("SELECT content_hash, scope FROM tombstones").fetchall()),
            "aliases": sorted(conn.execute("SELECT alias, canonical FROM concept_aliases").fetchall()),
            "suppressed": sorted(conn.execute("SELECT name FROM concept_suppressions").fetchall()),
            "dismissed": sorted(conn.execute("SELECT a, b FROM concept_dismissals").fetchall()),
        }

    def recorded_times(self, i: int) -> dict[str, str]:
        store = self.ctxs[i].store()
        return {m.content: m.recorded_at
                for m in memories.recent(store, Filter(project=PROJECT, statuses=()), limit=100_000)}

    def close(self) -> None:
        for c in self.ctxs:
            c.close()


def server_text(url: str) -> str:
    """Every byte the remote holds, as text: every row of the PostgreSQL database's
    marm tables, or every file of the directory."""
    if url.startswith("dir:"):
        root = Path(url[4:])
        return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in sorted(root.rglob("*")) if p.is_file())
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT t::text FROM marm_events t").fetchall()
    return "\n".join(r[0] for r in rows)


def store_bytes(home: Path) -> bytes:
    """Every file of a store's home (database, WAL, locks...)."""
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())
