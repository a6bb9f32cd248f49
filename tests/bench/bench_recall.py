"""Recall and drain speed: what a user waits for.

1. drain throughput: real embedding of short memories by ``marm drain`` pinned to one
   core (memories/s);
2. cold process: median wall time of a whole ``marm recall --mode hybrid`` process at
   10k memories (interpreter, imports, model load, matrix file, query);
3. in-process hybrid recall p50/p95 at 10k and 100k memories (model already loaded);
4. matrix cold load: a fresh process memory-mapping and verifying the vector file.

Stores for 2-4 hold synthetic notes written through the store's insert path, with
random unit vectors tagged with the real model id and dimension: speed does not
depend on what the vectors say, and embedding 100k memories for real would take
a quarter of an hour. The query is embedded by the real model.

    python tests/bench/bench_recall.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

WORDS = {
    "kind": ["DECISION", "FIX", "NOTE", "TODO", "LESSON"],
    "subject": ["the payment webhook", "the auth middleware", "the search index", "the CI cache",
                "the docker image", "the session store", "the rate limiter", "the cron job",
                "the websocket gateway", "the feature flags", "the billing report", "the S3 uploader",
                "the retry queue", "the migration runner", "the log shipper", "the GraphQL schema"],
    "verb": ["now uses", "stopped using", "was moved to", "depends on", "times out behind",
             "was rewritten around", "is cached in", "fails without"],
    "object": ["redis", "postgres advisory locks", "a token bucket", "idempotency keys", "sqlite WAL",
               "a sidecar proxy", "exponential backoff", "a read replica", "protobuf", "a bloom filter",
               "the new SDK", "structured logging", "a circuit breaker", "UTC timestamps"],
    "reason": ["latency spikes", "a flaky test", "duplicate charges", "memory pressure",
               "a customer report", "the audit", "cold starts", "lock contention", "a security review"],
}
QUERIES = ["why did we move the payment webhook off redis", "how do we avoid duplicate charges",
           "what fixed the flaky test in CI", "rate limiter design", "what did the security review change",
           "session store latency", "how are retries handled", "which service uses protobuf",
           "cold start problems", "log shipping setup"]


def note(rng: random.Random, i: int) -> str:
    w = {k: rng.choice(v) for k, v in WORDS.items()}
    return f"{w['kind']}: {w['subject']} {w['verb']} {w['object']} because of {w['reason']} (#{i})"


def build(home: Path, n: int, seed: int = 7) -> None:
    """A store with ``n`` notes in project 'bench' and a random unit vector for each."""
    import numpy as np

    os.environ["MARM_HOME"] = str(home)
    from marm import embed
    from marm.store import Store, memories, vectors
    from marm.text import content_hash

    store = Store.open(home / "marm.db")
    rng = random.Random(seed)
    gen = np.random.default_rng(seed)
    model = embed.DEFAULT_MODEL
    for start in range(0, n, 5000):
        batch = [note(rng, i) for i in range(start, min(n, start + 5000))]
        vecs = gen.standard_normal((len(batch), 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        with store.write():
            for text, vec in zip(batch, vecs, strict=False):
                m = memories.insert(store, content=text, content_hash=content_hash(text), kind="note",
                                    session=f"s{start // 50}", project="bench")
                vectors.replace(store, m.id, model, m.content_hash, [vectors.Chunk(0, 0, len(text))],
                                vec[None, :])
        store.conn.execute("DELETE FROM outbox")
    vectors.rebuild(store, home, model, "bench")
    vectors.rebuild(store, home, model, None)
    store.close()


def drain_rate(n: int) -> float:
    """Memories/s of a real embedding drain, in a child process pinned to one core."""
    with tempfile.TemporaryDirectory(prefix="marm-bench-drain-") as tmp:
        return _drain_rate(Path(tmp), n)


def _drain_rate(home: Path, n: int) -> float:
    code = f"""
import os, sys, time, random
sys.path.insert(0, {str(ROOT)!r})
os.sched_setaffinity(0, {{sorted(os.sched_getaffinity(0))[0]}})
os.environ["MARM_HOME"] = {str(home)!r}
from marm.context import Ctx
from marm.ops.memory import write_memory
from marm import drain, embed
from tests.bench.bench_recall import note
ctx = Ctx(source="import", env=dict(os.environ))
embed.load(embed.settings(ctx.home, {{}}, os.environ))  # model load is not throughput
rng = random.Random(3)
for i in range({n}):
    write_memory(ctx, note(rng, i), project="bench")
t = time.perf_counter()
s = drain.run(ctx, kinds=["embed"], sweeps=False)
print(s.kinds["embed"].done / (time.perf_counter() - t))
"""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def cold_recall(home: Path, runs: int) -> list[float]:
    env = {**os.environ, "MARM_HOME": str(home)}
    walls = []
    for i in range(runs):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "marm", "recall", QUERIES[i % len(QUERIES)],
                              "--mode", "hybrid", "-p", "bench", "--json"],
                             capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
        walls.append(time.perf_counter() - t)
        if out.returncode != 0 or json.loads(out.stdout)["mode"] != "hybrid":
            raise SystemExit(f"cold recall failed: {out.stderr or out.stdout}")
    return walls


def matrix_load(home: Path, runs: int) -> float:
    """Median seconds for a fresh process to memory-map, verify and scan the matrix file."""
    code = f"""
import os, sys, time
sys.path.insert(0, {str(ROOT)!r})
os.environ["MARM_HOME"] = {str(home)!r}
from pathlib import Path
import numpy as np
from marm.store import Store, vectors
from marm import embed
store = Store.open(Path({str(home / "marm.db")!r}))
t = time.perf_counter()
parts = vectors.load(store, Path({str(home)!r}), embed.DEFAULT_MODEL, 384, "bench")
q = np.ones(384, dtype=np.float32)
n = sum(len(ids) for ids, m in parts); best = max(float((m @ q).max()) for ids, m in parts)
print(time.perf_counter() - t, n)
"""
    times = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(out.stdout.split()[0]))
    return statistics.median(times)


def in_process(home: Path, rounds: int) -> tuple[float, float]:
    os.environ["MARM_HOME"] = str(home)
    from marm import recall
    from marm.store import Store
    from marm.store.memories import Filter

    store = Store.open(home / "marm.db")
    flt = Filter(project="bench")
    recall.run(store, "warm up the model", flt, 5, "hybrid")
    lat = []
    for i in range(rounds):
        t = time.perf_counter()
        out = recall.run(store, QUERIES[i % len(QUERIES)], flt, 5, "hybrid")
        lat.append(time.perf_counter() - t)
        assert out.mode == "hybrid" and out.hits
    store.close()
    lat.sort()
    return statistics.median(lat), lat[max(0, int(len(lat) * 0.95) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line (always printed)")
    parser.add_argument("--cold-runs", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--drain-memories", type=int, default=600)
    args = parser.parse_args()

    rate = drain_rate(args.drain_memories)
    print(f"drain throughput: {rate:.0f} memories/s (one core, {args.drain_memories} short notes)")

    results: dict[str, float] = {"drain_memories_per_s": round(rate, 1)}
    for n in (10_000, 100_000):
        with tempfile.TemporaryDirectory(prefix=f"marm-bench-{n}-") as tmp:
            results.update(measure(Path(tmp), n, args))
    print("\ntargets: cold <= 1.0 s; p50 <= 15 ms at 10k, <= 60 ms at 100k; drain >= 80 memories/s")
    print(json.dumps(results))
    return 0


def measure(home: Path, n: int, args: argparse.Namespace) -> dict[str, float]:
    """Figures for one store size (the store is built in ``home`` and left to the caller)."""
    results: dict[str, float] = {}
    t = time.perf_counter()
    build(home, n)
    print(f"\n{n:,} memories: built in {time.perf_counter() - t:.0f}s")
    load = matrix_load(home, 5)
    print(f"  matrix file cold load + scan (fresh process): {load * 1000:.1f} ms median")
    results[f"matrix_load_ms_{n // 1000}k"] = round(load * 1000, 1)
    if n == 10_000:
        walls = cold_recall(home, args.cold_runs)
        med = statistics.median(walls)
        print(f"  cold `marm recall --mode hybrid`: median {med:.2f}s over {len(walls)} runs "
              f"(min {min(walls):.2f}s, max {max(walls):.2f}s)")
        results["cold_recall_s_10k"] = round(med, 3)
    p50, p95 = in_process(home, args.rounds)
    print(f"  in-process hybrid recall: p50 {p50 * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms "
          f"over {args.rounds} queries")
    results[f"p50_ms_{n // 1000}k"] = round(p50 * 1000, 2)
    results[f"p95_ms_{n // 1000}k"] = round(p95 * 1000, 2)
    return results


if __name__ == "__main__":
    sys.exit(main())
