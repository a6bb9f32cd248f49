"""Wall time of one shell TAB: a whole `marm` process answering a completion request.

    python tests/bench/bench_completion.py [--json] [--runs 10]

Each case is one process per TAB, started the way bash's script starts it: the ``marm``
console script (the one installed beside this interpreter) with
``_MARM_COMPLETE=complete_bash``, COMP_WORDS and COMP_CWORD, timed from spawn to exit.
Not ``python -m marm``: that is not what a shell runs, and it imports the ``marm`` of
the current directory, whichever checkout that is. The median (and min, max) of the
runs is reported, next to a bare ``python -c pass`` for the interpreter's own start-up
on this machine. Target: under 0.1 s a TAB. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    "marm re<TAB>": ("marm re", 1),
    "marm recall --<TAB>": ("marm recall --", 2),
    "marm config set <TAB>": ("marm config set ", 3),
    "marm code t<TAB>": ("marm code t", 2),
}


def timed(argv: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        seconds.append(time.perf_counter() - start)
    return {"median": statistics.median(seconds), "min": min(seconds), "max": max(seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="(the JSON line is always printed)")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="marm-bench-completion-")
    base = {**os.environ, "MARM_HOME": home}
    marm = Path(sys.executable).with_name("marm")
    if not marm.exists():
        parser.error(f"no marm console script beside {sys.executable}: install marm in this environment")
    results = {"python -c pass": timed([sys.executable, "-c", "pass"], base, args.runs)}
    for name, (line, cword) in CASES.items():
        env = {**base, "_MARM_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(cword)}
        results[name] = timed([str(marm)], env, args.runs)
    for name, r in results.items():
        print(f"{name:<26} median {r['median'] * 1000:6.1f} ms   min {r['min'] * 1000:6.1f}   "
              f"max {r['max'] * 1000:6.1f}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(json.dumps({"bench": "completion", "runs": args.runs, "load1": load,
                      "median_ms": {k: round(v["median"] * 1000, 1) for k, v in results.items()}}))


if __name__ == "__main__":
    main()
