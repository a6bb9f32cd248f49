"""Benchmark: review verbs, as-of recall and export/import on a store of N memories.

    python tests/bench/bench_review.py [--memories 2000] [--repeat 15]

Runs in-process (no subprocess start-up in the figures) against real SQLite files in a
temporary MARM_HOME. Prints readable figures, then one JSON line. Forget is the costly
verb on purpose: it rewrites both FTS indexes (``optimize``) and checkpoints the WAL
so the erased text leaves no trace in the file; the figure shows what that costs at N.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from marm.ops import review
from marm.ops.context import Ctx
from marm.ops.memory import recall, write_memory
from marm.ops.transfer import export, import_

TOPICS = ["payment webhook", "deploy target", "build cache", "session store", "queue consumer",
          "search index", "auth token", "release notes", "test fixtures", "rate limiter"]
VERBS = ["uses", "needs", "retries", "drops", "moved to", "depends on", "replaced", "checks"]
THINGS = ["redis", "postgres", "idempotency keys", "ninja", "a cron job", "the outbox", "fly.io",
          "three workers", "a circuit breaker", "signed urls"]


def text(i: int) -> str:
    return (f"{TOPICS[i % len(TOPICS)]} {VERBS[(i // 10) % len(VERBS)]} "
            f"{THINGS[(i // 80) % len(THINGS)]} (note {i})")


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    n, repeat = args.memories, args.repeat

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        ctx = Ctx(cwd=work, env={**os.environ, "MARM_HOME": str(Path(tmp) / "home")})
        writes = [timed(lambda i=i: write_memory(ctx, text(i), valid_from="2024-01-01")) for i in range(n)]
        ids = list(range(1, n + 1))

        doubt = [timed(lambda i=i: review.doubt(ctx, ids[i])) for i in range(repeat)]
        retract = [timed(lambda i=i: review.retract(ctx, ids[repeat + i], reason="bench")) for i in range(repeat)]
        supersede = [timed(lambda i=i: review.supersede(ctx, ids[2 * repeat + i], by=ids[-1 - i]))
                     for i in range(repeat)]
        restore = [timed(lambda i=i: review.restore(ctx, ids[repeat + i])) for i in range(repeat)]
        forget = [timed(lambda i=i: review.forget(ctx, ids[3 * repeat + i])) for i in range(repeat)]

        queries = TOPICS * 3
        plain = [timed(lambda q=q: recall(ctx, q, mode="lexical")) for q in queries]
        as_of = [timed(lambda q=q: recall(ctx, q, mode="lexical", as_of="2025-01-01")) for q in queries]
        widened = [timed(lambda q=q: recall(ctx, q, mode="lexical", include="retracted,superseded"))
                   for q in queries]

        dump = Path(tmp) / "dump.jsonl"
        start = time.perf_counter()
        exported = export(ctx, all_projects=True)
        dump.write_text("".join(line + "\n" for line in exported.document()))
        export_s = time.perf_counter() - start
        ctx.close()

        target = Ctx(cwd=work, env={**os.environ, "MARM_HOME": str(Path(tmp) / "home2")})
        import_s = timed(lambda: import_(target, str(dump)))
        again_s = timed(lambda: import_(target, str(dump)))
        target.close()
        size_kb = dump.stat().st_size / 1024

    figures = {
        "memories": n,
        "repeat": repeat,
        "log_ms": median_ms(writes),
        "doubt_ms": median_ms(doubt),
        "retract_ms": median_ms(retract),
        "supersede_ms": median_ms(supersede),
        "restore_ms": median_ms(restore),
        "forget_ms": median_ms(forget),
        "recall_lexical_ms": median_ms(plain),
        "recall_as_of_ms": median_ms(as_of),
        "recall_include_ms": median_ms(widened),
        "export_s": round(export_s, 3),
        "export_kib": round(size_kb),
        "import_s": round(import_s, 3),
        "reimport_s": round(again_s, 3),
    }
    print(f"store of {n} memories, medians over {repeat} calls (verbs) / {len(queries)} queries (recall)")
    print(f"  log {figures['log_ms']} ms | doubt {figures['doubt_ms']} ms | retract {figures['retract_ms']} ms"
          f" | supersede {figures['supersede_ms']} ms | restore {figures['restore_ms']} ms")
    print(f"  forget {figures['forget_ms']} ms (FTS optimize + WAL checkpoint included)")
    print(f"  recall lexical {figures['recall_lexical_ms']} ms | --as-of {figures['recall_as_of_ms']} ms"
          f" | --include retracted,superseded {figures['recall_include_ms']} ms")
    print(f"  export {figures['export_s']} s ({figures['export_kib']} KiB) | import into an empty store"
          f" {figures['import_s']} s | same file again {figures['reimport_s']} s")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
