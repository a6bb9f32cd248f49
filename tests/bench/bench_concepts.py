"""Concept extraction benchmark: throughput, edges per memory, concept recall wall time.

    python tests/bench/bench_concepts.py [--data PATH] [--repeat 3] [--json]

- extraction throughput on one core (the process pins itself to one CPU), medians over
  ``--repeat`` runs, over the LoCoMo dev turns and a set of developer notes; the spaCy
  extractor and the rule-based fallback. Wall-clock rates are the figure; rates per CPU
  second are printed beside them because on a shared machine they differ;
- the ``concepts`` drain end to end (store reads, extraction, derived-db writes);
- edges and entities per memory (mean, p95, max);
- ``marm concepts recall`` whole-process wall time (a fresh ``python -m marm`` each time);
- where the MARM peer is installed (``../shared/peer``, ``$PEER``), its extractor over the
  same texts in the same run, as ratios.

Targets: >= 200 memories/s, mean edges per memory <= 6, recall <= 0.3 s.
The data is read where it lies (never copied); without it the LoCoMo part is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DEV_NOTES = [
    "Fixed the WAL lock contention by moving writes to one queue worker in write_queue.py",
    "this change causes a deadlock when two drains start at once",
    "DECISION: use SQLite FTS5 with the porter tokenizer for the words lane; trigram for exact.",
    "The indexer depends on the task queue and uses SQLite WAL mode.",
    "Replaced the Redis cache with an in-process LRU in cache.py; Redis was overkill for one user.",
    "Bug: marm recall --as-of ignores valid_to when the memory was superseded. Fixed in memories.py.",
    "The hook runner spawns a detached drain with start_new_session so the agent never waits.",
    "MARM_HOME overrides the data directory; tests set it per test in conftest.py.",
    "Alice reviewed the migration plan and asked us to keep m001 frozen.",
    "The embed drain needs fastembed and the MiniLM model; it parks a task after three failures.",
    "Switched the CLI from argparse to Typer 0.28 because the registry generates commands.",
    "A race between claim() and complete() lost tasks; the lease token check prevents it.",
    "The code graph resolves calls import-first, then falls back to name-only edges.",
    "ruff complained about B008 in typer defaults, so we ignore B008 in pyproject.toml.",
    "The session-start hook injects recent decisions, fenced as retrieved data.",
    "Bob found a memory leak in the MCP server when clients disconnect mid-call.",
    "We decided to keep derived.db disposable: verdicts live in marm.db keyed on names.",
    "TreeSitterIndexer.parse_file() replaces the regex scanner for Python and Go.",
    "The exporter writes parquet files to the blob store every night via cron.",
    "Timeouts in the search service were caused by the rate limiter's token bucket.",
    "The --max-seconds flag bounds a drain; cron runs it every ten minutes.",
    "Upgraded spaCy to 3.8 and pinned en_core_web_sm 3.8.0; the parser got faster.",
    "The billing worker relies on the ledger table and the retry policy.",
    "Context injection stays under 2000 characters (inject.max_chars).",
    "Carol prefers rich output for people and orjson for scripts.",
    "Regression: concept merge dropped edges whose source and target were the same entity.",
    "The auth gateway calls verify_token() before every request to the API.",
    "A corrupted FTS index made recall return nothing; doctor now runs integrity-check.",
    "The scheduler uses APScheduler; we will move to cron to drop the daemon.",
    "WriteQueue.flush() commits every 50 ms or 100 rows, whichever comes first.",
    "Deleting a session removes its memories and re-arms their concept tasks.",
    "The uploader retries S3 PUTs with exponential backoff capped at 30 seconds.",
    "Memory 42 was retracted: the claim about Postgres advisory locks was wrong.",
    "Dan implemented the hybrid lane: BM25 plus vectors with a weighted blend.",
    "The MCP server imports mcp only inside marm mcp, keeping marm --help fast.",
    "Kubernetes liveness probes killed the worker during long migrations.",
    "The report builder extends BaseReport and overrides render().",
    "Pinned tree-sitter 0.26.1; tree-sitter-language-pack downloads grammars at run time.",
    "Feature flag new_recall gates the hybrid lane until the benchmark passes.",
    "The lock manager was replaced by the write queue in March.",
]
QUERIES = ["write queue", "what depends on the task queue?", "deadlock", "Caroline", "spaCy"]


def pin_one_core() -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def locomo_turns(path: Path) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for conv in data:
        c = conv["conversation"]
        for key in sorted(
            (k for k in c if k.startswith("session_") and isinstance(c[k], list)),
            key=lambda k: int(k.split("_")[1]),
        ):
            out += [f"{t['speaker']}: {t['text']}" for t in c[key] if t.get("text")]
    return out


def stats(values: list[int]) -> dict:
    ordered = sorted(values)
    return {
        "mean": round(statistics.fmean(values), 2) if values else 0.0,
        "p95": ordered[int(0.95 * (len(ordered) - 1))] if values else 0,
        "max": max(values) if values else 0,
    }


def measure(extractor, texts: list[str], repeat: int) -> dict:
    from marm.concepts.model import finish

    list(extractor.extract(texts[:50]))  # warm
    rates, cpu_rates, results = [], [], []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        results = [finish(raw, lambda k: k) for raw in extractor.extract(texts)]
        rates.append(len(texts) / (time.perf_counter() - started))
        cpu_rates.append(len(texts) / (time.process_time() - cpu))
    return {
        "memories": len(texts),
        "per_second": round(statistics.median(rates), 1),
        "per_cpu_second": round(statistics.median(cpu_rates), 1),
        "edges": stats([len(r.relations) for r in results]),
        "typed_edges": stats(
            [sum(x.predicate != "related_to" for x in r.relations) for r in results]
        ),
        "entities": stats([len(r.mentions) for r in results]),
    }


def drain_end_to_end(texts: list[str]) -> dict:
    """Write the texts as memories into a scratch store and time ``marm drain`` on them.
    The store is left for the recall step; the caller removes it (``home``)."""
    from marm import drain as drain_engine
    from marm.context import Ctx
    from marm.ops.memory import write_memory

    home = Path(tempfile.mkdtemp(prefix="marm-bench-concepts-"))
    work = home / "work"
    work.mkdir()
    ctx = Ctx(source="import", cwd=work, env={**os.environ, "MARM_HOME": str(home)})
    for text in texts:
        write_memory(ctx, text)
    started, cpu = time.perf_counter(), time.process_time()
    summary = drain_engine.run(ctx, kinds=["concepts"], sweeps=False, max_seconds=3600)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    ctx.close()
    done = summary.kinds["concepts"].done
    return {
        "home": home,
        "memories": done,
        "seconds": round(seconds, 2),
        "per_second": round(done / seconds, 1),
        "per_cpu_second": round(done / cpu, 1),
    }


def recall_wall(home: Path, runs: int) -> dict:
    env = {**os.environ, "MARM_HOME": str(home)}
    walls: list[float] = []
    found = 0
    for query in QUERIES:
        for _ in range(runs):
            started = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "marm", "concepts", "recall", query, "--json"],
                cwd=home / "work",
                env=env,
                capture_output=True,
                check=True,
            )
            walls.append(time.perf_counter() - started)
        found += bool(json.loads(proc.stdout)["entities"])
    return {
        "median_s": round(statistics.median(walls), 3),
        "max_s": round(max(walls), 3),
        "queries": len(QUERIES),
        "queries_with_entities": found,
    }


def peer(texts: list[str]) -> dict | None:
    """The MARM peer's own extractor over the same texts, in its own venv, one core."""
    shared = ROOT.parent / "shared" / "peer"
    if not (shared / "driver.py").exists():
        return None
    sys.path.insert(0, str(shared))
    import driver  # noqa: PLC0415 - the peer's setup convention (PEER, its environment)

    python = Path(driver.PEER) / "venv" / "bin" / "python"
    if not python.exists():
        return None
    code = (
        "import json, os, sys, time\n"
        "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "from marm_mcp_server.core import concept_extraction as ce\n"
        "texts = json.load(open(sys.argv[1]))\n"
        "ce.extract_entities(texts[0])\n"
        "t = time.perf_counter(); edges = [len(ce.extract_entities(x).relationship_pairs) for x in texts]\n"
        "print(json.dumps({'seconds': time.perf_counter() - t, 'edges': edges}))\n"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(texts, f)
    try:
        proc = subprocess.run(
            [str(python), "-c", code, f.name],
            env=driver.peer_env(),
            capture_output=True,
            text=True,
            timeout=1800,
        )
    finally:
        os.unlink(f.name)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "memories": len(texts),
        "per_second": round(len(texts) / out["seconds"], 1),
        "edges": stats(out["edges"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=ROOT / ".." / "shared" / "data" / "locomo-dev.json"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--recall-runs", type=int, default=5)
    parser.add_argument(
        "--peer-sample",
        type=int,
        default=600,
        help="texts the (slower) peer extracts: the first N LoCoMo turns + the notes",
    )
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument(
        "--json", action="store_true", help="end with one JSON line (always printed)"
    )
    args = parser.parse_args()
    pin_one_core()

    from marm.concepts import indexer
    from marm.concepts.rules import RuleExtractor

    turns = locomo_turns(args.data) if args.data.exists() else []
    if not turns:
        print(f"LoCoMo data not found at {args.data}: measuring the developer notes only")
    started = time.perf_counter()
    spacy_x = indexer.extractor()
    load_s = time.perf_counter() - started
    result: dict = {
        "extractor": spacy_x.name,
        "model": spacy_x.model,
        "load_s": round(load_s, 2),
        "cpus": 1,
    }
    print(f"extractor {spacy_x.name} ({spacy_x.model}), loaded in {load_s:.2f}s, one core")
    corpora = {"locomo": turns, "dev_notes": DEV_NOTES} if turns else {"dev_notes": DEV_NOTES}
    for name, texts in corpora.items():
        for label, x in (("spacy", spacy_x), ("rules", RuleExtractor())):
            m = measure(x, texts, args.repeat)
            result[f"{name}_{label}"] = m
            print(
                f"{name:<9} {label:<5} {m['memories']:>5} memories  {m['per_second']:>7.1f}/s wall"
                f"  {m['per_cpu_second']:>7.1f}/cpu-s  "
                f"edges mean {m['edges']['mean']} p95 {m['edges']['p95']} max {m['edges']['max']}  "
                f"(typed mean {m['typed_edges']['mean']})  entities mean {m['entities']['mean']}"
            )
    every = turns + DEV_NOTES
    drained = drain_end_to_end(every)
    home = drained.pop("home")
    result["drain"] = drained
    print(
        f"drain     {drained['memories']} memories in {drained['seconds']}s "
        f"= {drained['per_second']}/s wall, {drained['per_cpu_second']}/cpu-s "
        f"(store + extraction + graph writes)"
    )
    try:
        wall = recall_wall(home, args.recall_runs)
    finally:
        shutil.rmtree(home, ignore_errors=True)  # 100k-scale scratch stores are large
    result["recall"] = wall
    print(
        f"recall    whole process median {wall['median_s']}s, max {wall['max_s']}s "
        f"({wall['queries_with_entities']}/{wall['queries']} queries found entities)"
    )
    if not args.no_peer:
        sample = turns[: args.peer_sample] + DEV_NOTES
        p = peer(sample)
        if p and "error" not in p:
            ours = measure(spacy_x, sample, 1)
            p["throughput_ratio"] = round(ours["per_second"] / p["per_second"], 2)
            p["edges_mean_ratio"] = round(ours["edges"]["mean"] / max(p["edges"]["mean"], 1e-9), 3)
            print(
                f"peer      MARM extractor on {p['memories']} texts: {p['per_second']}/s, edges mean "
                f"{p['edges']['mean']} max {p['edges']['max']}; marm/peer throughput x"
                f"{p['throughput_ratio']}, edges x{p['edges_mean_ratio']}"
            )
        elif p:
            print(f"peer      failed: {p['error']}")
        result["peer"] = p
    rates = [result[f"{k}_spacy"]["per_second"] for k in corpora]
    edges_mean = max(result[f"{k}_spacy"]["edges"]["mean"] for k in corpora)
    result["targets"] = {
        "throughput_ok": min(rates) >= 200,
        "edges_mean_ok": edges_mean <= 6,
        "recall_ok": wall["median_s"] <= 0.3,
    }
    print("targets   " + ", ".join(f"{k}={v}" for k, v in result["targets"].items()))
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
