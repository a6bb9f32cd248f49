"""Benchmark: review verbs, as-of recall and export/import on a store of N memories.

    python tests/bench/bench_review.py [--memories 2000] [--repeat 15] [--peer-entries 200]

Runs in-process (no subprocess start-up in the figures) against real SQLite files in a
temporary MARM_HOME. Prints readable figures, then one JSON line. Forget is the costly
verb on purpose: it rewrites both FTS indexes (``optimize``) and checkpoints the WAL
so the erased text leaves no trace in the file; the figure shows what that costs at N.

Where the MARM peer is installed (``$PEER``, default /tmp/marm-peer; see
../shared/peer/), the same forgetting work runs against it over MCP STDIO (FTS-only,
in a private HOME): its delete, whether the deleted text is still in its database
file, and whether it refuses the deleted text when written again. MARM has no
retract, supersede, as-of or export, so only delete compares.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from marm.context import Ctx
from marm.ops import review
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


def texts_left(files: list[Path], removed: int) -> int:
    """How many removed entries' markers (pmark1x ...) are still somewhere in ``files``."""
    data = b"".join(p.read_bytes() for p in files)
    return sum(b"pmark%dx" % i in data for i in range(1, removed))


def peer_forgetting(entries: int, repeat: int, root: Path) -> dict | None:
    """Log ``entries`` in the MARM peer, delete ``repeat`` of them, then check what is left."""
    import sys

    peer = Path(os.environ.get("PEER", "/tmp/marm-peer"))
    driver_dir = Path(__file__).resolve().parents[3] / "shared" / "peer"
    if not (peer / "venv" / "bin" / "marm-mcp-stdio").exists():
        return None
    for candidate in (driver_dir, Path(os.environ.get("PEER_DRIVER", "")).expanduser()):
        if (candidate / "driver.py").exists():
            sys.path.insert(0, str(candidate))
            break
    else:
        return None
    import driver  # type: ignore[import-not-found]

    home, work = root / "peer-home", root / "peer-work" / "proj"
    work.mkdir(parents=True)
    home.mkdir()
    server = driver.Server(cwd=str(work), env_extra={
        "HOME": str(home), "SEMANTIC_SEARCH_ENABLED": "0", "HF_HUB_OFFLINE": "1"},
        stderr_path=str(root / "peer.err"))
    try:
        server.initialize()
        ids = []
        for i in range(entries):
            reply, _ = server.call("marm_log_entry", {"entry": f"2025-01-01-bench-{text(i)} pmark{i}x",
                                                      "session_name": "bench"})
            ids.append(server.payload(reply)["entry_id"])
        deletes = []
        for i in range(repeat):
            _, seconds = server.call("marm_delete",
                                     {"type": "log", "target": ids[i], "session_name": "bench"})
            deletes.append(seconds)
        reply, _ = server.call("marm_smart_recall", {"query": "pmark0x", "session_name": "bench"})
        results = server.payload(reply).get("results", [])
        still_recalled = any("pmark0x" in str(r.get("content")) for r in results)
        reply, _ = server.call("marm_log_entry", {"entry": f"2025-01-01-bench-{text(0)} pmark0x",
                                                  "session_name": "bench"})
        accepted_again = server.payload(reply).get("status") == "success"
    finally:
        server.close()
    left = texts_left(list(home.rglob("*.db*")), repeat)
    return {"peer_delete_ms": median_ms(deletes), "peer_deleted_still_recalled": still_recalled,
            "peer_deleted_texts_left_in_file": left, "peer_deleted_text_accepted_again": accepted_again}


def marm_forgetting(entries: int, repeat: int, root: Path) -> dict:
    """The same work in marm: forget (after retract, so the text is refused later)."""
    work = root / "marm-work"
    work.mkdir()
    home = root / "marm-forget-home"
    ctx = Ctx(cwd=work, env={**os.environ, "MARM_HOME": str(home)})
    try:
        ids = [write_memory(ctx, f"2025-01-01-bench-{text(i)} pmark{i}x").id for i in range(entries)]
        forgets = []
        for i in range(repeat):
            review.retract(ctx, ids[i])
            forgets.append(timed(lambda i=i: review.forget(ctx, ids[i])))
        still = any("pmark0x" in r.content for r in recall(ctx, "pmark0x", include="retracted").results)
        try:
            write_memory(ctx, f"2025-01-01-bench-{text(0)} pmark0x")
            accepted_again = True
        except Exception:  # noqa: BLE001 - Refused is the expected answer
            accepted_again = False
    finally:
        ctx.close()
    left = texts_left(list(home.glob("marm.db*")), repeat)
    return {"forget_ms_small": median_ms(forgets), "deleted_still_recalled": still,
            "deleted_texts_left_in_file": left, "deleted_text_accepted_again": accepted_again}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--peer-entries", type=int, default=200)
    args = parser.parse_args()
    n, repeat = args.memories, args.repeat

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        ctx = Ctx(cwd=work, env={**os.environ, "MARM_HOME": str(Path(tmp) / "home")})
        writes = [timed(lambda i=i: write_memory(ctx, text(i), valid_from="2024-01-01")) for i in range(n)]
        ids = list(range(1, n + 1))

        doubt = [timed(lambda i=i: review.doubt(ctx, ids[i])) for i in range(repeat)]
        retract = [timed(lambda i=i: review.retract(ctx, ids[repeat + i], reason="bench"))
                   for i in range(repeat)]
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
        ours = marm_forgetting(args.peer_entries, repeat, Path(tmp))
        theirs = peer_forgetting(args.peer_entries, repeat, Path(tmp))

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
        **ours,
        **(theirs or {"peer": "not installed"}),
    }
    if theirs:
        figures["forget_vs_peer_delete"] = round(ours["forget_ms_small"] / theirs["peer_delete_ms"], 2)
    print(f"store of {n} memories, medians over {repeat} calls (verbs) / {len(queries)} queries (recall)")
    print(f"  log {figures['log_ms']} ms | doubt {figures['doubt_ms']} ms"
          f" | retract {figures['retract_ms']} ms | supersede {figures['supersede_ms']} ms"
          f" | restore {figures['restore_ms']} ms")
    print(f"  forget {figures['forget_ms']} ms (FTS optimize + WAL checkpoint included)")
    print(f"  recall lexical {figures['recall_lexical_ms']} ms | --as-of {figures['recall_as_of_ms']} ms"
          f" | --include retracted,superseded {figures['recall_include_ms']} ms")
    print(f"  export {figures['export_s']} s ({figures['export_kib']} KiB) | import into an empty store"
          f" {figures['import_s']} s | same file again {figures['reimport_s']} s")
    print(f"forgetting, {args.peer_entries} entries, {repeat} removed (marm: retract + forget; "
          f"MARM peer: delete over MCP STDIO)")
    print(f"  marm forget {ours['forget_ms_small']} ms in-process | text left in the file:"
          f" {ours['deleted_texts_left_in_file']}/{repeat - 1}"
          f" | still recalled: {ours['deleted_still_recalled']}"
          f" | same text accepted again: {ours['deleted_text_accepted_again']}")
    if theirs:
        print(f"  peer delete {theirs['peer_delete_ms']} ms per MCP call | text left in the file:"
              f" {theirs['peer_deleted_texts_left_in_file']}/{repeat - 1} | still recalled:"
              f" {theirs['peer_deleted_still_recalled']} | same text accepted again:"
              f" {theirs['peer_deleted_text_accepted_again']}")
        print(f"  ratio marm forget / peer delete: {figures['forget_vs_peer_delete']}"
              " (in-process vs one MCP round trip: indicative only)")
    else:
        print("  MARM peer not installed ($PEER): no side-by-side figures")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
