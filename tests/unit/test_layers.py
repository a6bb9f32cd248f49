"""The import graph of marm: no cycle, and every import points down a layer.

The layers, top to bottom (the README's layout section repeats this list). A module may
import its own layer and any layer below, never one above. Function-local imports count
like any other (grimp reads every import statement): such an import is for start-up
cost, never a way to hide a cycle.

    entry      marm.__main__, marm.cli, marm.completion.build and marm.completion.__main__
               (the completion table, read off the CLI)
    face ops   marm.ops.agents (``marm hook``, ``marm init``), marm.ops.serve (``marm mcp``),
               marm.ops.view (``marm view``): the ops that start a face
    faces      marm.hooks, marm.mcp_server, marm.mcp_stdio, marm.install, marm.view
    ops        marm.ops (every other op, the registry, shared parameters and results),
               marm.importers (what ``marm import`` reads from other tools), marm.sync (replication)
    parts      marm.capture, marm.recall, marm.concepts, marm.code, marm.embed, marm.drain,
               marm.hygiene (duplicates, reversals, staleness, compaction)
    context    marm.context (the invocation's Ctx)
    store      marm.store (the only SQL)
    base       marm (the package), marm.completion (shell scripts, a TAB's answer), marm.config, marm.configfile,
               marm.errors, marm.redact, marm.scope, marm.text
"""

from __future__ import annotations

import grimp
import pytest

LAYERS: tuple[tuple[str, ...], ...] = (
    ("marm.__main__", "marm.cli", "marm.completion.build", "marm.completion.__main__"),
    ("marm.ops.agents", "marm.ops.serve", "marm.ops.view"),
    ("marm.hooks", "marm.mcp_server", "marm.mcp_stdio", "marm.install", "marm.view"),
    ("marm.ops", "marm.importers", "marm.sync"),
    ("marm.capture", "marm.recall", "marm.concepts", "marm.code", "marm.embed", "marm.drain",
     "marm.hygiene"),
    ("marm.context",),
    ("marm.store",),
    ("=marm", "marm.completion", "marm.config", "marm.configfile", "marm.errors", "marm.redact", "marm.scope", "marm.text"),
)

#: Hooks and the MCP server call ops, never the store or a part directly. They may name
#: the records ops hand out (``marm.store.records``).
FACES = ("marm.hooks", "marm.mcp_server", "marm.mcp_stdio")
FACES_MAY_NOT_IMPORT = ("marm.store", "marm.capture", "marm.recall", "marm.concepts", "marm.code", "marm.embed", "marm.drain")
FACES_MAY_IMPORT = {
    "marm.store.records": "the typed records ops return",
    # The injection gate reads a prompt's words and shape the way recall does: pure
    # functions over text, no store.
    "marm.recall.lexical": "word splitting and stopwords",
    "marm.recall.shape": "whether a query is literal",
}


def _matches(module: str, entry: str) -> bool:
    if entry.startswith("="):
        return module == entry[1:]
    return module == entry or module.startswith(entry + ".")


def _layer(module: str) -> int:
    """Index of the layer ``module`` belongs to (the most specific entry wins)."""
    best: tuple[int, int] | None = None
    for index, layer in enumerate(LAYERS):
        for entry in layer:
            if _matches(module, entry) and (best is None or len(entry) > best[0]):
                best = (len(entry), index)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS (and to the README)")
    return best[1]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("marm", include_external_packages=False)


def _edges(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    return sorted((m, i) for m in graph.modules for i in graph.find_modules_directly_imported_by(m))


def test_the_graph_is_read(graph):
    edges = _edges(graph)
    assert len(graph.modules) > 50 and len(edges) > 150  # a broken build_graph cannot pass empty
    assert ("marm.cli", "marm.ops") in edges


def test_every_module_has_a_layer(graph):
    for module in graph.modules:
        _layer(module)


#: Upward imports that are known and owned, each with its reason (keep this short).
UPWARD_ALLOWED = {
    ("marm.ops.system", "marm.install"): "doctor checks the agents' trust of what init wrote",
}


def test_no_import_points_up_a_layer(graph):
    upward = [f"{m} -> {i}" for m, i in _edges(graph) if _layer(i) < _layer(m) and (m, i) not in UPWARD_ALLOWED]
    assert upward == []


def test_faces_call_ops_not_the_store(graph):
    reaching = [f"{m} -> {i}" for m, i in _edges(graph)
                if any(_matches(m, f) for f in FACES) and i not in FACES_MAY_IMPORT
                and any(_matches(i, b) for b in FACES_MAY_NOT_IMPORT)]
    assert reaching == []


def test_no_import_cycle(graph):
    cycles = []
    for importer, imported in _edges(graph):
        back = graph.find_shortest_chain(importer=imported, imported=importer)
        if back:
            cycles.append(" -> ".join((importer, *back)))
    assert cycles == []


def test_the_checks_catch_what_they_are_for():
    """The rules themselves: an upward import and a face reaching the store are seen."""
    assert _layer("marm.store.code_graph") > _layer("marm.concepts.model")
    assert _layer("marm.ops.agents") < _layer("marm.hooks.run") < _layer("marm.ops.memory")
    assert _layer("marm") == _layer("marm.errors") == len(LAYERS) - 1
    assert any(_matches("marm.store.memories", b) for b in FACES_MAY_NOT_IMPORT)
