"""Whole-process wall time of the CLI's everyday commands at 1k / 10k (/ 100k) memories.

    python tests/bench/bench_cli.py [--json] [--large] [--runs 7]

For each store size it fills a fresh MARM_HOME in process (through the same write path
the CLI takes), then times `marm --help`, `marm log`, `marm recall --mode lexical` and
`marm recall --mode exact` as separate processes and reports the median of the runs.
If the MARM peer is installed (PEER, default /tmp/marm-peer), `marm-memory --help`
is timed in the same runs, interleaved with `marm --help` run by run, and the ratio
printed (the peer has no other command to compare: it is an MCP server). Targets (2 cores): --help <= 0.15 s, log <= 0.15 s, lexical
and exact recall <= 0.25 s at 10k. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOPICS = ["payment", "webhook", "cache", "queue", "deploy", "auth", "token", "index", "migration",
          "retry", "timeout", "lock", "schema", "worker", "upload", "search", "session", "cron"]
VERBS = ["fixed", "decided on", "moved", "raised", "dropped", "documented", "measured", "renamed"]
KEYS = ["MAX_RETRIES", "CACHE_TTL", "DB_POOL_SIZE", "WORKER_COUNT", "UPLOAD_LIMIT_MB"]


def note(rng: random.Random, i: int) -> str:
    a, b = rng.sample(TOPICS, 2)
    key = rng.choice(KEYS)
    return (f"{rng.choice(VERBS).capitalize()} the {a} {b} handling in src/{a}/{b}_{i % 97}.py; "
            f"{key}={rng.randint(1, 500)} after incident {i}, see --{b}-mode")


def fill(home: Path, n: int) -> None:
    os.environ["MARM_HOME"] = str(home)
    from marm.context import Ctx
    from marm.ops.memory import write_memory

    rng = random.Random(n)
    ctx = Ctx(source="cli", cwd=home, env=dict(os.environ))
    for i in range(n):
        write_memory(ctx, note(rng, i))
    ctx.close()


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[:300]}")
    return elapsed


def median_of(runs: int, cmd_for_run, env, cwd) -> float:
    return statistics.median(timed(cmd_for_run(r), env, cwd) for r in range(runs))


def help_figures(marm: str, env: dict[str, str], cwd: Path, runs: int) -> dict[str, float]:
    """``marm --help``, and the peer's ``marm-memory --help`` interleaved with it run by run
    (the same machine load for both) when the peer is installed: medians and their ratio."""
    peer = Path(os.environ.get("PEER", "/tmp/marm-peer")) / "venv" / "bin" / "marm-memory"
    ours, theirs = [], []
    for _ in range(runs):
        ours.append(timed([marm, "--help"], env, cwd))
        if peer.exists():
            theirs.append(timed([str(peer), "--help"], {**os.environ, "HOME": str(cwd)}, cwd))
    figures = {"help_s": statistics.median(ours)}
    if theirs:
        figures["peer_help_s"] = statistics.median(theirs)
        figures["help_ratio_vs_peer"] = figures["help_s"] / figures["peer_help_s"]
        print(f"--help: marm {figures['help_s']:.3f} s, peer {figures['peer_help_s']:.3f} s"
              f" ({figures['help_ratio_vs_peer']:.2f}x), interleaved over {runs} runs")
    else:
        print(f"peer: not installed at {peer.parent.parent} (PEER=...); marm's figures alone")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="(the JSON line is always printed last)")
    parser.add_argument("--large", action="store_true", help="also 100,000 memories")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    marm = shutil.which("marm", path=str(Path(sys.executable).parent)) or "marm"
    # Time marm as pip installs it: with byte-code compiled (an editable install, or an
    # environment with PYTHONDONTWRITEBYTECODE, would otherwise recompile on every run).
    import compileall

    import marm as package

    compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sizes = [1_000, 10_000] + ([100_000] if args.large else [])
    figures: dict[str, float] = {}
    scratch = Path(tempfile.mkdtemp(prefix="marm-bench-cli-"))
    try:
        for n in sizes:
            home = scratch / f"home-{n}"
            t0 = time.perf_counter()
            fill(home, n)
            print(f"filled {n:,} memories in {time.perf_counter() - t0:.1f}s", flush=True)
            env = {**os.environ, "MARM_HOME": str(home)}
            label = f"{n // 1000}k"
            if n == sizes[0]:
                figures.update(help_figures(marm, env, scratch, args.runs))
            figures[f"log_s_{label}"] = median_of(
                args.runs, lambda r: [marm, "log", f"bench write {r} of the cache queue"], env, scratch)
            figures[f"recall_lexical_s_{label}"] = median_of(
                args.runs, lambda r: [marm, "recall", "--mode", "lexical", "payment webhook retry"],
                env, scratch)
            figures[f"recall_exact_s_{label}"] = median_of(
                args.runs, lambda r: [marm, "recall", "--mode", "exact", "MAX_RETRIES=42"], env, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    targets = {"help_s": 0.15, "log_s_10k": 0.15, "recall_lexical_s_10k": 0.25, "recall_exact_s_10k": 0.25}
    print(f"\nmedian whole-process wall time over {args.runs} runs")
    for key, value in figures.items():
        target = f"  (target <= {targets[key]:.2f} s)" if key in targets else ""
        print(f"  {key:<24} {value:.3f}{target}")
    print(json.dumps({k: round(v, 4) for k, v in figures.items()} | {"runs": args.runs}))


if __name__ == "__main__":
    main()
