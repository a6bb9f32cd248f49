"""Benchmark: `marm sync` through a local PostgreSQL server.

    python tests/bench/bench_sync.py [--n 100000] [--pg URL] [--repeat 5] [--stores 10] [--each 50]

- push and pull of N memories (memories/s each way), in-process: one store imports N
  memories into a shared project and pushes them; a second, empty store pulls them
  (each pulled memory is inserted with its log of events and its embed/concepts tasks);
- an incremental sync with 10 new events, as a whole `marm sync` process (start-up,
  connection, push, pull), on the pushing store and on the pulling one (median);
- STORES stores, EACH new memories apiece, syncing one project concurrently (every
  store runs `marm sync` at once, in rounds, until every store has every memory): time
  to converge.

The server: ``--pg`` or ``MARM_TEST_PG``; without either, a throwaway cluster is started
with ``.ci/postgres-start`` and stopped at the end. Each run uses a fresh database.
Prints readable figures, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import orjson

from marm.ops import sync as sync_ops
from marm.ops.context import Ctx
from marm.ops.memory import write_memory
from marm.ops.transfer import import_
from marm.sync import engine
from marm.text import content_hash

REPO = Path(__file__).resolve().parents[2]
PROJECT = "bench-team"


def ctx_for(home: Path) -> Ctx:
    home.mkdir(parents=True, exist_ok=True)
    return Ctx(source="cli", cwd=home, env={**os.environ, "MARM_HOME": str(home), "MARM_PROJECT": PROJECT})


def join(url: str, remote: str, home: Path) -> Ctx:
    c = ctx_for(home)
    sync_ops.remote_add(c, "team", remote)
    sync_ops.share(c, name=PROJECT)
    return c


def bulk_import(c: Ctx, n: int, tmp: Path) -> None:
    path = tmp / "bulk.jsonl"
    with open(path, "wb") as fh:
        fh.write(orjson.dumps({"type": "marm-export", "version": 1}) + b"\n")
        for k in range(1, n + 1):
            text = f"NOTE: bulk fact {k} about the deployment pipeline and the {k % 97} service"
            fh.write(orjson.dumps({
                "type": "memory", "id": k, "content": text, "content_hash": content_hash(text), "kind": "note",
                "session": "bench", "project": PROJECT, "platform": None, "source": "cli",
                "recorded_at": f"2026-01-01T00:00:00.{k:06d}Z", "valid_from": None, "valid_to": None,
                "status": "active", "status_reason": None, "superseded_by": None, "metadata": {}}) + b"\n")
    import_(c, str(path))


def marm_sync(home: Path) -> float:
    env = {**os.environ, "MARM_HOME": str(home), "MARM_PROJECT": PROJECT}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "marm", "sync", "team"], env=env, capture_output=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.decode())
    return took


def count(home: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(home / "marm.db")
    try:
        return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    finally:
        conn.close()


def fresh_db(base: str) -> tuple[str, str]:
    import psycopg

    name = "bench_" + secrets.token_hex(4)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return urlunsplit(urlsplit(base)._replace(path="/" + name)), name


def drop_db(base: str, name: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def run(base: str, n: int, repeat: int, stores: int, each: int) -> dict:
    out: dict = {"n": n}
    with tempfile.TemporaryDirectory(prefix="marm-bench-sync-") as tmp_name:
        tmp = Path(tmp_name)
        url, db = fresh_db(base)
        try:
            a = join(url, url, tmp / "a")
            bulk_import(a, n, tmp)
            store_a = a.store()
            t = engine.open_transport(url)
            start = time.perf_counter()
            pushed, _ = engine.push(store_a, "team", t)
            push_s = time.perf_counter() - start
            assert pushed == n, pushed
            b = join(url, url, tmp / "b")
            start = time.perf_counter()
            pulled, applied = engine.pull(b.store(), "team", t)
            pull_s = time.perf_counter() - start
            assert applied.get("created") == n, applied
            t.close()
            out["push_per_s"] = round(n / push_s)
            out["pull_per_s"] = round(n / pull_s)
            out["push_s"], out["pull_s"] = round(push_s, 2), round(pull_s, 2)
            print(f"push {n} memories: {push_s:.2f}s ({out['push_per_s']}/s)")
            print(f"pull {n} memories: {pull_s:.2f}s ({out['pull_per_s']}/s)")
            engine.pull(store_a, "team", engine.open_transport(url))  # a is current too
            a.close()
            b.close()

            pushing, pulling = [], []
            for r in range(repeat):
                a = ctx_for(tmp / "a")
                for k in range(10):
                    write_memory(a, f"NOTE: incremental fact {r}-{k} for the sync benchmark")
                a.close()
                pushing.append(marm_sync(tmp / "a"))
                pulling.append(marm_sync(tmp / "b"))
            assert count(tmp / "b") == n + 10 * repeat
            out["incremental_push_process_s"] = round(statistics.median(pushing), 3)
            out["incremental_pull_process_s"] = round(statistics.median(pulling), 3)
            print(f"incremental sync, 10 new events, whole `marm sync` process (median of {repeat}): "
                  f"pushing store {out['incremental_push_process_s']}s, pulling store "
                  f"{out['incremental_pull_process_s']}s")
        finally:
            drop_db(base, db)

        url, db = fresh_db(base)
        try:
            homes = [tmp / f"c{i}" for i in range(stores)]
            for i, home in enumerate(homes):
                c = join(url, url, home)
                for k in range(each):
                    write_memory(c, f"NOTE: store {i} fact {k} for the concurrent benchmark")
                c.close()
            start = time.perf_counter()
            rounds = 0
            while True:
                rounds += 1
                env = [{**os.environ, "MARM_HOME": str(h), "MARM_PROJECT": PROJECT} for h in homes]
                procs = [subprocess.Popen([sys.executable, "-m", "marm", "sync", "team"], env=e,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for e in env]
                for p in procs:
                    _, err = p.communicate()
                    if p.returncode != 0:
                        raise SystemExit(err.decode())
                if all(count(h) == stores * each for h in homes):
                    break
            took = time.perf_counter() - start
            out["concurrent_stores"], out["concurrent_each"] = stores, each
            out["concurrent_converge_s"], out["concurrent_rounds"] = round(took, 2), rounds
            print(f"{stores} stores x {each} new memories syncing at once: converged in {took:.2f}s "
                  f"({rounds} rounds of {stores} concurrent `marm sync` processes)")
        finally:
            drop_db(base, db)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--pg", default=os.environ.get("MARM_TEST_PG"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--stores", type=int, default=10)
    ap.add_argument("--each", type=int, default=50)
    args = ap.parse_args()
    started = False
    base = args.pg
    if not base:
        subprocess.run([str(REPO / ".ci" / "postgres-start")], check=True)
        base, started = (REPO / ".ci" / ".pg-url").read_text().strip(), True
    try:
        result = run(base, args.n, args.repeat, args.stores, args.each)
    finally:
        if started:
            subprocess.run([str(REPO / ".ci" / "postgres-stop")], check=False)
    print(json.dumps({"bench": "sync", **result}))


if __name__ == "__main__":
    main()
