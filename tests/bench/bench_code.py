"""Benchmark the code graph on real trees (not collected by pytest).

    python tests/bench/bench_code.py [--json] [--runs N] [REPO ...]

Without REPO: the standard library of this interpreter, and the TypeScript sources of
an npm package (``rxjs``) installed into a temporary directory at run time (skipped
when npm is missing or offline). Every tree is copied into a temporary git repository
first: real trees are never modified. Per tree it measures a full index (one worker,
so one core, and the default worker count), a no-change re-index, a one-file edit
re-index, each query op in process, and the size of ``derived.db``. Medians over
``--runs``; the last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from marm.code.index import default_workers, index_tree  # noqa: E402
from marm.context import Ctx  # noqa: E402
from marm.ops import code as code_ops  # noqa: E402
from marm.store import code_graph  # noqa: E402

_IGNORE = shutil.ignore_patterns("site-packages", "__pycache__", "node_modules", ".git", "*.pyc")


def stdlib() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def npm_project(scratch: Path, package: str = "rxjs@7") -> Path | None:
    if shutil.which("npm") is None:
        return None
    target = scratch / "npm"
    target.mkdir()
    out = subprocess.run(
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--prefix",
            str(target),
            package,
        ],
        capture_output=True,
        timeout=300,
    )
    src = target / "node_modules" / package.split("@")[0] / "src"
    return src if out.returncode == 0 and src.is_dir() else None


def copy_repo(source: Path, scratch: Path, name: str) -> Path:
    dest = scratch / name
    shutil.copytree(source, dest, ignore=_IGNORE, symlinks=True)
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    return dest.resolve()


def timed(fn) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def db_size(home: Path) -> int:
    return sum(os.path.getsize(p) for p in home.glob("derived.db*"))


def full_index(root: Path, scratch: Path, workers: int, runs: int) -> dict:
    walls, cpus, report = [], [], None
    for i in range(runs):
        home = scratch / f"home-{root.name}-{workers}-{i}"
        graph = code_graph.CodeGraph.open(home)
        wall, cpu, report = timed(lambda c=graph: index_tree(c, root, workers=workers))
        graph.close()
        walls.append(wall)
        cpus.append(cpu)
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    return {
        "workers": workers,
        "wall_s": round(wall, 3),
        "cpu_s_main_process": round(cpu, 3),
        "files": report.parsed,
        "lines": report.lines_parsed,
        "files_per_s": round(report.parsed / wall),
        "lines_per_s": round(report.lines_parsed / wall),
        "edges": report.edges,
        "skipped": len(report.skipped),
        "partial": len(report.partial),
        "home": str(scratch / f"home-{root.name}-{workers}-0"),
    }


def pick_edit_file(root: Path) -> Path:
    """A mid-sized source file of the tree (deterministic)."""
    sizes = sorted(
        (p.stat().st_size, str(p))
        for p in root.rglob("*")
        if p.suffix in (".py", ".ts") and p.is_file() and 2_000 < p.stat().st_size < 40_000
    )
    return Path(sizes[len(sizes) // 2][1])


def bench_tree(name: str, source: Path, scratch: Path, runs: int) -> dict:
    root = copy_repo(source, scratch, name)
    one = full_index(root, scratch, 1, runs)
    auto = full_index(root, scratch, default_workers(), runs) if default_workers() > 1 else one
    home = Path(one["home"])
    graph = code_graph.CodeGraph.open(home)
    nochange = [timed(lambda: index_tree(graph, root))[0] for _ in range(max(runs, 5))]
    target = pick_edit_file(root)
    edits = []
    for i in range(max(runs, 5)):
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(
                f"\n\ndef bench_added_{i}():\n    return {i}\n"
                if target.suffix == ".py"
                else f"\n\nexport function benchAdded{i}(): number {{ return {i}; }}\n"
            )
        wall, _, report = timed(lambda: index_tree(graph, root))
        assert report.parsed == 1, report
        edits.append(wall)
    tree = graph.tree(str(root))
    ranked = graph.top_ranked(tree.id, 1_000_000, kinds=("function", "method"))
    graph.close()
    central, typical = ranked[0], ranked[len(ranked) // 2]
    ctx = Ctx(source="cli", cwd=root, env={**os.environ, "MARM_HOME": str(home)})
    latency = {}
    for label, symbol in (("central", central), ("typical", typical)):
        queries = {
            "lookup": lambda s=symbol: code_ops.code_lookup(ctx, s.name),
            "trace": lambda s=symbol: code_ops.code_trace(ctx, s.qname, "both", 2),
            "architecture": lambda: code_ops.code_architecture(ctx),
            "impact": lambda s=symbol: code_ops.code_impact(ctx, s.qname, None, 3),
        }
        for qname, fn in queries.items():
            if label == "typical" and qname == "architecture":
                continue
            fn()
            runs_ = [timed(fn) for _ in range(20)]
            latency[f"{qname}_{label}_ms"] = median([w * 1000 for w, _, _ in runs_])
            latency[f"{qname}_{label}_cpu_ms"] = median([c * 1000 for _, c, _ in runs_])
    ctx.close()
    return {
        "tree": name,
        "full_index_one_worker": one,
        "full_index_default_workers": auto,
        "one_core_lines_per_cpu_s": round(one["lines"] / one["cpu_s_main_process"]),
        "nochange_reindex_s": median(nochange),
        "one_file_edit_reindex_s": median(edits),
        "edited_file": str(target.relative_to(root)),
        "query_latency": latency,
        "central_symbol": central.qname,
        "typical_symbol": typical.qname,
        "derived_db_bytes": db_size(home),
    }


def show(r: dict) -> None:
    one, auto = r["full_index_one_worker"], r["full_index_default_workers"]
    print(
        f"== {r['tree']}: {one['files']} files, {one['lines']} lines, {one['edges']} edges "
        f"({one['skipped']} skipped, {one['partial']} partial)"
    )
    print(
        f"  full index, 1 worker : {one['wall_s']:.2f}s wall = {one['files_per_s']} files/s, "
        f"{one['lines_per_s']} lines/s ({r['one_core_lines_per_cpu_s']} lines per CPU-second)"
    )
    print(
        f"  full index, {auto['workers']} workers: {auto['wall_s']:.2f}s wall = {auto['files_per_s']} files/s, "
        f"{auto['lines_per_s']} lines/s"
    )
    print(f"  no-change re-index   : {r['nochange_reindex_s'] * 1000:.0f} ms")
    print(
        f"  one-file edit        : {r['one_file_edit_reindex_s'] * 1000:.0f} ms ({r['edited_file']})"
    )
    lat = r["query_latency"]
    for label in ("central", "typical"):
        print(
            f"  queries, {label:<8}: "
            + ", ".join(
                f"{k.split('_')[0]} {v:.1f} ms wall / {lat[k[:-3] + '_cpu_ms']:.1f} ms CPU"
                for k, v in lat.items()
                if f"_{label}_" in k and not k.endswith("_cpu_ms")
            )
        )
    print(f"    ({r['central_symbol']} = most central; {r['typical_symbol']} = median rank)")
    print(f"  derived.db           : {r['derived_db_bytes'] / 1e6:.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repos", nargs="*", type=Path)
    parser.add_argument(
        "--json", action="store_true", help="(kept for symmetry: the last line is JSON)"
    )
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="marm-bench-code-") as tmp:
        scratch = Path(tmp)
        trees: list[tuple[str, Path]] = [
            (p.resolve().name or "repo", p.resolve()) for p in args.repos
        ]
        if not trees:
            trees.append(("python-stdlib", stdlib()))
            ts = npm_project(scratch)
            if ts is None:
                print("(npm unavailable: TypeScript tree skipped)")
            else:
                trees.append(("rxjs-src", ts))
        for i, (name, source) in enumerate(trees):
            r = bench_tree(f"{i}-{name}", source, scratch, args.runs)
            show(r)
            results.append(r)
    for r in results:
        for key in ("full_index_one_worker", "full_index_default_workers"):
            r[key].pop("home", None)
    print(
        json.dumps(
            {
                "bench": "code",
                "python": sys.version.split()[0],
                "cpus": os.cpu_count(),
                "load_avg_1m": round(os.getloadavg()[0], 2),
                "trees": results,
            }
        )
    )


if __name__ == "__main__":
    main()
