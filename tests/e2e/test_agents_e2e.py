"""The real agent CLIs (Claude Code, Codex CLI, Gemini CLI from npm, pinned in
``.ci/agents``) run one non-interactive session each, wired by ``marm init`` in a
temporary HOME, against the scripted model server in ``mock_model`` on 127.0.0.1 with a
dummy key: no real API is ever called. What reached the model is asserted from the
requests the mock received; what marm kept, from marm's store afterwards.

The script of each session: the model calls marm's recall tool over MCP, then runs a
shell command that fails, then answers with a decision. So one session shows the
SessionStart briefing and the prompt's memories in the model's input, marm's MCP tools
listed and a tool call round-tripping, a failed command captured, and the Stop hook
capturing the decision.

Without the CLIs (npm unreachable, no node) every test here skips and says why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the backport marm depends on there
    import tomli as tomllib  # type: ignore[no-redef]

from tests.e2e.mock_model import MockModel, Reply, Turn


REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".agents" / "node_modules" / ".bin"
CLI = {"claude": "claude", "codex": "codex", "gemini": "gemini"}
#: Seconds one agent session may take (a normal run takes 5-15 s).
SESSION_SECONDS = 150
#: Seconds an agent waits for marm's MCP server to start before it goes on without its
#: tools (Codex's default is 10, Claude Code's 30): the suite runs on every core beside
#: other tests, where a Python start-up can take longer than that.
MCP_START_SECONDS = 60

BRIEFED = "DECISION: use idempotency keys on the payment webhook"
RECALLED = "NOTE: the flaky upload test came from a shared tmp dir under /var/tmp"
PROMPT = "why was the upload test flaky?"
FAILING = "ls /nonexistent-marm-e2e-dir"
DECIDED = "DECISION: keep three retries on the e2e upload check"


def _missing(agent: str) -> str | None:
    if not (BIN / CLI[agent]).exists():
        log = REPO / ".agents" / "npm.log"
        why = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        return (f"{CLI[agent]} is not installed in .agents/ (run .ci/agents; it needs node >= 20 and "
                f"npm with the registry reachable){': ' + why[0] if why else ''}")
    if shutil.which("node") is None:
        return "node is not on PATH"
    return None


def _tool(turn: Turn, *names: str) -> str | None:
    return next((t for t in turn.tools if any(t == n or t.endswith(n) for n in names)), None)


def script(turn: Turn) -> Reply:
    """recall over MCP -> a failing shell command -> a decision."""
    if not turn.main:
        return Reply(text='{"complexity_reasoning": "simple", "complexity_score": 5}'
                     if turn.protocol == "gemini" else "ok")
    done = len(turn.tool_results)
    recall = _tool(turn, "marm_smart_recall")
    if done == 0 and recall:
        return Reply(tool=recall, args={"query": "upload test"})
    if done <= 1:
        if turn.protocol == "anthropic":
            return Reply(tool="Bash", args={"command": FAILING, "description": "list a folder"})
        if turn.protocol == "openai":
            return Reply(tool="exec_command", args={"cmd": FAILING})
        return Reply(tool="run_shell_command", args={"command": FAILING})
    return Reply(text=DECIDED)


@dataclass
class Session:
    mock: MockModel
    proc: subprocess.CompletedProcess[str]
    work: Path
    env: dict[str, str]
    seconds: float

    def marm(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "marm", *args], cwd=self.work, env=self.env,
                              capture_output=True, text=True, timeout=60)


def _marm(work: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "marm", *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc


def _wait_for_drains(work: Path, env: dict[str, str]) -> None:
    """The session-end hook starts a detached drain: let it finish before the temp dir goes.
    Its lease is a file lock, which this process waits on (instead of starting a ``marm
    drain`` every half second to be told it is taken); then one drain of its own takes what
    is left, again after the lock if the detached one took the lease in between."""
    from filelock import FileLock, Timeout

    from marm.store.leases import lock_path

    path = lock_path(Path(env["MARM_HOME"]), "drain")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if path.parent.is_dir():
            try:
                with FileLock(str(path)).acquire(timeout=max(0.1, deadline - time.monotonic())):
                    pass
            except Timeout:
                return
        proc = subprocess.run([sys.executable, "-m", "marm", "drain", "--json", "--max-seconds", "60"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=120)
        if proc.returncode != 6:  # 6: another drain holds the lease
            return


def run_session(agent: str, tmp_path: Path, alone: Callable[[], AbstractContextManager[None]],
                before_init: Callable[[Path], None] | None = None) -> Session:
    """One session of ``agent``; ``before_init(home)`` writes the user's own config first.
    Under xdist the agent runs with no other test beside it (``alone``, tests/conftest.py):
    an agent that finds marm's MCP server still starting goes on without its tools, which a
    loaded machine made happen. Its set-up and the checks after it share the machine."""
    missing = _missing(agent)
    if missing:
        pytest.skip(missing)
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    env = {
        "HOME": str(home), "MARM_HOME": str(tmp_path / "marm"),
        "PATH": os.pathsep.join([str(BIN), str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1",
    }
    _marm(work, env, "log", BRIEFED)
    _marm(work, env, "log", "--kind", "note", RECALLED)
    if agent == "gemini":
        # The user's own settings, with a comment (Gemini reads JSON with comments), and the
        # one step init asks of the user: trust the project folder.
        (home / ".gemini").mkdir()
        (home / ".gemini" / "settings.json").write_text(
            '{\n  // the user\'s own\n  "security": {"auth": {"selectedType": "gemini-api-key"}},\n}\n')
        (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(work): "TRUST_FOLDER"}))
    if before_init is not None:
        before_init(home)
    init = _marm(work, env, "init", f"--{agent}", "--mcp", "--json")
    assert {c["action"] for c in json.loads(init.stdout)["changes"]} <= {"created", "updated"}

    with MockModel(script, max_requests=40, max_seconds=SESSION_SECONDS + 30) as mock:
        run_env = dict(env)
        if agent == "claude":
            run_env |= {"ANTHROPIC_BASE_URL": mock.url, "ANTHROPIC_API_KEY": "dummy-key",
                        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                        "MCP_TIMEOUT": str(MCP_START_SECONDS * 1000)}
            cmd = ["claude", "-p", PROMPT, "--output-format", "json",
                   "--allowedTools", "mcp__marm__marm_smart_recall", "Bash(ls:*)"]
        elif agent == "codex":
            run_env |= {"MOCK_MODEL_KEY": "dummy-key"}
            provider = (f'model_providers.mock={{name="mock", base_url="{mock.url}/v1", '
                        f'env_key="MOCK_MODEL_KEY", wire_api="responses"}}')
            # --dangerously-bypass-hook-trust: this run's stand-in for trusting the hooks in /hooks
            cmd = ["codex", "exec", "--dangerously-bypass-hook-trust", "-c", provider,
                   "-c", "model_provider=mock", "-c", "model=gpt-5",
                   "-c", f"mcp_servers.marm.startup_timeout_sec={MCP_START_SECONDS}", PROMPT]
        else:
            run_env |= {"GEMINI_API_KEY": "dummy-key", "GOOGLE_GEMINI_BASE_URL": mock.url}
            cmd = ["gemini", "-p", PROMPT, "--yolo", "--output-format", "json"]
        with alone():
            start = time.monotonic()
            try:
                proc = subprocess.run(cmd, cwd=work, env=run_env, capture_output=True, text=True,
                                      timeout=SESSION_SECONDS, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired as exc:
                pytest.fail(f"{agent} did not finish in {SESSION_SECONDS}s; stderr: {exc.stderr!r}")
            seconds = time.monotonic() - start
    _wait_for_drains(work, env)
    return Session(mock, proc, work, env, seconds)


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_real_agent_session_with_marm(agent, tmp_path, alone):
    s = run_session(agent, tmp_path, alone)
    print(f"{agent}: session {s.seconds:.1f}s, {len(s.mock.requests)} model requests")
    print("\n".join(line for line in s.proc.stderr.splitlines() if line.startswith("hook:")))
    assert s.proc.returncode == 0, f"{agent} exited {s.proc.returncode}: {s.proc.stderr[-2000:]}"
    main = [r for r in s.mock.model_requests() if "marm_smart_recall" in r.text]
    assert main, f"no request listed marm's tools; paths: {[r.path for r in s.mock.requests]}"

    # MCP: the very first request that offers tools lists marm's, and the call round-trips
    first = next(r for r in s.mock.model_requests()
                 if any(k in r.text for k in ('"tools"', "functionDeclarations")) and PROMPT in r.text)
    assert "marm_smart_recall" in first.text and "marm_log_entry" in first.text
    assert RECALLED in main[-1].text

    # SessionStart's briefing and the prompt's memories reached the model, next to the prompt
    assert BRIEFED in first.text
    with_prompt = [r for r in s.mock.model_requests() if PROMPT in r.text]
    assert any("shared tmp dir" in r.text and "retrieved data" in r.text for r in with_prompt)

    # Stop captured the turn: its episode (prompt and conclusion) and the decision it states
    decided = json.loads(s.marm("recall", "three retries e2e upload check", "--mode", "lexical",
                                "--json", "--detail", "3").stdout)
    kinds = {m["kind"] for m in decided["results"] if DECIDED[len("DECISION: "):] in m["content"]
             and m["source"] == "hook:stop"}
    assert {"episode", "decision"} <= kinds, decided["results"]

    # the failing command came back to the model, and marm kept it
    assert "nonexistent-marm-e2e-dir" in main[-1].text
    kept = json.loads(s.marm("recall", "/nonexistent-marm-e2e-dir", "--mode", "exact", "--json",
                             "--detail", "3").stdout)
    assert any(f"Failed: `{FAILING}`" in m["content"] and m["kind"] == "episode" for m in kept["results"]), kept


#: A user's Codex config.toml that already names marm, in each form TOML allows, beside
#: settings of their own (a comment, a top-level key, a profile) that must stay.
CODEX_MINE = '# my codex\nmodel_reasoning_effort = "low"\n'
CODEX_FORMS = {
    "table": CODEX_MINE + '\n[mcp_servers.marm]\ncommand = "old-marm"\nargs = ["mcp"]\n'
                          '\n[profiles.mine]\nmodel = "o4"\n',
    "inline": CODEX_MINE + 'mcp_servers = { marm = { command = "old-marm", args = ["mcp"] } }\n'
                           '\n[profiles.mine]\nmodel = "o4"\n',
    "dotted": CODEX_MINE + 'mcp_servers.marm.command = "old-marm"\nmcp_servers.marm.args = ["mcp"]\n'
                           '\n[profiles.mine]\nmodel = "o4"\n',
}


@pytest.mark.slow
@pytest.mark.parametrize("form", list(CODEX_FORMS))
def test_codex_starts_with_marm_updated_in_the_form_the_user_had(form, tmp_path, alone):
    def mine(home: Path) -> None:
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text(CODEX_FORMS[form])

    s = run_session("codex", tmp_path, alone, before_init=mine)
    text = (Path(s.env["HOME"]) / ".codex" / "config.toml").read_text()
    config = tomllib.loads(text)  # it parses: a second marm would be a duplicate key
    assert list(config["mcp_servers"]) == ["marm"], text
    assert config["mcp_servers"]["marm"]["command"] != "old-marm"
    assert config["mcp_servers"]["marm"]["args"][-1] == "mcp"
    assert text.startswith("# my codex\n") and config["model_reasoning_effort"] == "low"
    assert config["profiles"] == {"mine": {"model": "o4"}}, text
    # and the real Codex started with it: exit 0, marm's tools in its first request, a call made
    assert s.proc.returncode == 0, f"codex exited {s.proc.returncode}: {s.proc.stderr[-2000:]}"
    first = next(r for r in s.mock.model_requests() if PROMPT in r.text and '"tools"' in r.text)
    assert "marm_smart_recall" in first.text and "marm_log_entry" in first.text
    assert any(RECALLED in r.text for r in s.mock.model_requests())  # the recall tool call came back
