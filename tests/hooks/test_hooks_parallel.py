"""50 stop hooks at once: 50 distinct captures, none lost; the same 50 again: none doubled.

Each is a real ``python -m marm hook stop`` process whose time budget (the safety net of
``marm.hooks.run.BUDGET``, which also bounds its wait for the write lock) is widened
first: 55 Python processes on a machine another job loads can take longer than 8 s, and
then a hook gives up and fails open, as it should. What this test checks is that writers
at once lose and double nothing, not how fast a loaded machine runs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.hooks.payloads import payload, seed, stored

N = 50
#: ``python -m marm hook stop --agent claude`` with the stop budget widened to 120 s.
HOOK = ("import runpy, sys\n"
        "from marm.hooks import run\n"
        "run.BUDGET['stop'] = 120.0\n"
        "sys.argv = ['marm', 'hook', 'stop', '--agent', 'claude']\n"
        "runpy.run_module('marm', run_name='__main__', alter_sys=True)\n")


def fire(payloads: list[dict]) -> list[subprocess.CompletedProcess]:
    procs = [
        subprocess.Popen([sys.executable, "-c", HOOK],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ))
        for _ in payloads
    ]
    for proc, p in zip(procs, payloads, strict=True):
        proc.stdin.write(json.dumps(p).encode())
        proc.stdin.close()
    results = []
    for proc in procs:
        out, err = proc.stdout.read(), proc.stderr.read()
        results.append(subprocess.CompletedProcess(proc.args, proc.wait(timeout=120), out, err))
    return results


@pytest.mark.slow
@pytest.mark.alone  # 55 processes at once: not beside another test's hooks and their budgets
def test_fifty_parallel_stops_store_fifty_captures_once(tmp_path, marm_home):
    p = seed(tmp_path)
    payloads = [
        payload("claude", "stop", p.root, session_id=f"sess-{i % 7}",
                last_assistant_message=f"Done. We decided to cap the retry queue at {i} jobs per "
                                       f"worker instead of unbounded growth (change {i}).")
        for i in range(N)
    ]
    # round 0: the 50 payloads plus five of them fired twice at the same moment;
    # round 1: all 50 again
    for round_, batch in enumerate((payloads + payloads[:5], payloads)):
        results = fire(batch)
        assert all(r.returncode == 0 for r in results)
        assert [r.stderr for r in results if r.stderr] == []
        assert all(r.stdout == b"" for r in results)
        captured = [m for m in stored(marm_home) if m.source == "hook:stop" and m.kind == "episode"]
        assert len(captured) == N, f"round {round_}"
        assert sorted(int(m.content.split(" at ")[1].split()[0]) for m in captured) == list(range(N))
        assert all(m.project == str(p.root.resolve()) for m in captured)
