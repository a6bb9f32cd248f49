"""LoCoMo retrieval benchmark: does recall find the dialogue turns that answer a question?

Each conversation is ingested as its own project, one memory per turn, through the
same write path a user's write takes (``marm.ops.memory.write_memory``), with the
session's date as ``valid_from``. Then (hybrid mode) the embedding drain runs, and
each question of categories 1-4 gets one recall (top 5, scoped to its conversation)
through ``marm.recall.run``, the function the CLI's ``marm recall`` calls.

Scored per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop;
5 adversarial has no retrieval target): any-evidence hit@5, all-evidence hit@5,
evidence recall@5, MRR. Questions whose evidence ids are all malformed are skipped.

Beside them, the figures local no-LLM peers publish, from a second recall of the top 10:
session-level recall@10 (an evidence turn's session is among the sessions of the top 10
results) and turn-level recall@10 (the share of evidence turns among the top 10).

    python tests/bench/locomo.py --data ../shared/data/locomo-dev.json --mode hybrid --json

The data set (CC BY-NC 4.0) is never copied into the repository; without it the script
says so and exits 0. ``--home DIR`` keeps the ingested store there and reuses it on the
next run (handy when tuning fusion weights).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"^D(\d+):(\d+)$")


def parse_evidence(raw: list) -> list[str]:
    """Valid dia ids from an evidence list; malformed ones ("D", "D:11:26") are dropped."""
    out: list[str] = []
    for item in raw:
        for part in re.split(r"[;\s,]+", str(item)):
            if _DIA.match(part):
                out.append(part)
    return list(dict.fromkeys(out))


def session_date(text: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00'."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").isoformat()


def turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def _sessions(dia_ids: set[str]) -> set[str]:
    """The sessions dia ids belong to ("D3:5" -> "3")."""
    return {d[1:].split(":")[0] for d in dia_ids}


def ingest(ctx, data: list[dict]) -> dict[int, set[str]]:
    """Write every turn as a memory; return {memory id: dia ids whose text it holds}."""
    from marm.ops.memory import write_memory

    dia_of: dict[int, set[str]] = defaultdict(set)
    for conv in data:
        project = conv["sample_id"]
        c = conv["conversation"]
        n = 1
        while f"session_{n}" in c:
            when = session_date(c[f"session_{n}_date_time"])
            for turn in c[f"session_{n}"]:
                result = write_memory(ctx, turn_text(turn), project=project,
                                      session=f"{project}/session_{n}", valid_from=when)
                dia_of[result.id].add(turn["dia_id"])
            n += 1
    return dia_of


def evaluate(ctx, data: list[dict], dia_of: dict[int, set[str]], mode: str,
             dump: list[dict] | None = None) -> dict:
    from marm import recall
    from marm.ops.memory import memory_filter

    store = ctx.store()
    per: dict[int, dict[str, list[float]]] = {k: defaultdict(list) for k in CATEGORIES}
    skipped = 0
    latencies: list[float] = []
    modes_seen: set[str] = set()
    for conv in data:
        flt = memory_filter(ctx, project=conv["sample_id"], all_projects=False)
        for qa in conv["qa"]:
            cat = qa.get("category")
            if cat not in CATEGORIES:
                continue
            evidence = set(parse_evidence(qa.get("evidence", [])))
            if not evidence:
                skipped += 1
                continue
            t = time.perf_counter()
            outcome = recall.run(store, qa["question"], flt, 5, mode)
            latencies.append(time.perf_counter() - t)
            modes_seen.add(outcome.mode)
            found: set[str] = set()
            rr = 0.0
            for rank, hit in enumerate(outcome.hits, 1):
                turns = dia_of.get(hit.memory.id, set())
                if rr == 0.0 and turns & evidence:
                    rr = 1.0 / rank
                found |= turns
            covered = len(found & evidence)
            m = per[cat]
            m["any"].append(float(covered > 0))
            m["all"].append(float(covered == len(evidence)))
            m["recall"].append(covered / len(evidence))
            m["mrr"].append(rr)
            wide = recall.run(store, qa["question"], flt, 10, mode).hits
            found10 = set().union(*(dia_of.get(h.memory.id, set()) for h in wide))
            m["session@10"].append(float(bool(_sessions(found10) & _sessions(evidence))))
            m["turn@10"].append(len(found10 & evidence) / len(evidence))
            if dump is not None:
                dump.append({"conv": conv["sample_id"], "category": cat, "question": qa["question"],
                             "evidence": sorted(evidence), "rr": rr,
                             "top10": [{"dia": sorted(dia_of.get(h.memory.id, set())), "score": round(h.score, 4),
                                        "content": h.memory.content[:200]} for h in wide]})
    return {"per": per, "skipped": skipped, "latencies": latencies, "modes": sorted(modes_seen)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT / ".." / "shared" / "data" / "locomo-dev.json"))
    parser.add_argument("--mode", choices=("lexical", "hybrid"), default="hybrid")
    parser.add_argument("--home", help="keep (and reuse) the ingested store in this directory")
    parser.add_argument("--json", action="store_true", help="end with one JSON line (always printed)")
    parser.add_argument("--dump", help="write every question's evidence and top 10 to this JSON file "
                        "(it holds the data set's text: keep it out of the repository)")
    args = parser.parse_args()

    data_path = Path(args.data)
    if not data_path.is_file():
        print(f"skipped: LoCoMo data not found at {data_path} (pass --data PATH)")
        return 0
    data = json.loads(data_path.read_text())
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="marm-locomo-"))
    os.environ["MARM_HOME"] = str(home)
    work = Path(tempfile.mkdtemp(prefix="marm-locomo-cwd-"))

    from marm import drain
    from marm.context import Ctx

    ctx = Ctx(source="import", cwd=work, env=dict(os.environ))
    index = home / "locomo-dia.json"
    t0 = time.perf_counter()
    if index.is_file():
        dia_of = {int(k): set(v) for k, v in json.loads(index.read_text()).items()}
        print(f"reusing the store in {home} ({len(dia_of)} memories)")
    else:
        dia_of = ingest(ctx, data)
        index.write_text(json.dumps({k: sorted(v) for k, v in dia_of.items()}))
        turns = sum(len(v) for v in dia_of.values())
        print(f"ingested {turns} turns as {len(dia_of)} memories in {time.perf_counter() - t0:.1f}s")
    if args.mode == "hybrid":
        t1 = time.perf_counter()
        summary = drain.run(ctx, max_seconds=3600, kinds=["embed"], sweeps=False)
        done = summary.kinds["embed"].done
        if done:
            print(f"embedded {done} memories in {time.perf_counter() - t1:.1f}s")
    dump: list[dict] | None = [] if args.dump else None
    result = evaluate(ctx, data, dia_of, args.mode, dump)
    if args.dump:
        Path(args.dump).write_text(json.dumps(dump, indent=1))
    per = result["per"]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    print(f"\nmode {args.mode} (answered as {', '.join(result['modes'])}); "
          f"{result['skipped']} question(s) skipped for malformed evidence")
    print(f"{'category':<16}{'n':>5}{'any@5':>8}{'all@5':>8}{'recall@5':>10}{'MRR':>7}"
          f"{'sessR@10':>10}{'turnR@10':>10}")
    pooled: dict[str, list[float]] = defaultdict(list)
    for cat, name in CATEGORIES.items():
        m = per[cat]
        for key, xs in m.items():
            pooled[key].extend(xs)
        print(f"{f'{cat} {name}':<16}{len(m['any']):>5}{mean(m['any']):>8.3f}{mean(m['all']):>8.3f}"
              f"{mean(m['recall']):>10.3f}{mean(m['mrr']):>7.3f}"
              f"{mean(m['session@10']):>10.3f}{mean(m['turn@10']):>10.3f}")
    n = len(pooled["any"])
    print(f"{'overall 1-4':<16}{n:>5}{mean(pooled['any']):>8.3f}{mean(pooled['all']):>8.3f}"
          f"{mean(pooled['recall']):>10.3f}{mean(pooled['mrr']):>7.3f}"
          f"{mean(pooled['session@10']):>10.3f}{mean(pooled['turn@10']):>10.3f}")
    lat = sorted(result["latencies"])
    if lat:
        print(f"recall latency: median {statistics.median(lat) * 1000:.1f} ms, "
              f"p95 {lat[int(len(lat) * 0.95) - 1] * 1000:.1f} ms over {len(lat)} questions")
    print(json.dumps({
        "any_at_5": round(mean(pooled["any"]), 4), "all_at_5": round(mean(pooled["all"]), 4),
        "evidence_recall_at_5": round(mean(pooled["recall"]), 4), "mrr": round(mean(pooled["mrr"]), 4),
        "session_recall_at_10": round(mean(pooled["session@10"]), 4),
        "turn_recall_at_10": round(mean(pooled["turn@10"]), 4),
        "mode": args.mode, "questions": n,
        "by_category": {CATEGORIES[c]: round(mean(per[c]["any"]), 4) for c in CATEGORIES},
        "mrr_by_category": {CATEGORIES[c]: round(mean(per[c]["mrr"]), 4) for c in CATEGORIES},
    }))
    ctx.close()
    shutil.rmtree(work, ignore_errors=True)
    if not args.home:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
