"""Incremental indexing builds the same graph as a full rebuild, and bad files are
reported and skipped without stopping the index."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from marm.code.index import index_tree
from marm.store import code_graph
from tests.code_repo import write_repo


def rebuild(root: Path, home: Path) -> dict:
    graph = code_graph.CodeGraph.open(home)
    try:
        index_tree(graph, root, full=True, workers=1)
        return graph.snapshot(graph.tree(str(root)).id)
    finally:
        graph.close()


def bump(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


EDITS = {
    "edit, delete, add": [
        (
            "write",
            "pkg/app.py",
            "from pkg.util import helper as h\nfrom pkg.other import helper\n\n\n"
            "def main():\n    h(2)\n    return helper(3)\n",
        ),
        ("delete", "web/src/other.ts", None),
        (
            "write",
            "pkg/extra.py",
            "from pkg.app import main\n\n\ndef again():\n    return main()\n",
        ),
    ],
    "a base class loses a method": [
        (
            "write",
            "pkg/util.py",
            '__all__ = ["helper", "Base"]\n\n\ndef helper(x):\n    return x\n\n\n'
            "class Base:\n    def run(self):\n        return 1\n",
        ),
    ],
    "a re-export chain changes its source": [
        ("write", "pkg/chain_b.py", "from pkg.chain_a2 import foo\n"),
    ],
    "the aliased target moves": [
        (
            "write",
            "pkg/util.py",
            'from pkg.other import helper\n__all__ = ["helper", "Base"]\n\n\n'
            "class Base:\n    def run(self):\n        return self.step()\n\n"
            "    def step(self):\n        return helper(1)\n",
        ),
        ("delete", "web/src/lib.ts", None),
        (
            "write",
            "web/src/lib/index.ts",
            "export function format(x: number): string { return ''; }\n"
            "export class Greeter { greet(n: string) { return format(1); } }\n",
        ),
    ],
}


#: Files some cases add before the first index: d imports bar from c, which re-exports
#: b's foo under that alias, which b imports from a.
CHAIN = {
    "pkg/chain_a.py": "def foo():\n    return 1\n",
    "pkg/chain_a2.py": "def foo():\n    return 2\n",
    "pkg/chain_b.py": "from pkg.chain_a import foo\n",
    "pkg/chain_c.py": "from pkg.chain_b import foo as bar\n",
    "pkg/chain_d.py": "from pkg.chain_c import bar\n\n\ndef use():\n    return bar()\n",
}


@pytest.mark.parametrize("case", list(EDITS))
def test_incremental_equals_full_rebuild(case, tmp_path, marm_home):
    root = write_repo(tmp_path / "repo")
    for path, text in CHAIN.items():
        (root / path).write_text(text, encoding="utf-8")
    graph = code_graph.CodeGraph.open(marm_home)
    first = index_tree(graph, root, workers=1)
    before = graph.snapshot(graph.tree(str(root)).id)
    for action, path, text in EDITS[case]:
        target = root / path
        if action == "delete":
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            bump(target, text)
    report = index_tree(graph, root, workers=1)
    assert not report.full and report.parsed == sum(1 for a, *_ in EDITS[case] if a == "write")
    assert report.parsed < first.parsed
    after = graph.snapshot(graph.tree(str(root)).id)
    graph.close()
    assert after != before  # the edit changed the graph...
    full = rebuild(root, tmp_path / "fresh-home")
    assert after["files"] == full["files"]
    assert after["symbols"] == full["symbols"]
    assert after["edges"] == full["edges"]  # ...exactly as a rebuild does
    assert len(after["edges"]) > 10
    if case == "a re-export chain changes its source":
        calls = {(a, b) for a, _, b, _, kind, *_ in after["edges"] if kind == "call"}
        assert ("pkg.chain_d.use", "pkg.chain_a2.foo") in calls
        assert ("pkg.chain_d.use", "pkg.chain_a.foo") not in calls


def test_incremental_edges_follow_the_edit(tmp_path, marm_home):
    root = write_repo(tmp_path / "repo")
    graph = code_graph.CodeGraph.open(marm_home)
    index_tree(graph, root, workers=1)
    tid = graph.tree(str(root)).id
    for action, path, text in EDITS["edit, delete, add"]:
        if action == "delete":
            (root / path).unlink()
        else:
            bump(root / path, text)
    index_tree(graph, root, workers=1)
    e = {(a, b, rule) for a, _, b, _, _, rule, _, _ in graph.snapshot(tid)["edges"]}
    assert ("pkg.app.main", "pkg.other.helper", "import") in e
    assert ("pkg.app.main", "pkg.util.helper", "import-alias") in e
    assert ("pkg.extra.again", "pkg.app.main", "import") in e
    assert not any("web/src/other" in a or "web/src/other" in b for a, b, _ in e)
    paths = {row[0] for row in graph.snapshot(tid)["files"]}
    assert "pkg/extra.py" in paths and "web/src/other.ts" not in paths
    graph.close()


def test_unchanged_reindex_parses_nothing(tmp_path, marm_home):
    root = write_repo(tmp_path / "repo")
    graph = code_graph.CodeGraph.open(marm_home)
    index_tree(graph, root, workers=1)
    before = graph.snapshot(1)
    (root / "pkg/app.py").touch()  # new mtime, same content: hashed, not parsed
    again = index_tree(graph, root, workers=1)
    assert again.parsed == 0 and again.unchanged == again.files == 12
    assert graph.snapshot(1) == before
    graph.close()


def test_bad_files_are_reported_and_skipped(tmp_path, marm_home):
    root = write_repo(tmp_path / "repo")
    (root / "blob.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    (root / "latin1.py").write_bytes("def caf\u00e9():\n    return 1\n".encode("latin-1"))
    (root / "dist").mkdir()
    line = "export function generated_{0}(a) {{ return a + {0}; }}\n"
    (root / "dist/bundle.js").write_text("".join(line.format(i) for i in range(100_000)))
    assert (root / "dist/bundle.js").stat().st_size > 5_000_000
    (root / "broken.py").write_text(
        "def ok():\n    return 1\n\ndef broken(:\n    pass\n\ndef after():\n    return ok()\n"
    )
    (root / "ignored").mkdir()
    (root / ".gitignore").write_text("ignored/\n")
    (root / "ignored/skip.py").write_text("def never(): pass\n")
    graph = code_graph.CodeGraph.open(marm_home)
    report = index_tree(graph, root, workers=1)
    reasons = {s["path"]: s["reason"] for s in report.skipped}
    assert reasons["blob.py"] == "binary file"
    assert reasons["latin1.py"].startswith("invalid UTF-8")
    assert "larger than" in reasons["dist/bundle.js"]
    assert [p["path"] for p in report.partial] == ["broken.py"]
    tid = graph.tree(str(root)).id
    names = {r[1] for r in graph.snapshot(tid)["symbols"]}
    assert {"broken.ok", "broken.after", "pkg.util.helper", "web/src/lib.Greeter"} <= names
    assert not any(n.startswith(("ignored", "blob", "latin1", "dist")) for n in names)
    assert report.parsed == 13  # the fixture's twelve files and broken.py
    again = index_tree(graph, root, workers=1)  # skipped files are not read again
    assert again.parsed == 0 and {s["path"] for s in again.skipped} == set(reasons)
    graph.close()


def test_parallel_parse_gives_the_same_graph(tmp_path, marm_home, monkeypatch):
    from marm.code import index as index_module

    root = write_repo(tmp_path / "repo")
    monkeypatch.setattr(index_module, "PARALLEL_MIN_FILES", 2)
    graph = code_graph.CodeGraph.open(marm_home)
    report = index_tree(graph, root, workers=2)
    assert report.workers == 2
    parallel = graph.snapshot(graph.tree(str(root)).id)
    graph.close()
    assert parallel == rebuild(root, tmp_path / "serial-home")
