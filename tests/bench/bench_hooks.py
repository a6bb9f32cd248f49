"""Median whole-process wall time of each ``marm hook`` event at 10,000 memories.

    python tests/bench/bench_hooks.py [--json] [--memories 10000] [--runs 11]

Each run starts the ``marm`` console script (as an agent does) with a realistic Claude
Code payload and waits for it to exit; its CPU time (user + system) is printed too. The memories have vectors, as after a drain. Targets (issue 5): session-start <= 0.3 s,
prompt <= 0.3 s lexical (<= 0.5 s with the model, issue 16), post-tool <= 0.15 s, stop <= 0.3 s,
session-end <= 0.3 s. The last line is one JSON object. (MARM, the peer, has no hooks,
so there is nothing to run side by side.)
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

TARGETS = {"session-start": 0.3, "prompt (lexical)": 0.3, "prompt (auto)": 0.5, "post-tool": 0.15,
           "stop": 0.3, "pre-compact": None, "session-end": 0.3}

WORDS = ("queue worker retry webhook payment invoice cache redis sqlite postgres index migration "
         "schema token session cookie login oauth deploy docker build ninja cmake test fixture "
         "timeout latency batch stream parser lexer config flag feature rollout metrics alert "
         "backup restore shard replica lock lease drain embed vector search ranking query").split()
KINDS = ("DECISION", "FIX", "NOTE", "LESSON", "TODO")


def command() -> list[str]:
    script = Path(sys.executable).parent / "marm"
    return [str(script)] if script.exists() else [sys.executable, "-m", "marm"]


def populate(home: Path, work: Path, n: int) -> tuple[Path, int]:
    """``n`` memories over five repositories; returns the main repo and the id of the
    memory the benchmark prompt is about."""
    from marm.context import Ctx
    from marm.ops.memory import write_memory

    rng = random.Random(7)
    repos = []
    for i in range(5):
        repo = work / f"repo{i}"
        repo.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        repos.append(repo)
    env = {**os.environ, "MARM_HOME": str(home)}
    ctxs = [Ctx(source="import", cwd=r, env=env) for r in repos]
    store = ctxs[0].store()
    for c in ctxs[1:]:
        c._store = store  # one connection, one transaction for the bulk load
    with store.write():
        for i in range(n):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
            write_memory(ctxs[i % 5], f"{KINDS[i % 5]}: {words} (item {i})", session=f"s{i % 50}")
        target = write_memory(ctxs[0], "DECISION: the payment webhook uses idempotency keys so "
                                       "retried deliveries never double charge").id
    _give_vectors(store, home)
    store.close()
    return repos[0], target


def _give_vectors(store, home: Path) -> None:
    """Vectors for every memory, as after a drain: random unit vectors (a prompt hook's
    speed does not depend on what they say) tagged with the real model, appended to the
    vector files, and the embed tasks done; the benchmark memory gets its real vector so
    the hook with the model finds it by meaning too."""
    import numpy as np

    from marm import embed
    from marm.store import memories, vectors

    ids = [r[0] for r in store.conn.execute("SELECT id FROM memories ORDER BY id")]
    gen = np.random.default_rng(7)
    encoder = embed.load(embed.settings(home, {}, os.environ))
    for start in range(0, len(ids), 2000):
        found = memories.get_many(store, ids[start : start + 2000])
        batch = [found[i] for i in ids[start : start + 2000]]
        vecs = gen.standard_normal((len(batch), encoder.dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        if batch[-1].id == ids[-1]:
            vecs[-1] = encoder.embed([batch[-1].content])[0]
        with store.write():
            vectors.write(store, home, encoder.model, [
                vectors.Embedded(m.id, m.content_hash, [vectors.Chunk(0, 0, len(m.content))], v[None, :])
                for m, v in zip(batch, vecs, strict=True)])
    with store.write():
        store.conn.execute("DELETE FROM outbox WHERE kind = 'embed'")


#: CPU seconds (user + system) of each run, by event: on a busy machine the wall time says
#: what an agent waits, the CPU time what the hook costs.
CPU: dict[str, list[float]] = {}


def _child_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_runs(event: str, payloads: list[dict], env: dict, cwd: Path, after=None, label: str | None = None) -> list[float]:
    walls, cpus = [], CPU.setdefault(label or event, [])
    for p in payloads:
        cpu = _child_cpu()
        started = time.perf_counter()
        proc = subprocess.run([*command(), "hook", event, "--agent", "claude"], input=json.dumps(p).encode(),
                              capture_output=True, env=env, cwd=cwd)
        walls.append(time.perf_counter() - started)
        cpus.append(_child_cpu() - cpu)
        if proc.returncode != 0 or proc.stderr:
            raise SystemExit(f"{event} failed: {proc.stderr.decode()}")
        if after:
            after()
    return walls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true", help="(the JSON line is always printed last)")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    # Time marm as pip installs it: with byte-code compiled (an environment with
    # PYTHONDONTWRITEBYTECODE would otherwise recompile marm in every hook).
    import compileall

    import marm as package

    compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="marm-bench-hooks-") as tmp:
        home, work = Path(tmp) / "home", Path(tmp) / "work"
        t0 = time.perf_counter()
        repo, target = populate(home, work, args.memories)
        print(f"loaded {args.memories:,} memories in {time.perf_counter() - t0:.1f}s")
        env = {**os.environ, "MARM_HOME": str(home), "MARM_INJECT_RECALL": "lexical"}
        base = {"session_id": "bench", "transcript_path": str(repo / "t.jsonl"), "cwd": str(repo),
                "permission_mode": "default"}
        transcript = repo / "t.jsonl"
        transcript.write_text("\n".join(json.dumps({"type": "assistant", "message": {
            "role": "assistant", "content": [{"type": "text", "text": f"We decided to shard queue {i} "
                                              f"by tenant instead of by region."}]}}) for i in range(200)))
        (repo / "app.py").write_text("a = 1\n")
        n = args.runs
        prompt = {**base, "hook_event_name": "UserPromptSubmit",
                  "prompt": "why does the payment webhook need idempotency keys for retried deliveries?"}
        results: dict[str, list[float]] = {}
        results["session-start"] = time_runs("session-start", [
            {**base, "hook_event_name": "SessionStart", "source": "startup"}] * n, env, repo)
        results["prompt (lexical)"] = time_runs("prompt", [prompt] * n, env, repo, label="prompt (lexical)")
        check = subprocess.run([*command(), "hook", "prompt"], input=json.dumps(prompt).encode(),
                               capture_output=True, env=env, cwd=repo).stdout.decode()
        assert f"#{target} " in check, "the benchmark prompt must find its memory"
        results["prompt (auto)"] = time_runs("prompt", [prompt] * n,
                                             {**env, "MARM_INJECT_RECALL": "auto"}, repo, label="prompt (auto)")
        results["post-tool"] = time_runs("post-tool", [
            {**base, "hook_event_name": "PostToolUse", "tool_name": "Edit",
             "tool_input": {"file_path": str(repo / "app.py")}, "tool_response": {"success": True}}] * n,
            env, repo)
        results["stop"] = time_runs("stop", [
            {**base, "hook_event_name": "Stop", "stop_hook_active": False,
             "last_assistant_message": f"Done. We decided to cap batch {i} at 500 rows instead of 1000."}
            for i in range(n)], env, repo)
        results["pre-compact"] = time_runs("pre-compact", [
            {**base, "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""}] * n,
            env, repo)
        def wait_for_drain() -> None:
            """Let the detached drain a session end started finish before the next run (it
            shares the 2 cores): until nothing is queued and no drain holds the lease."""
            import sqlite3

            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                conn = sqlite3.connect(home / "marm.db")
                try:
                    busy = conn.execute("SELECT (SELECT count(*) FROM outbox WHERE state = 'pending' AND kind = 'embed')"
                                        " + (SELECT count(*) FROM leases)").fetchone()[0]
                finally:
                    conn.close()
                if not busy:
                    break
                time.sleep(0.05)

        # Only a small backlog, so each detached drain is short: the bench measures the hook.
        import sqlite3

        conn = sqlite3.connect(home / "marm.db")
        conn.execute("DELETE FROM outbox WHERE id NOT IN (SELECT id FROM outbox ORDER BY id DESC LIMIT 2)")
        conn.commit()
        conn.close()
        results["session-end"] = time_runs("session-end", [
            {**base, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}] * n, env, repo,
            after=wait_for_drain)

    medians = {k: round(statistics.median(v), 4) for k, v in results.items()}
    cpu = {k: round(statistics.median(CPU[k]), 4) for k in results}
    print(f"{'event':<18}{'median s':>10}{'min s':>9}{'max s':>9}{'CPU s':>8}{'target s':>10}")
    for k, v in results.items():
        target = TARGETS[k]
        mark = "" if target is None else ("  ok" if medians[k] <= target else "  OVER")
        print(f"{k:<18}{medians[k]:>10.3f}{min(v):>9.3f}{max(v):>9.3f}{cpu[k]:>8.3f}"
              f"{'-' if target is None else target:>10}{mark}")
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f}")
    print(json.dumps({"bench": "hooks", "memories": args.memories, "runs": args.runs,
                      "median_s": medians, "cpu_median_s": cpu, "load_after": round(os.getloadavg()[0], 2),
                      "targets_s": TARGETS,
                      "within_target": {k: medians[k] <= t for k, t in TARGETS.items() if t is not None}}))


if __name__ == "__main__":
    main()
