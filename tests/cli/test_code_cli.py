"""`marm code ...` through the CLI, in-process, on the fixture repository."""

from __future__ import annotations

import pytest

from tests.code_repo import write_repo
from tests.helpers import git_init, invoke_marm


@pytest.fixture
def marm():
    return invoke_marm


@pytest.fixture
def repo(tmp_path, marm):
    root = write_repo(tmp_path / "repo")
    indexed = marm("code", "index", cwd=root / "pkg")
    assert indexed.code == 0, indexed.err
    data = indexed.json()
    assert data["repo"] == str(root) and data["parsed"] == 12 and data["full"]
    return root


def test_lookup_trace_architecture(repo, marm):
    look = marm("code", "lookup", "helper", cwd=repo).json()
    where = {s["qname"]: (s["location"], s["snippet"]) for s in look["symbols"]}
    assert where["pkg.util.helper"] == ("pkg/util.py:4", "def helper(x):\n    return x + 1")
    assert where["pkg.other.helper"][0] == "pkg/other.py:1"
    files = marm("code", "lookup", "src/main", cwd=repo).json()["files"]
    assert [f["path"] for f in files] == ["web/src/main.ts"]
    trace = marm("code", "trace", "main", "--direction", "callees", "--depth", "1", cwd=repo).json()
    steps = {(s["qname"], s["site"], s["rule"]) for s in trace["steps"] if s["depth"] == 1}
    assert ("pkg.util.helper", "pkg/app.py:6", "import-alias") in steps
    assert not any(q == "pkg.other.helper" for q, _, _ in steps)
    text = marm("code", "trace", "run", "--text", cwd=repo)
    assert text.code == 0 and "<- web/src/view.View  web/src/view.tsx:3" in text.out
    arch = marm("code", "architecture", cwd=repo).json()
    assert arch["files"] == 12 and {p["path"] for p in arch["packages"]} >= {"pkg", "web/src"}
    assert arch["central"] and arch["languages"]["python"] > 0 and arch["languages"]["tsx"] > 0
    assert any(s["qname"] == "pkg.app.main" for s in arch["entry_points"])


def test_impact_of_a_symbol_and_of_a_diff(repo, marm):
    hit = marm("code", "impact", "pkg.util.helper", cwd=repo).json()
    first = hit["impacted"][0]
    assert first["distance"] == 1 and first["qname"] in {
        "pkg.app.main",
        "pkg.starred.use_star",
        "pkg.util.Base.step",
        "pkg.app",
    }
    assert "pkg.other.unrelated" not in {i["qname"] for i in hit["impacted"]}
    util = repo / "pkg/util.py"
    util.write_text(util.read_text().replace("return x + 1", "return x + 2"))
    assert marm("code", "index", cwd=repo).json()["parsed"] == 1
    since = marm("code", "impact", "--since", "HEAD", cwd=repo).json()
    assert since["changed_files"] == ["pkg/util.py"] and since["targets"] == ["pkg.util.helper"]
    impacted = {i["qname"]: i for i in since["impacted"]}
    assert impacted["pkg.app.main"]["site"] == "pkg/app.py:6"
    assert "pkg.other.unrelated" not in impacted
    both = marm("code", "impact", "helper", "--since", "HEAD", cwd=repo)
    assert both.code == 2 and "one of them" in both.err


def test_projects_forget_and_errors(repo, tmp_path, marm):
    projects = marm("code", "projects", cwd=tmp_path).json()["projects"]
    assert [(p["path"], p["files"]) for p in projects] == [(str(repo), 12)]
    unindexed = git_init(tmp_path / "other")
    missing = marm("code", "lookup", "helper", cwd=unindexed)
    assert missing.code == 3 and "not indexed" in missing.err
    outside = tmp_path / "plain"
    outside.mkdir()
    assert marm("code", "index", cwd=outside).code == 2
    assert marm("code", "trace", "no_such_thing", cwd=repo).code == 3
    forgot = marm("code", "forget", str(repo), cwd=tmp_path)
    assert forgot.code == 0, forgot.err
    assert marm("code", "projects", cwd=tmp_path).json()["projects"] == []
    assert marm("code", "lookup", "helper", cwd=repo).code == 3
    assert marm("code", "forget", str(repo), cwd=tmp_path).code == 3
