"""Recall and drain speed: what a user waits for.

1. drain throughput: real embedding of short memories by ``marm drain`` pinned to one
   core (memories/s) and its peak RSS;
2. cold process: median wall time of a whole ``marm recall --mode hybrid`` process
   (interpreter, imports, model load, vector files, query), and of one right after a
   whole ``marm log`` of what it looks for;
3. in-process hybrid recall p50/p95 (model already loaded), and right after a write;
4. vector files cold load: a fresh process mapping the files and scanning them;
5. disk: marm.db, derived.db and the vector files, and bytes per memory.

Stores for 2-4 hold synthetic notes written through the store's insert path, with
random unit vectors tagged with the real model id and dimension: speed does not
depend on what the vectors say, and embedding 100k memories for real would take
a quarter of an hour. The query is embedded by the real model.

    python tests/bench/bench_recall.py --json [--sizes 10000,100000] [--keep DIR]
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
    """A store with ``n`` notes in project 'bench' and a random unit vector for each,
    written through the real write path (events, log rows, outbox) and the vector
    files' append path; the outbox is emptied afterwards (the vectors are there)."""
    import numpy as np

    os.environ["MARM_HOME"] = str(home)
    from marm import embed
    from marm.context import Ctx
    from marm.ops.memory import write_memory
    from marm.store import memories, vectors

    ctx = Ctx(source="import", cwd=home, env=dict(os.environ))
    store = ctx.store()
    rng = random.Random(seed)
    gen = np.random.default_rng(seed)
    model = embed.DEFAULT_MODEL
    for start in range(0, n, 1000):
        written = [write_memory(ctx, note(rng, i), project="bench", session=f"s{i // 50}").id
                   for i in range(start, min(n, start + 1000))]
        found = memories.get_many(store, written)
        batch = [found[i] for i in written]
        vecs = gen.standard_normal((len(batch), 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        with store.write():
            vectors.write(store, home, model, [
                vectors.Embedded(m.id, m.content_hash, [vectors.Chunk(0, 0, len(m.content))], vec[None, :])
                for m, vec in zip(batch, vecs, strict=True)])
            store.conn.execute("DELETE FROM outbox")
    ctx.close()


def disk(home: Path, n: int) -> dict[str, float]:
    """Bytes on disk: marm.db (with its WAL), derived.db, the vector files; per memory."""
    db = sum(p.stat().st_size for p in home.glob("marm.db*"))
    derived = sum(p.stat().st_size for p in home.glob("derived.db*"))
    vec = sum(p.stat().st_size for p in (home / "vectors").rglob("*.vec"))
    total = db + derived + vec
    return {"marm_db_mb": round(db / 1e6, 1), "derived_mb": round(derived / 1e6, 1),
            "vectors_mb": round(vec / 1e6, 1), "disk_mb": round(total / 1e6, 1),
            "bytes_per_memory": round(total / n)}


def drain_rate(n: int) -> tuple[float, float, float]:
    """Memories/s of a real embedding drain in a child process pinned to one core (per
    second of wall time, per second of its CPU time), and its peak RSS in MB."""
    with tempfile.TemporaryDirectory(prefix="marm-bench-drain-") as tmp:
        return _drain_rate(Path(tmp), n)


def _drain_rate(home: Path, n: int) -> tuple[float, float, float]:
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
import resource
embed.load(embed.settings(ctx.home, {{}}, os.environ))  # model load is not throughput
rng = random.Random(3)
for i in range({n}):
    write_memory(ctx, note(rng, i), project="bench")
t = time.perf_counter()
c = time.process_time()
s = drain.run(ctx, kinds=["embed"], sweeps=False)
wall, cpu = time.perf_counter() - t, time.process_time() - c
print(s.kinds["embed"].done / wall, s.kinds["embed"].done / cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    wall, cpu, rss = (float(x) for x in out.stdout.strip().splitlines()[-1].split())
    return wall, cpu, rss


def _child_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cold_recall(home: Path, runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds (user + system) of whole ``marm recall --mode hybrid`` processes:
    on a loaded machine the CPU time says what the process costs, the wall time what a
    user waits."""
    env = {**os.environ, "MARM_HOME": str(home)}
    walls, cpus = [], []
    for i in range(runs):
        c = _child_cpu()
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "marm", "recall", QUERIES[i % len(QUERIES)],
                              "--mode", "hybrid", "-p", "bench", "--json"],
                             capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
        walls.append(time.perf_counter() - t)
        cpus.append(_child_cpu() - c)
        if out.returncode != 0 or json.loads(out.stdout)["mode"] != "hybrid":
            raise SystemExit(f"cold recall failed: {out.stderr or out.stdout}")
    return walls, cpus


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
parts = vectors.load(store, Path({str(home)!r}), embed.DEFAULT_MODEL, 384, ["bench", None])
q = np.ones(384, dtype=np.float32)
n = sum(len(ids) for ids, m in parts); best = max(float((m @ q).max()) for ids, m in parts)
print(time.perf_counter() - t, n)
"""
    times = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(out.stdout.split()[0]))
    return statistics.median(times)


def log_then_recall(home: Path, runs: int) -> tuple[list[float], list[float], list[float], int]:
    """Whole ``marm log`` then whole ``marm recall --mode hybrid`` for what it wrote: wall
    times of each, and in how many runs the new memory came back first. The recall
    embeds the new memory on its way (its vector is appended to the project's file).
    Also the recalls' CPU seconds."""
    env = {**os.environ, "MARM_HOME": str(home)}
    logs, recalls, cpus, first = [], [], [], 0
    for i in range(runs):
        marker = f"quokka{i}zephyr{os.getpid()}"
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "marm", "log", f"NOTE: the {marker} gate guards the rollout",
                        "-p", "bench", "--json"], capture_output=True, env=env, check=True, cwd=tempfile.gettempdir())
        logs.append(time.perf_counter() - t)
        c = _child_cpu()
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "marm", "recall", f"{marker} rollout gate", "--mode", "hybrid",
                              "-p", "bench", "--json"], capture_output=True, text=True, env=env,
                             cwd=tempfile.gettempdir())
        recalls.append(time.perf_counter() - t)
        cpus.append(_child_cpu() - c)
        results = json.loads(out.stdout)["results"]
        first += bool(results) and marker in results[0]["content"]
    return logs, recalls, cpus, first


def in_process(home: Path, rounds: int) -> dict[str, float]:
    """p50 and p95 of in-process hybrid recall (model loaded), then p50 of a recall made
    right after a write of what it looks for, and in how many of 20 that came first;
    CPU medians of both (every thread of the process: the worker's scan too)."""
    os.environ["MARM_HOME"] = str(home)
    from marm import recall
    from marm.context import Ctx
    from marm.ops.memory import write_memory
    from marm.store.memories import Filter

    ctx = Ctx(source="cli", cwd=home, env=dict(os.environ))
    store = ctx.store()
    flt = Filter(project="bench")
    recall.run(store, "warm up the model", flt, 5, "hybrid")
    lat, cpu = [], []
    for i in range(rounds):
        c = time.process_time()
        t = time.perf_counter()
        out = recall.run(store, QUERIES[i % len(QUERIES)], flt, 5, "hybrid")
        lat.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        assert out.mode == "hybrid" and out.hits
    fresh, fresh_cpu, first = [], [], 0
    for i in range(20):
        marker = f"zeta{i}quartz{os.getpid()}"
        new = write_memory(ctx, f"NOTE: the {marker} flag guards the rollout", project="bench", session="fresh").id
        c = time.process_time()
        t = time.perf_counter()
        out = recall.run(store, f"{marker} rollout flag", flt, 5, "hybrid")
        fresh.append(time.perf_counter() - t)
        fresh_cpu.append(time.process_time() - c)
        first += bool(out.hits) and out.hits[0].memory.id == new
    ctx.close()
    lat.sort()
    return {"p50": statistics.median(lat), "p95": lat[max(0, int(len(lat) * 0.95) - 1)],
            "cpu": statistics.median(cpu), "fresh": statistics.median(fresh),
            "fresh_cpu": statistics.median(fresh_cpu), "fresh_first": first}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line (always printed)")
    parser.add_argument("--cold-runs", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--drain-memories", type=int, default=600, help="0: skip the drain measure")
    parser.add_argument("--sizes", default="10000,100000", help="store sizes, comma-separated")
    parser.add_argument("--keep", type=Path, default=None,
                        help="build each store once in DIR/<size> and reuse it on later runs")
    args = parser.parse_args()
    # Time marm as pip installs it: with byte-code compiled (an environment with
    # PYTHONDONTWRITEBYTECODE would otherwise recompile marm in every cold process).
    import compileall

    import marm as package

    compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

    results: dict[str, float] = {"load_before": round(os.getloadavg()[0], 2)}
    if args.drain_memories:
        rate, cpu_rate, rss = drain_rate(args.drain_memories)
        print(f"drain throughput: {rate:.0f} memories/s of wall time, {cpu_rate:.0f} per CPU second"
              f" (one core, {args.drain_memories} short notes); peak RSS {rss:.0f} MB")
        results.update(drain_memories_per_s=round(rate, 1), drain_memories_per_cpu_s=round(cpu_rate, 1),
                       drain_peak_rss_mb=round(rss))
    for n in (int(x) for x in args.sizes.split(",")):
        if args.keep is not None:
            results.update(measure(args.keep / str(n), n, args))
        else:
            with tempfile.TemporaryDirectory(prefix=f"marm-bench-{n}-") as tmp:
                results.update(measure(Path(tmp), n, args))
    results["load_after"] = round(os.getloadavg()[0], 2)
    print(f"\nload average (1 min): {results['load_before']} before, {results['load_after']} after")
    print("targets: cold hybrid recall <= 0.35 s at 10k, <= 0.40 s at 100k; recall right after"
          " `marm log` <= 0.5 s at 100k; drain >= 300 memories/s, peak RSS <= 400 MB; disk <= 300 MB at 100k")
    print(json.dumps(results))
    return 0


def measure(home: Path, n: int, args: argparse.Namespace) -> dict[str, float]:
    """Figures for one store size (built in ``home`` unless it is there already)."""
    results: dict[str, float] = {}
    k = f"{n // 1000}k"
    if not (home / "marm.db").exists():
        home.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        build(home, n)
        print(f"\n{n:,} memories: built in {time.perf_counter() - t:.0f}s")
    else:
        print(f"\n{n:,} memories: reusing {home}")
    load = matrix_load(home, 5)
    print(f"  vector files cold map + scan (fresh process): {load * 1000:.1f} ms median")
    results[f"matrix_load_ms_{k}"] = round(load * 1000, 1)
    cold_recall(home, 1)  # the first process of a home checks the model file once: not a cold start
    walls, cpus = cold_recall(home, args.cold_runs)
    med = statistics.median(walls)
    print(f"  cold `marm recall --mode hybrid`: median {med:.3f}s over {len(walls)} runs "
          f"(min {min(walls):.3f}s, max {max(walls):.3f}s); CPU median {statistics.median(cpus):.3f}s")
    results[f"cold_recall_s_{k}"] = round(med, 3)
    results[f"cold_recall_cpu_s_{k}"] = round(statistics.median(cpus), 3)
    logs, recalls, cpus, first = log_then_recall(home, args.cold_runs)
    print(f"  `marm log` then `marm recall --mode hybrid` of it: log median {statistics.median(logs):.3f}s,"
          f" recall median {statistics.median(recalls):.3f}s (CPU {statistics.median(cpus):.3f}s);"
          f" the new memory first in {first}/{len(recalls)}")
    results[f"log_s_{k}"] = round(statistics.median(logs), 3)
    results[f"recall_after_log_s_{k}"] = round(statistics.median(recalls), 3)
    results[f"recall_after_log_cpu_s_{k}"] = round(statistics.median(cpus), 3)
    results[f"recall_after_log_first_{k}"] = first
    r = in_process(home, args.rounds)
    print(f"  in-process hybrid recall: p50 {r['p50'] * 1000:.1f} ms, p95 {r['p95'] * 1000:.1f} ms"
          f" (CPU {r['cpu'] * 1000:.1f} ms) over {args.rounds} queries; right after a write: p50"
          f" {r['fresh'] * 1000:.1f} ms (CPU {r['fresh_cpu'] * 1000:.1f} ms), the new memory first in"
          f" {r['fresh_first']}/20")
    results.update({f"p50_ms_{k}": round(r["p50"] * 1000, 2), f"p95_ms_{k}": round(r["p95"] * 1000, 2),
                    f"cpu_p50_ms_{k}": round(r["cpu"] * 1000, 2), f"fresh_p50_ms_{k}": round(r["fresh"] * 1000, 2),
                    f"fresh_cpu_p50_ms_{k}": round(r["fresh_cpu"] * 1000, 2), f"fresh_first_{k}": r["fresh_first"]})
    space = disk(home, n)
    print(f"  disk: marm.db {space['marm_db_mb']} MB, derived.db {space['derived_mb']} MB, vectors"
          f" {space['vectors_mb']} MB: {space['disk_mb']} MB, {space['bytes_per_memory']} bytes per memory")
    results.update({f"{key}_{k}": v for key, v in space.items()})
    return results


if __name__ == "__main__":
    sys.exit(main())
