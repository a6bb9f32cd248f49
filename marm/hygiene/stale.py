"""Staleness from the code graph: a memory that names files or symbols of an indexed
repository keeps a baseline of them (hash, lines, symbol names) from when it was first
checked; after an index run, a file that is gone or whose symbols or size changed
substantially flags the memory "may be stale", with what changed.

The code graph (``derived.db``) holds only the current index, so the baseline is kept
in the durable database; "substantially" is a share, not an edit count: a reformatted
file keeps its symbols and is left alone.
"""

from __future__ import annotations

import hashlib
from typing import Any

from marm.concepts.identifiers import find as identifiers
from marm.context import Ctx
from marm.store import code_graph, code_repos, hygiene, memories
from marm.store.code_graph import CodeGraph, FileFacts
from marm.store.db import now
from marm.store.records import Memory

#: A file "changed substantially": this share of its symbols added or removed, or its
#: length changed by this share.
SYMBOL_SHARE = 0.3
LINE_SHARE = 0.5


def _repos(ctx: Ctx, project: str | None) -> list[str]:
    return [r.path for r in code_repos.listing(ctx.store()) if project is not None and r.project == project]


def _files_named(cg: CodeGraph, tree_id: int, memory: Memory) -> set[str]:
    """Indexed files ``memory`` names: by path (or a unique file name), or by holding a
    symbol it names exactly."""
    found: set[str] = set()
    for ident in identifiers(memory.content):
        if ident.type == "file":
            rows = [f.path for f in cg.find_files(tree_id, ident.text, limit=5)
                    if f.path == ident.text or f.path.endswith("/" + ident.text)]
            if len(rows) == 1:
                found.add(rows[0])
        elif ident.type == "symbol" and len(ident.text) >= 4:
            rows = [s.path for s in cg.find_symbols(tree_id, ident.text, limit=3, exact_only=True)
                    if s.kind != "module"]
            if len(set(rows)) == 1:
                found.add(rows[0])
    return found


class Baselines:
    """Keeps the code state new memories name, with one code-graph connection per sweep
    (opened only once a memory of an indexed project comes by)."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.repos: dict[str | None, list[str]] = {}
        self.cg: CodeGraph | None = None

    def close(self) -> None:
        if self.cg is not None:
            self.cg.close()

    def add(self, memory: Memory) -> int:
        """Keep the code state ``memory`` names (nothing when it names none); how many files."""
        if memory.project not in self.repos:
            self.repos[memory.project] = _repos(self.ctx, memory.project)
        repos = self.repos[memory.project]
        if not repos or not code_graph.exists(self.ctx.home):
            return 0
        if self.cg is None:
            self.cg = CodeGraph.open(self.ctx.home)
        return _keep(self.ctx, self.cg, repos, memory)


def _keep(ctx: Ctx, cg: CodeGraph, repos: list[str], memory: Memory) -> int:
    refs: list[hygiene.CodeRef] = []
    for root in repos:
        tree = cg.tree(root)
        if tree is None:
            continue
        facts = cg.file_facts(tree.id, sorted(_files_named(cg, tree.id, memory)))
        refs.extend(hygiene.CodeRef(memory.id, root, path, f.hash, f.names, f.lines, now())
                    for path, f in facts.items())
    if refs:
        store = ctx.store()
        with store.write():
            hygiene.add_code_refs(store, refs)
    return len(refs)


def _change(ref: hygiene.CodeRef, current: FileFacts | None) -> dict[str, Any] | None:
    """What changed in one file since the baseline, when it is substantial."""
    if current is None:
        return {"path": ref.path, "change": "deleted or no longer indexed"}
    lines, names = current.lines, current.names
    if current.hash == ref.file_hash:
        return None
    before, after = set(ref.symbols), set(names)
    added, removed = sorted(after - before), sorted(before - after)
    symbol_share = (len(added) + len(removed)) / max(1, len(before))
    line_share = abs(lines - ref.lines) / max(1, ref.lines)
    if symbol_share < SYMBOL_SHARE and line_share < LINE_SHARE:
        return None
    return {"path": ref.path, "change": f"{len(added)} symbols added, {len(removed)} removed, "
            f"{ref.lines} -> {lines} lines", "added": added[:10], "removed": removed[:10]}


def _hash(facts: FileFacts | None) -> str | None:
    return None if facts is None else facts.hash


def refresh(ctx: Ctx) -> int:
    """Compare every baseline of each repository indexed since the last refresh with its
    current index; flag the memories whose files changed substantially. Work is per
    index run and per baseline, never per memory of the store. Returns flags added."""
    store = ctx.store()
    if not code_graph.exists(ctx.home):
        return 0
    flagged = 0
    cg = CodeGraph.open(ctx.home)
    try:
        for tree in cg.trees():
            seen = f"tree:{tree.root}"
            if tree.indexed_at is None or hygiene.mark(store, seen) == tree.indexed_at:
                continue
            refs = hygiene.code_refs(store, tree.root)
            facts = cg.file_facts(tree.id, sorted({r.path for r in refs}))
            changes: dict[int, list[dict[str, Any]]] = {}
            for ref in refs:
                change = _change(ref, facts.get(ref.path))
                if change is not None:
                    changes.setdefault(ref.memory_id, []).append(change)
            found = memories.get_many(store, changes)
            with store.write():
                for memory_id, files in changes.items():
                    memory = found[memory_id]
                    state = hashlib.sha256(repr(sorted((f["path"], str(_hash(facts.get(f["path"]))))
                                                       for f in files)).encode()).hexdigest()
                    flagged += hygiene.propose(store, "stale", memory.project, memory.id, None,
                                               memory.content_hash, state, {"files": files}) is not None
            hygiene.set_mark(store, seen, tree.indexed_at)
    finally:
        cg.close()
    return flagged
