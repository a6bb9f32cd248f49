"""`marm view` without a browser: the file it writes, its scope and limits, the inert
data block, what it imports, and the served page's refusals (real subprocesses, real
HTTP requests)."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from marm.view.page import json_block
from tests.view.viewkit import ALPHA, BETA, GLOBAL, HOSTILE, RETRACTED, page_for, start_server

pytestmark = pytest.mark.slow  # subprocesses, and a concept drain once per module


def _data(path: Path) -> dict:
    html = path.read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="marm-data">(.*?)</script>', html, re.S)
    assert block, "the page carries its data block"
    return json.loads(block.group(1))


def test_json_block_is_inert_and_round_trips():
    value = {"s": "</script><script>alert(1)</script> & <!-- \u2028 \u2029 </textarea>"}
    text = json_block(value)
    assert "<" not in text and ">" not in text and "&" not in text
    assert "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == value


def test_the_page_is_private_self_contained_and_scoped(populated):
    run = populated.marm("view", "--text")
    assert run.code == 0, run.err
    path = Path(run.out.splitlines()[0])
    assert path.parent == Path(populated.env["MARM_HOME"]) / "view" and path.suffix == ".html"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    html = path.read_text(encoding="utf-8")
    # No network: nothing is loaded from anywhere, and the policy forbids it.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "connect-src 'none'" in html and "default-src 'none'" in html
    data = _data(path)
    contents = {m["content"] for m in data["memories"]}
    assert set(ALPHA) <= contents and GLOBAL in contents and RETRACTED in contents
    assert BETA not in contents  # another project's memory is not on this project's page
    assert data["total"] == len(data["memories"]) and data["left_out"] == 0
    # Stored raw, shipped raw: the hostile text is in the data exactly as written.
    assert set(HOSTILE) <= contents
    assert "<script>window.__pwned" not in html  # ... but never as markup in the file


def test_all_projects_limit_and_output(populated, tmp_path):
    out = tmp_path / "sub" / "page.html"
    run = populated.ok("view", "--all-projects", "--limit", "3", "-o", str(out))
    assert run["path"] == str(out) and out.is_file()
    data = _data(out)
    assert len(data["memories"]) == 3 and run["memories"] == 3
    total = len(populated.ids)
    assert data["total"] == total and data["left_out"] == total - 3 == run["left_out"]
    everything = _data(page_for(populated, "--all-projects"))
    assert {BETA, GLOBAL, *ALPHA} <= {m["content"] for m in everything["memories"]}
    assert populated.marm("view", "--limit", "0").code == 2


def test_view_imports_no_heavy_library(populated):
    probe = (
        "import json, sys\n"
        "sys.argv = ['marm', 'view']\n"
        "from marm.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = {'fastembed', 'onnxruntime', 'spacy', 'tree_sitter', 'mcp', 'numpy'}\n"
        "sys.stderr.write('HEAVY=' + json.dumps(sorted({m.split('.')[0] for m in sys.modules} & heavy)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=populated.alpha, capture_output=True,
                          text=True, env={**__import__("os").environ, **populated.env}, timeout=60)
    line = [x for x in proc.stderr.splitlines() if x.startswith("HEAVY=")]
    assert line, proc.stderr
    assert json.loads(proc.stdout)["memories"] > 0  # it did build the page
    assert json.loads(line[0][len("HEAVY="):]) == []


def _request(url: str, *, method: str = "GET", body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if r.headers.get_content_type() == "application/json"
                              else {"html": raw.decode()})
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_served_page_refuses_what_it_must_and_acts_through_the_registry(populated):
    target = populated.ids[ALPHA[1]]
    server = start_server(populated, "--idle", "60")
    try:
        base = f"http://127.0.0.1:{server.port}"
        own = {"Origin": base, "Content-Type": "application/json"}
        retract = json.dumps({"action": "retract", "args": {"id": target, "reason": "from the test"}}).encode()

        code, page = _request(server.url)
        assert code == 200 and "marm-data" in page["html"]
        assert _request(f"{base}/")[0] == 403                           # no token
        assert _request(f"{base}/?token=wrong")[0] == 403               # wrong token
        assert _request(f"{base}/api/data")[0] == 403
        assert _request(f"{base}/api/op?token={server.token}")[0] == 405  # actions are POST only
        assert _request(server.url, headers={"Host": f"evil.example:{server.port}"})[0] == 403
        # Each POST below is refused while the store keeps the memory active.
        for headers in ({"Content-Type": "application/json"},                       # no Origin
                        {**own, "Origin": "http://evil.example"},                    # another origin
                        {**own, "Sec-Fetch-Site": "cross-site"}):
            code, out = _request(f"{base}/api/op?token={server.token}", method="POST", body=retract,
                                 headers=headers)
            assert code == 403 and out["ok"] is False
        code, _ = _request(f"{base}/api/op", method="POST", body=retract, headers=own)  # no token
        assert code == 403
        code, out = _request(f"{base}/api/op?token={server.token}", method="POST", headers=own,
                             body=json.dumps({"action": "delete", "args": {"target": str(target)}}).encode())
        assert code == 200 and out["ok"] is False and "unknown action" in out["error"]
        assert populated.ok("show", str(target))["memory"]["status"] == "active"

        code, out = _request(f"{base}/api/op?token={server.token}", method="POST", body=retract, headers=own)
        assert code == 200 and out["ok"] is True, out
        assert populated.ok("show", str(target))["memory"]["status"] == "retracted"
        events = populated.ok("history", str(target))["events"]
        assert ("memory.retract", "view", "from the test") in [
            (e["action"], e["source"], e["reason"]) for e in events]
        assert {e["source"] for e in events} == {"cli", "view"}  # created by the CLI, retracted by the view
    finally:
        summary = server.stop()
        populated.ok("restore", str(target))
    assert server.proc.returncode == 0
    assert json.loads(summary)["served"]["reason"] == "interrupted"


def test_served_page_stops_when_idle(populated):
    server = start_server(populated, "--idle", "1")
    server.proc.wait(timeout=20)
    summary = json.loads(server.stop())
    assert server.proc.returncode == 0 and summary["served"]["reason"] == "idle for 1s"
