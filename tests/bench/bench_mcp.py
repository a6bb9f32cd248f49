"""Benchmark `marm mcp` over real STDIO, and the MARM peer with the same work if installed.

    python tests/bench/bench_mcp.py [--json] [--starts 5] [--calls 50] [--memories 1000]
                                    [--peer DIR | --no-peer]

Measures, per server: spawn to the first tools/list reply (median of --starts starts,
the servers' starts interleaved so that both see the same machine load, all in one home:
marm's first start there has no saved handshake, and its figure is printed apart); then, with
both servers up and every call sent to each in turn, --memories memories stored
through the server's own log tool, p50/p95 of the log tool and of the recall tool
over --calls calls each (client-side round trips, newline-delimited JSON-RPC), and
--pairs recalls made right after a write of the memory they look for (the pair, write
plus recall, is the like-for-like figure: the peer embeds inside its log call, marm
after it). marm's calls are timed in a settled session: its background drain has
embedded the seed before the log calls, and those before the recall calls. Targets for marm:
start <= 0.8 s, log p50 <= 5 ms, recall p50 <= 15 ms at 1,000 memories.

The MARM peer (marm-mcp-server, set up by the peer recipe with an all-MiniLM-L6-v2
stand-in for its encoder) is looked for in --peer, else $MARM_PEER, else
/tmp/marm-peer; when it is not there, it is skipped and said so. Readable figures go
to stdout (stderr with --json); the last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

TARGETS = {"start_s": 0.8, "log_p50_ms": 5.0, "recall_p50_ms": 15.0}
DEFAULT_PEER = "/tmp/marm-peer"

_SUBJECTS = ["the payment webhook", "the login page", "the build", "the staging cluster",
             "the search index", "the billing cron", "the cache layer", "the release script",
             "the auth service", "the docs site", "the mobile client", "the event bus"]
_VERBS = ["retries", "times out on", "caches", "rotates", "validates", "logs", "shards",
          "compresses", "rate-limits", "migrates", "pins", "replays"]
_OBJECTS = ["refresh tokens", "idempotency keys", "the tenant id", "stale cookies",
            "large uploads", "nightly snapshots", "feature flags", "the region header",
            "retry budgets", "schema versions", "webhook signatures", "old sessions"]
_KINDS = ["DECISION", "FIX", "NOTE", "TODO", "LESSON"]


def corpus(n: int, seed: int = 7) -> list[str]:
    """``n`` distinct log entries in `YYYY-MM-DD-topic-summary` form (both servers parse it)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        s, v, o = rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(_OBJECTS)
        out.append(f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}-bench-{rng.choice(_KINDS)}: {s} {v} {o}"
                   f" (case {i})")
    return out


def queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(_SUBJECTS).split(' ', 1)[1]} {rng.choice(_OBJECTS)}" for _ in range(n)]


class Rpc:
    """A minimal newline-delimited JSON-RPC client for one MCP server process."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str], stderr: Any) -> None:
        self.spawned = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=stderr)
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.inbox.put(json.loads(line))
            except ValueError:
                self.inbox.put({"_not_json": line.decode("utf-8", "replace")})
        self.inbox.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None,
                timeout: float = 300) -> tuple[dict[str, Any], float]:
        self.next_id += 1
        sent = time.perf_counter()
        self._send({"id": self.next_id, "method": method, **({"params": params} if params else {})})
        while True:
            message = self.inbox.get(timeout=timeout)
            if message is None:
                raise RuntimeError(f"the server closed stdout during {method}")
            if "_not_json" in message:
                raise RuntimeError(f"non-protocol line on stdout: {message['_not_json']!r}")
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"], time.perf_counter() - sent

    def start(self) -> float:
        """Initialize and list tools; seconds from spawn to the tools/list reply."""
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self._send({"method": "notifications/initialized"})
        self.request("tools/list")
        return time.perf_counter() - self.spawned

    def call(self, tool: str, arguments: dict[str, Any]) -> float:
        result, seconds = self.request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result['content']}")
        return seconds

    def rss_mb(self) -> float | None:
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS"):
                        return round(int(line.split()[1]) / 1024, 1)
        except OSError:
            return None
        return None

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the server process has used so far, every thread."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return float("nan")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Subject:
    """How to start one server and say the same work in its tools' words."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], cwd: Path,
                 log: Any, recall: Any) -> None:
        self.name, self.cmd, self.env, self.cwd = name, cmd, env, cwd
        self.log_args, self.recall_args = log, recall

    def spawn(self, stderr: Any) -> Rpc:
        return Rpc(self.cmd, self.cwd, self.env, stderr)


def marm_subject(work: Path) -> Subject:
    home = work / "marm-home"
    project = work / "proj-alpha"
    project.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {**os.environ, "MARM_HOME": str(home)}
    env.pop("MARM_PROJECT", None)
    return Subject("marm", [sys.executable, "-m", "marm", "mcp"], env, project,
                   log=lambda text: ("marm_log_entry", {"text": text}),
                   recall=lambda q: ("marm_smart_recall", {"query": q, "limit": 5}))


def peer_subject(peer: Path, work: Path) -> Subject | None:
    launcher, python = peer / "bin" / "marm_stdio_minilm.py", peer / "venv" / "bin" / "python"
    cache = peer / "fastembed_cache_minilm"
    if not (launcher.is_file() and python.is_file() and cache.is_dir()):
        return None
    home = work / "peer-home"
    (home / ".marm").mkdir(parents=True, exist_ok=True)
    project = work / "peer" / "proj-alpha"   # its scope is the directory it starts in
    project.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(home), "HF_HUB_OFFLINE": "1",
           "FASTEMBED_CACHE_PATH": str(cache), "XDG_CACHE_HOME": str(home / ".cache"),
           "PYTHONUNBUFFERED": "1"}
    return Subject("peer", [str(python), str(launcher)], env, project,
                   log=lambda text: ("marm_log_entry", {"entry": text, "session_name": "bench"}),
                   recall=lambda q: ("marm_smart_recall",
                                     {"query": q, "session_name": "bench", "limit": 5}))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def measure_starts(subjects: list[Subject], args: argparse.Namespace, work: Path,
                   say: Any) -> dict[str, float]:
    """Spawn to first tools/list reply, the subjects' starts interleaved (same machine load)."""
    starts: dict[str, list[float]] = {s.name: [] for s in subjects}
    for _ in range(args.starts):
        for s in subjects:
            with open(work / f"{s.name}-stderr.log", "ab") as errlog:
                rpc = s.spawn(errlog)
                try:
                    starts[s.name].append(rpc.start())
                finally:
                    rpc.close()
    for name, values in starts.items():
        say(f"[{name}] start to first tools/list: median {statistics.median(values):.3f} s "
            f"(min {min(values):.3f}, max {max(values):.3f}, {len(values)} starts; the first"
            f" {values[0]:.3f} s)")
    if "marm" in starts:  # marm's first start in a home has no saved handshake: the SDK answers
        say(f"[marm] (the first start answers through the SDK and saves the handshake for the next)")
    return {**{name: round(statistics.median(values), 3) for name, values in starts.items()},
            **{f"{name}_first": round(values[0], 3) for name, values in starts.items()}}


def embed_backlog(rpc: Rpc) -> int:
    """marm's pending embedding tasks, from marm_status."""
    result, _ = rpc.request("tools/call", {"name": "marm_status", "arguments": {}})
    status = result.get("structuredContent") or {}
    return int(status.get("outbox", {}).get("embed", {}).get("pending", 0))


def settle(rpc: Rpc, limit: float, stalled_after: float = 15.0) -> tuple[float, int]:
    """Wait until marm's background drain has embedded the backlog, or nothing moves.

    Returns the seconds waited and the tasks left (left > 0 with no progress means this
    build has no encoder, or it is unavailable: recall then runs on words).
    """
    waited = last_change = time.perf_counter()
    left = embed_backlog(rpc)
    while left and time.perf_counter() - waited < limit:
        time.sleep(0.5)
        now_left = embed_backlog(rpc)
        if now_left < left:
            last_change = time.perf_counter()
        elif time.perf_counter() - last_change > stalled_after:
            break
        left = now_left
    return round(time.perf_counter() - waited, 2), left


def write_then_recall(rpc: Rpc, s: Subject, i: int) -> tuple[float, float, bool, bool]:
    """Write a memory, recall it at once: (log seconds, recall seconds, whether the new
    memory came back at all, whether first). Nothing is settled in between."""
    marker = f"zeta{i}quartz"
    logged = rpc.call(*s.log_args(f"2026-12-01-fresh-NOTE: the {marker} flag guards the rollout"))
    tool, arguments = s.recall_args(f"{marker} rollout flag")
    result, seconds = rpc.request("tools/call", {"name": tool, "arguments": arguments})
    contents = [str(h.get("content", "")) for h in (result.get("structuredContent") or {}).get("results") or []]
    if not contents:  # the peer answers in text content only
        contents = [c.get("text", "") for c in result.get("content") or []]
    return logged, seconds, any(marker in c for c in contents), bool(contents) and marker in contents[0]


def run_calls(subjects: list[Subject], args: argparse.Namespace, work: Path, say: Any) -> dict[str, Any]:
    """Both servers up at once, the same calls sent to each in turn (marm's, then the
    peer's), so that both see the same machine load: seed --memories through the log
    tool, then --calls log calls, --calls recalls, and --pairs writes each followed at
    once by a recall of what it wrote.

    marm's log returns before the memory is embedded (a background drain embeds it);
    the peer embeds inside its log call. The like-for-like figure is the pair: a write
    and a recall right after it, whose recall embeds marm's new memory, so both sides
    store, embed the memory, embed the query and search.
    """
    out: dict[str, dict[str, Any]] = {s.name: {} for s in subjects}
    logs: dict[str, list[float]] = {s.name: [] for s in subjects}
    recalls: dict[str, list[float]] = {s.name: [] for s in subjects}
    pairs: dict[str, list[float]] = {s.name: [] for s in subjects}
    fresh: dict[str, list[float]] = {s.name: [] for s in subjects}
    found: dict[str, list[int]] = {s.name: [0, 0] for s in subjects}
    errlogs = [open(work / f"{s.name}-stderr.log", "ab") for s in subjects]  # noqa: SIM115 - closed below
    rpcs = [s.spawn(e) for s, e in zip(subjects, errlogs, strict=True)]
    try:
        for rpc in rpcs:
            rpc.start()
        texts = corpus(args.memories + args.calls)
        seeded = {s.name: 0.0 for s in subjects}
        for i, text in enumerate(texts[:args.memories]):
            for s, rpc in zip(subjects, rpcs, strict=True):
                t = rpc.call(*s.log_args(text))
                seeded[s.name] += t
                if i == 0:
                    out[s.name]["first_log_ms"] = round(t * 1000, 1)  # includes any model load
            if (i + 1) % 250 == 0:
                say(f"seeded {i + 1}/{args.memories} on {', '.join(s.name for s in subjects)}")
        for s, rpc in zip(subjects, rpcs, strict=True):
            out[s.name]["seed_s"] = round(seeded[s.name], 2)
            if s.name == "marm":
                # Measure a settled session: wait for the background drain to embed the seed.
                out["marm"]["embed_backlog_s"], out["marm"]["embed_backlog_left"] = settle(rpc, args.settle)
                say(f"[marm] waited {out['marm']['embed_backlog_s']} s after the last write for"
                    f" background embedding; {out['marm']['embed_backlog_left']} task(s) left")
        cpu = {s.name: rpc.cpu_s() for s, rpc in zip(subjects, rpcs, strict=True)}
        for text in texts[args.memories:]:
            for s, rpc in zip(subjects, rpcs, strict=True):
                logs[s.name].append(rpc.call(*s.log_args(text)))
        for s, rpc in zip(subjects, rpcs, strict=True):
            if s.name == "marm":
                settle(rpc, args.settle)  # the timed writes are embedded before recalls, too
            # CPU per write, embedding included (marm's background drain is done by now)
            out[s.name]["log_cpu_ms"] = round((rpc.cpu_s() - cpu[s.name]) / args.calls * 1000, 1)
            cpu[s.name] = rpc.cpu_s()
        for q in queries(args.calls):
            for s, rpc in zip(subjects, rpcs, strict=True):
                recalls[s.name].append(rpc.call(*s.recall_args(q)))
        for s, rpc in zip(subjects, rpcs, strict=True):
            out[s.name]["recall_cpu_ms"] = round((rpc.cpu_s() - cpu[s.name]) / args.calls * 1000, 1)
        for i in range(args.pairs):
            for s, rpc in zip(subjects, rpcs, strict=True):
                logged, seconds, any_hit, first = write_then_recall(rpc, s, i)
                pairs[s.name].append(logged + seconds)
                fresh[s.name].append(seconds)
                found[s.name][0] += any_hit
                found[s.name][1] += first
        for s, rpc in zip(subjects, rpcs, strict=True):
            out[s.name]["rss_mb"] = rpc.rss_mb()
    finally:
        for rpc in rpcs:
            rpc.close()
        for e in errlogs:
            e.close()
    for s in subjects:
        o = out[s.name]
        for what, values in (("log", logs), ("recall", recalls), ("fresh_recall", fresh), ("pair", pairs)):
            o[f"{what}_p50_ms"] = round(pct(values[s.name], 50) * 1000, 2)
            o[f"{what}_p95_ms"] = round(pct(values[s.name], 95) * 1000, 2)
        o["fresh_recall_found"] = found[s.name]
        say(f"[{s.name}] {args.memories} memories seeded ({o['seed_s']} s in log calls; first write"
            f" {o['first_log_ms']} ms)")
        for what in ("log", "recall"):
            say(f"[{s.name}] {what:<6} p50 {o[what + '_p50_ms']} ms  p95 {o[what + '_p95_ms']} ms"
                f"  ({args.calls} calls; server CPU {o[what + '_cpu_ms']} ms a call)")
        say(f"[{s.name}] recall right after a write: p50 {o['fresh_recall_p50_ms']} ms"
            f"  p95 {o['fresh_recall_p95_ms']} ms; write + that recall p50 {o['pair_p50_ms']} ms"
            f" ({args.pairs} pairs; the new memory returned in {found[s.name][0]}, first in {found[s.name][1]})")
        say(f"[{s.name}] server RSS {o['rss_mb']} MB")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true",
                        help="readable figures to stderr; stdout is one JSON line")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--peer", default=os.environ.get("MARM_PEER", DEFAULT_PEER),
                        help="the MARM peer's setup directory (default: $MARM_PEER or %(default)s)")
    parser.add_argument("--no-peer", action="store_true", help="measure marm only")
    parser.add_argument("--pairs", type=int, default=20,
                        help="write-then-recall pairs (recall right after a write)")
    parser.add_argument("--settle", type=float, default=180,
                        help="most seconds to wait for marm's background embedding of the seed")
    args = parser.parse_args()
    stream = sys.stderr if args.json else sys.stdout
    # Time marm as pip installs it: with byte-code compiled (an environment with
    # PYTHONDONTWRITEBYTECODE would otherwise recompile marm in every server start).
    import compileall

    import marm as package

    compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

    def say(line: str) -> None:
        print(line, file=stream, flush=True)

    result: dict[str, Any] = {"bench": "mcp", "memories": args.memories, "calls": args.calls,
                              "starts": args.starts, "targets": TARGETS}
    with tempfile.TemporaryDirectory(prefix="marm-bench-mcp-") as tmp:
        work = Path(tmp)
        result["load_before"] = os.getloadavg()[0]
        subjects = [marm_subject(work)]
        peer = None if args.no_peer else peer_subject(Path(args.peer), work)
        if peer is not None:
            subjects.append(peer)
        else:
            say("peer: skipped" + ("" if args.no_peer else f" (not installed at {args.peer})"))
        starts = measure_starts(subjects, args, work, say)
        calls = run_calls(subjects, args, work, say)
        for s in subjects:
            result[s.name] = {"start_s": starts[s.name], "first_start_s": starts[f"{s.name}_first"],
                              **calls[s.name]}
        result.setdefault("peer", None)
        result["load_after"] = os.getloadavg()[0]
        met = result["meets_targets"] = {k: result["marm"][k] <= v for k, v in TARGETS.items()}
        say("targets: " + ", ".join(f"{k} <= {v}: {'ok' if met[k] else 'MISSED'}"
                                    for k, v in TARGETS.items()))
        if result["peer"]:
            result["ratios"] = {
                k: round(result["marm"][k] / result["peer"][k], 3)
                for k in ("start_s", "log_p50_ms", "log_p95_ms", "recall_p50_ms", "recall_p95_ms",
                          "fresh_recall_p50_ms", "pair_p50_ms", "log_cpu_ms", "recall_cpu_ms", "rss_mb")
                if result["peer"].get(k) and result["marm"].get(k) is not None
            }
            say("marm / peer: " + ", ".join(f"{k} {v:.2f}x" for k, v in result["ratios"].items()))
            say("(log: marm embeds after the call, the peer inside it; pair: a write and the recall"
                " right after it, the same work on both sides)")
        say(f"load average (1 min): {result['load_before']:.1f} before, "
            f"{result['load_after']:.1f} after")
    print(json.dumps(result, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
