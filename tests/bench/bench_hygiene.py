"""Benchmark: memory hygiene on a long-lived store (issue 19).

    python tests/bench/bench_hygiene.py --scorer ../shared/tools/replay_sessions.py \
        --data ../shared/data/sessions/sessions-dev.json [--only jgive,scout] [--keep DIR] [--json]
    python tests/bench/bench_hygiene.py ... --from DIR   # only the compaction, on a store --keep left

Builds one long-lived store (one MARM_HOME) by replaying each dev session twice through
`marm hook` (the scorer's own replay functions, imported from its path; no data is
copied), each session in its own stand-in repository (a project), and lets the drains
run. Then it plants, through `marm log` in each project, generic memories written here:
originals, near-duplicates of some (reworded), reversals of others (each reversal cue),
and look-alike controls (the same subject or the same words, but another fact, or no
reversal). After `marm drain` it counts, from the review queue, how many planted
duplicates and reversals were flagged with the right pair, and the false flags (a
control flagged, or a planted memory flagged as the wrong thing). Then it measures the
active store's characters and the scorer's remembered@5 before and after `marm compact
--older-than 0` (every episode: the replay has just happened).

``--keep DIR`` also keeps a copy of the store just before compaction (``DIR/home-replayed``);
``--from DIR`` starts from that copy and measures only the compaction (characters, and
remembered@5 on that same store before and after), which takes minutes instead of the
replay's half hour: the loop to tune compaction on.

Targets: >= 90% of planted duplicates and reversals flagged, <= 5% false flags; after
compaction at most half the characters and a remembered@5 drop of at most 0.02.
Prints figures, then one JSON line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

#: (tool, purpose, replacement, another purpose): generic software-project subjects.
SUBJECTS = [
    ("Redis", "the session cache", "Memcached", "rate limiting"),
    ("Celery", "background jobs", "RQ", "scheduled reports"),
    ("Postgres", "full-text search", "Elasticsearch", "audit logs"),
    ("webpack", "bundling the front end", "Vite", "the admin widgets"),
    ("Jenkins", "the release pipeline", "GitHub Actions", "nightly smoke tests"),
    ("S3", "user uploads", "a local volume", "database backups"),
    ("Sentry", "error reporting", "Rollbar", "performance tracing"),
    ("cron", "the nightly export", "a systemd timer", "log rotation"),
    ("JWT cookies", "API authentication", "opaque session tokens", "the mobile client"),
    ("Docker Compose", "local development", "devcontainers", "integration tests"),
    ("Nginx", "TLS termination", "Caddy", "static assets"),
    ("gRPC", "service-to-service calls", "plain HTTP with JSON", "the billing service"),
    ("SQLite", "the offline cache", "IndexedDB", "the test fixtures"),
    ("Terraform", "provisioning servers", "Pulumi", "DNS records"),
    ("Mailgun", "transactional email", "Postmark", "the newsletter"),
    ("Black", "formatting Python code", "Ruff", "the notebooks"),
    ("Prometheus", "service metrics", "OpenTelemetry", "the queue dashboards"),
    ("Kafka", "the event stream", "NATS", "the search indexer"),
    ("Auth0", "user sign-in", "our own OAuth server", "the partner portal"),
    ("Heroku", "hosting the API", "Fly.io", "the preview apps"),
    ("Jest", "unit tests of the web app", "Vitest", "snapshot tests"),
    ("Stripe Checkout", "card payments", "Stripe Elements", "the donation page"),
    ("Cloudflare", "the CDN", "Fastly", "bot protection"),
    ("pip-tools", "pinning dependencies", "uv", "the docs build"),
]

ORIGINAL = "DECISION: we use {t} for {p}."
DUPLICATES = [
    "Decision: we are using {t} for {p}.",
    "DECISION - we use {t} for {p}",
    "Decided: we use {t} for {p}.",
    "decision: for {p} we use {t}.",
]
REVERSALS = [
    "We no longer use {t} for {p}; {a} handles it now.",
    "Replaced {t} with {a} for {p}.",
    "Switched from {t} to {a} for {p}.",
    "For {p} we now use {a} instead of {t}.",
    "Dropped {t} for {p}, {a} does it now.",
    "We stopped using {t} for {p} and moved to {a}.",
]
#: Look-alikes of a duplicate: the same words but one, and that one is the fact.
DUP_CONTROLS = [
    "DECISION: we use {a} for {p}.",
    "DECISION: we use {t} for {o}.",
]
#: The same subject, no reversal; and a reversal cue about something no memory states.
REV_CONTROLS = [
    "{t} for {p} needs a restart after every config change.",
    "The {t} setup for {p} is documented in the team wiki.",
    "We no longer use {o2} for {o}; it was never reliable.",
]


def load_scorer(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("replay_sessions", path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay_twice(sc: Any, s: dict, data_dir: Path, marm: Any, hooks_all: dict, home: Path, sdir: Path) -> Path:
    """Replay one session twice (two agent sessions) into ``home``; return its repository."""
    lines, recs = sc.load_records(data_dir / s["transcript"])
    agent = s.get("agent") or sc.detect_agent(recs)
    repo = sdir / "repo"
    sc.make_repo(repo)
    if agent == "claude":
        root = next((r.get("cwd") for r in recs if r.get("cwd") and r.get("type") == "user"), None) or \
            next((r.get("cwd") for r in recs if r.get("cwd")), "")
        sid = next((r.get("sessionId") for r in recs if r.get("sessionId")), None) or str(uuid.uuid4())
        version = next((r.get("version") for r in recs if r.get("version")), "")
    else:
        meta = next(((r.get("payload") or {}) for r in recs if r.get("type") == "session_meta"), {})
        root, sid, version = meta.get("cwd") or "", meta.get("id") or str(uuid.uuid4()), ""
    pmap = sc.PathMap(root, repo)
    with open(sdir / "hooks.jsonl", "w", encoding="utf-8") as log:
        for round_ in (1, 2):
            rp = sc.Replayer(marm, agent, hooks_all[agent], home, repo, lines, pmap,
                             sdir / f"transcript-{round_}.jsonl", log)
            this = sid if round_ == 1 else f"{sid}-again"
            (sc.replay_claude(rp, recs, this, version) if agent == "claude" else sc.replay_codex(rp, recs, this))
    return repo


def log(marm: Any, home: Path, repo: Path, text: str) -> int:
    rc, out, err, _ = marm.run(["log", text, "--json"], home, repo)
    assert rc == 0, err
    return int(json.loads(out)["id"])


def plant(marm: Any, home: Path, repos: list[Path]) -> dict[str, list[tuple[int, int]] | list[int]]:
    """Write the planted memories, round-robin over the projects; originals first."""
    dups: list[tuple[int, int]] = []
    revs: list[tuple[int, int]] = []
    controls: list[int] = []
    originals = []
    for i, (t, p, a, o) in enumerate(SUBJECTS):
        repo = repos[i % len(repos)]
        originals.append((i, repo, log(marm, home, repo, ORIGINAL.format(t=t, p=p))))
    for i, repo, orig in originals:
        t, p, a, o = SUBJECTS[i]
        o2 = SUBJECTS[(i + 7) % len(SUBJECTS)][0]
        if i % 2 == 0:
            dups.append((orig, log(marm, home, repo, DUPLICATES[(i // 2) % len(DUPLICATES)].format(t=t, p=p))))
            controls.append(log(marm, home, repo, DUP_CONTROLS[(i // 2) % len(DUP_CONTROLS)].format(t=t, p=p, a=a, o=o)))
        else:
            revs.append((orig, log(marm, home, repo, REVERSALS[(i // 2) % len(REVERSALS)].format(t=t, p=p, a=a))))
        controls.append(log(marm, home, repo, REV_CONTROLS[i % len(REV_CONTROLS)].format(t=t, p=p, o=o, o2=o2)))
    return {"dups": dups, "revs": revs, "controls": controls}


def queue(home: Path) -> list[tuple[str, int, int | None, str]]:
    conn = sqlite3.connect(f"file:{home / 'marm.db'}?mode=ro", uri=True)
    try:
        return list(conn.execute("SELECT kind, old_id, new_id, state FROM hygiene_queue"))
    finally:
        conn.close()


def score_flags(planted: dict, rows: list[tuple[str, int, int | None, str]]) -> dict[str, Any]:
    pairs = {(kind, frozenset((a, b))) for kind, a, b, _ in rows if b is not None}
    revs = {(kind, a, b) for kind, a, b, _ in rows}
    dup_hit = sum(("duplicate", frozenset(p)) in pairs for p in planted["dups"])
    rev_hit = sum(("contradiction", o, n) in revs for o, n in planted["revs"])
    controls = set(planted["controls"])
    right = {("duplicate", frozenset(p)) for p in planted["dups"]} | {
        ("contradiction", frozenset(p)) for p in planted["revs"]}
    planted_ids = {i for p in planted["dups"] + planted["revs"] for i in p}
    control_flagged = {i for _, a, b, _ in rows for i in (a, b) if i in controls}
    wrong = [r for r in rows if (r[1] in planted_ids or r[2] in planted_ids)
             and (r[0], frozenset((r[1], r[2]))) not in right and not ({r[1], r[2]} & controls)]
    others = [r for r in rows if not ({r[1], r[2]} & (controls | planted_ids))]
    checked = len(controls) + len(planted_ids)
    return {
        "duplicates_planted": len(planted["dups"]), "duplicates_flagged": dup_hit,
        "reversals_planted": len(planted["revs"]), "reversals_flagged": rev_hit,
        "flagged_share": (dup_hit + rev_hit) / max(1, len(planted["dups"]) + len(planted["revs"])),
        "controls": len(controls), "controls_flagged": len(control_flagged),
        "wrong_flags_on_planted": len(wrong),
        "false_flag_rate": (len(control_flagged) + len(wrong)) / max(1, checked),
        "flags_on_replayed_memories": len(others),
        "replayed_flags_by_kind_state": _count((r[0], r[3]) for r in others),
    }


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for k in items:
        out["/".join(k)] = out.get("/".join(k), 0) + 1
    return out


def remembered(sc: Any, marm: Any, home: Path, sessions: list[tuple[dict, Path]]) -> dict[str, str | None]:
    """{fact id: the kind of the first of the top 5 results that carries it, or None}."""
    found: dict[str, str | None] = {}
    for s, repo in sessions:
        for f in s.get("facts") or []:
            hits, _ = marm.recall(f["probe"], home, repo)
            found[f["id"]] = next((h.get("kind") or "?" for h in hits if sc.has_phrase(h.get("content"), f["must"])),
                                  None)
    return found


def chars_by_kind(stats: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for _, kind, _, content in stats["contents"]:
        out[kind or "?"] = out.get(kind or "?", 0) + len(content)
    return out


def compaction(sc: Any, marm: Any, home: Path, done: list[tuple[dict, Path]],
               rem_before: dict[str, str | None]) -> dict[str, Any]:
    """Compact every project's episodes (the replay has just happened) and measure."""
    stats = sc.store_stats(marm, home)
    for _, repo in done:
        rc, out, err, _ = marm.run(["compact", "--older-than", "0", "--json"], home, repo, timeout=600)
        assert rc == 0, err
    after = sc.store_stats(marm, home)
    rem_after = remembered(sc, marm, home, done)
    hit_before, hit_after = sum(v is not None for v in rem_before.values()), sum(v is not None for v in rem_after.values())
    f: dict[str, Any] = {
        "chars_before_compact": stats["chars"], "chars_after_compact": after["chars"],
        "chars_ratio": round(after["chars"] / max(1, stats["chars"]), 3),
        "chars_by_kind_before": chars_by_kind(stats), "chars_by_kind_after": chars_by_kind(after),
        "episodes_before": stats["kinds"].get("episode", 0), "episodes_after": after["kinds"].get("episode", 0),
        "summaries": after["kinds"].get("summary", 0),
        "remembered_at5_before": round(hit_before / max(1, len(rem_before)), 3),
        "remembered_at5_after": round(hit_after / max(1, len(rem_after)), 3),
        "facts": len(rem_before),
        # the facts compaction lost (with the kind that carried them before) and gained
        "facts_lost": {k: v for k, v in rem_before.items() if v is not None and rem_after.get(k) is None},
        "facts_gained": {k: v for k, v in rem_after.items() if v is not None and rem_before.get(k) is None},
    }
    f["remembered_at5_drop"] = round(f["remembered_at5_before"] - f["remembered_at5_after"], 3)
    return f


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scorer", required=True, type=Path, help="path of replay_sessions.py")
    ap.add_argument("--data", required=True, type=Path, help="sessions-dev.json")
    ap.add_argument("--only", default=None, help="session ids, comma-separated (a subset)")
    ap.add_argument("--keep", default=None, type=Path, help="keep the store and repositories under DIR")
    ap.add_argument("--from", dest="from_", default=None, type=Path, metavar="DIR",
                    help="measure only the compaction, on the store a --keep run left under DIR")
    ap.add_argument("--json", action="store_true", help="(the JSON line is always printed last)")
    a = ap.parse_args()
    if not a.data.is_file() or not a.scorer.is_file():
        print(f"skipped: {a.data} or {a.scorer} not found", file=sys.stderr)
        return 0
    sc = load_scorer(a.scorer.resolve())
    data = json.loads(a.data.read_text(encoding="utf-8"))
    sessions = [s for s in data["sessions"] if not a.only or s["id"] in a.only.split(",")]
    marm = sc.Marm(str(Path(sys.executable).with_name("marm")), {})
    hooks, hooks_from = sc.discover_hooks(marm)
    figures: dict[str, Any] = {"sessions": [s["id"] for s in sessions], "hooks_from": hooks_from}
    if a.from_:
        return compaction_only(sc, marm, a.from_.resolve(), sessions, figures)
    work = a.keep.resolve() if a.keep else Path(tempfile.mkdtemp(prefix="marm-hygiene-"))
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.time()
        done = []
        for s in sessions:
            t = time.time()
            sdir = work / s["id"]
            sdir.mkdir(exist_ok=True)
            repo = replay_twice(sc, s, a.data.parent, marm, hooks, home, sdir)
            done.append((s, repo))
            print(f"{s['id']}: replayed twice ({time.time() - t:.0f}s)", flush=True)
        figures["drain"] = sc.settle(marm, home, done[-1][1], True)
        figures["replay_s"] = round(time.time() - t0, 1)
        before = sc.store_stats(marm, home)
        rem_before = remembered(sc, marm, home, done)
        t = time.time()
        planted = plant(marm, home, [repo for _, repo in done])
        rc, out, err, wall = marm.run(["drain", "--json"], home, done[0][1], timeout=1800)
        assert rc == 0, err
        figures["plant_and_sweep_s"] = round(time.time() - t, 1)
        figures["sweep"] = json.loads(out).get("sweeps", {}).get("hygiene")
        figures.update(score_flags(planted, queue(home)))
        figures.update({"memories_replayed": before["memories"], "chars_replayed": before["chars"]})
        if a.keep:
            shutil.copytree(home, work / "home-replayed", dirs_exist_ok=True)
        figures.update(compaction(sc, marm, home, done, rem_before))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    f = figures
    print(f"\nstore: {f['memories_replayed']} memories, {f['chars_replayed']:,} chars after replaying "
          f"{len(sessions)} sessions twice ({f['replay_s']}s)")
    print(f"planted duplicates flagged {f['duplicates_flagged']}/{f['duplicates_planted']}, reversals flagged "
          f"{f['reversals_flagged']}/{f['reversals_planted']}: {f['flagged_share']:.0%} (target >= 90%)")
    print(f"false flags: controls {f['controls_flagged']}/{f['controls']}, wrong flags on planted "
          f"{f['wrong_flags_on_planted']}: {f['false_flag_rate']:.1%} (target <= 5%)")
    print(f"flags on the replayed memories themselves: {f['flags_on_replayed_memories']} "
          f"{f['replayed_flags_by_kind_state']}")
    report_compaction(f)
    print(json.dumps({"bench": "hygiene", **f}))
    return 0


def compaction_only(sc: Any, marm: Any, kept: Path, sessions: list[dict], figures: dict[str, Any]) -> int:
    """``--from DIR``: compact a copy of the store a --keep run left just before compaction."""
    source = kept / "home-replayed"
    if not source.is_dir():
        print(f"skipped: {source} not found (a --keep run leaves it)", file=sys.stderr)
        return 0
    work = Path(tempfile.mkdtemp(prefix="marm-hygiene-from-"))
    try:
        home = work / "home"
        shutil.copytree(source, home)
        done = [(s, kept / s["id"] / "repo") for s in sessions if (kept / s["id"] / "repo").is_dir()]
        figures.update(compaction(sc, marm, home, done, remembered(sc, marm, home, done)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report_compaction(figures)
    print(json.dumps({"bench": "hygiene", "from": "kept store", **figures}))
    return 0


def report_compaction(f: dict[str, Any]) -> None:
    print(f"compaction: {f['chars_before_compact']:,} -> {f['chars_after_compact']:,} chars ({f['chars_ratio']:.0%}, "
          f"target <= 50%); episodes {f['episodes_before']} -> {f['episodes_after']}, {f['summaries']} summaries")
    print(f"remembered@5 {f['remembered_at5_before']:.3f} -> {f['remembered_at5_after']:.3f} "
          f"(drop {f['remembered_at5_drop']:.3f}, target <= 0.02) over {f['facts']} facts")
    print(f"characters by kind: {f['chars_by_kind_before']} -> {f['chars_by_kind_after']}")
    print(f"facts lost by compaction: {f['facts_lost']}; gained: {f['facts_gained']}")


if __name__ == "__main__":
    sys.exit(main())
