"""``marm stats`` reads back exactly the hook runs a test makes (real ``marm hook``
subprocesses; ``marm stats`` itself in this process): counts per event, characters
injected, memories captured; the hook-run log is 0600 and bounded."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from marm.ops import hooklog
from marm.ops.stats import percentile
from tests.helpers import invoke_marm
from tests.hooks.payloads import hook, payload, seed, stored


def context(run) -> str:
    assert run.code == 0, run.err
    return json.loads(run.out)["hookSpecificOutput"]["additionalContext"] if run.out.strip() else ""


def test_stats_match_the_hook_runs(tmp_path, monkeypatch):
    # The prompts are recalled by their words: what is counted is the same, and no hook
    # loads the model, which on a loaded machine took a prompt past its 5 s budget.
    monkeypatch.setenv("MARM_INJECT_RECALL", "lexical")
    p = seed(tmp_path)
    home = Path(os.environ["MARM_HOME"])
    (p.other / ".marm.toml").write_text("memory = false\n")
    before = {m.id for m in stored(home)}
    chars = {"prompt": 0, "session-start": 0}
    for sid in ("s1", "s2"):
        chars["session-start"] += len(context(hook("claude", "session-start",
                                                   payload("claude", "session-start", p.root, session_id=sid))))
        chars["prompt"] += len(context(hook("claude", "prompt", payload("claude", "prompt", p.root, session_id=sid))))
        assert hook("claude", "stop", payload("claude", "stop", p.root, session_id=sid)).code == 0
    chars["prompt"] += len(context(hook("claude", "prompt", payload("claude", "prompt", p.root, session_id="s2",
                                                                    prompt="ok"))))  # trivial: nothing
    assert hook("claude", "prompt", payload("claude", "prompt", p.other, session_id="s3")).out == ""
    assert chars["prompt"] > 0 and chars["session-start"] > 0
    captured = [m for m in stored(home) if m.id not in before]
    assert captured and all(m.source == "hook:stop" for m in captured)

    every = invoke_marm("stats", "--json").json()
    assert every["runs"] == 8
    assert {e: v["count"] for e, v in every["events"].items()} == {"session-start": 2, "prompt": 4, "stop": 2}
    assert every["events"]["prompt"]["inactive"] == 1 and every["events"]["stop"]["inactive"] == 0
    assert every["injected"]["prompt"]["chars"] == chars["prompt"]
    assert every["injected"]["session-start"]["chars"] == chars["session-start"]
    assert every["injected"]["prompt"]["tokens"] == -(-chars["prompt"] // 4)
    assert every["captures"] == {"memories": len(captured), "sessions": 2, "per_session": round(len(captured) / 2, 2)}
    assert every["store"]["bytes_now"] > 0 and every["store"]["growth_bytes"] >= 0
    for e in every["events"].values():
        assert 0 < e["p50_ms"] <= e["p95_ms"]

    shop = invoke_marm("stats", "--project", str(p.root), "--since", "1h", "--json").json()
    assert shop["runs"] == 7 and shop["events"]["prompt"]["count"] == 3
    other = invoke_marm("stats", "--project", str(p.other), "--json").json()
    assert other["runs"] == 1 and other["events"] == {
        "prompt": {"count": 1, "inactive": 1, "p50_ms": other["events"]["prompt"]["p50_ms"],
                   "p95_ms": other["events"]["prompt"]["p95_ms"]}}
    assert other["injected"]["prompt"]["chars"] == 0
    text = invoke_marm("stats", "--text").out
    assert "prompt" in text and f"{chars['prompt']} characters" in text
    assert invoke_marm("stats", "--since", "soon").code != 0

    log = hooklog.log_path(home)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert len(log.read_text().splitlines()) == 8


def test_hook_log_rotates_and_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(hooklog, "MAX_BYTES", 2000)
    home = tmp_path / "h"
    for i in range(200):
        hooklog.append(home, {"event": "prompt", "chars": i, "ms": 1.0})
    kept = hooklog.read(home)
    assert kept[-1]["chars"] == 199 and 10 < len(kept) < 200   # the newest stay, the oldest went
    assert [r["chars"] for r in kept] == sorted(r["chars"] for r in kept)
    sizes = [p.stat().st_size for p in home.iterdir()]
    assert len(sizes) == 2 and all(s <= 2000 for s in sizes)
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in home.iterdir())


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95), percentile([], 50)) == (50.0, 95.0, 0.0)
