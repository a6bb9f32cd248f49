"""Questions over the stored code graph: lookup, trace, architecture, impact.

Everything here reads ``derived.db`` (and, for snippets and ``--since``, the work
tree); nothing imports tree-sitter, so queries stay fast in any process.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from marm.code.files import git
from marm.errors import BadInput, NotFound
from marm.store import code_graph
from marm.store.code_graph import CodeGraph, SymbolRow

SNIPPET_LINES = 12
TRACE_MAX_NODES = 200
IMPACT_MAX = 100
IMPACT_EDGES_PER_LEVEL = 5_000
_ENTRY_NAMES = ("main", "__main__", "cli", "app", "run", "serve", "server")
_ENTRY_FILES = frozenset({"__main__", "main", "cli", "index", "app", "server", "manage", "setup"})


def open_tree(home: Path, root: Path):
    """(connection, tree) for an indexed repository, or ``NotFound``."""
    if not code_graph.exists(home):
        raise NotFound(f"{root} is not indexed yet: run `marm code index`")
    graph = code_graph.CodeGraph.open(home)
    tree = graph.tree(str(root))
    if tree is None or tree.indexed_at is None:
        graph.close()
        raise NotFound(f"{root} is not indexed yet: run `marm code index`")
    return graph, tree


def snippet(root: Path, row: SymbolRow, max_lines: int = SNIPPET_LINES) -> str:
    """The symbol's first lines, read from the work tree now."""
    try:
        with open(root / row.path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return ""
    start = max(row.line - 1, 0)
    end = min(row.end_line, row.line - 1 + max_lines) if row.kind != "module" else start + max_lines
    return "\n".join(lines[start:end])


def resolve_targets(graph: CodeGraph, tree_id: int, name: str, kind: str | None = None) -> list[SymbolRow]:
    found = graph.find_symbols(tree_id, name, kind=kind, limit=10, exact_only=True)
    if not found:
        raise NotFound(f"no symbol named {name!r} in the index (try `marm code lookup {name}`)")
    return found


# -- trace --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One node of a call tree: ``symbol`` reached from ``parent`` (an index into the
    steps, -1 for a root) through a reference at ``site``."""

    index: int
    parent: int
    depth: int
    direction: str  # root | callers | callees
    qname: str
    kind: str
    location: str  # path:line of the definition
    site: str | None  # path:line of the call
    rule: str | None
    confidence: float | None


def trace(graph: CodeGraph, tree_id: int, targets: list[SymbolRow], direction: str, depth: int) -> list[Step]:
    steps: list[Step] = []
    directions = ("callers", "callees") if direction == "both" else (direction,)
    for target in targets:
        root_index = len(steps)
        steps.append(
            Step(
                root_index,
                -1,
                0,
                "root",
                target.qname,
                target.kind,
                f"{target.path}:{target.line}",
                None,
                None,
                None,
            )
        )
        for way in directions:
            frontier = {target.id: root_index}
            seen = {target.id}
            for level in range(1, depth + 1):
                if not frontier or len(steps) >= TRACE_MAX_NODES:
                    break
                edges = graph.edges_touching(frontier, way, ("call",), limit=2 * TRACE_MAX_NODES
                )
                others = {e.dst_id if way == "callees" else e.src_id for e in edges}
                rows = graph.symbols_by_id(others)
                nxt: dict[int, int] = {}
                for e in edges:
                    here, other = (e.src_id, e.dst_id) if way == "callees" else (e.dst_id, e.src_id)
                    if other in seen or other not in rows or len(steps) >= TRACE_MAX_NODES:
                        continue
                    seen.add(other)
                    s = rows[other]
                    index = len(steps)
                    steps.append(
                        Step(
                            index,
                            frontier[here],
                            level,
                            way,
                            s.qname,
                            s.kind,
                            f"{s.path}:{s.line}",
                            f"{e.path}:{e.line}",
                            e.rule,
                            e.confidence,
                        )
                    )
                    nxt[other] = index
                frontier = nxt
    return steps


# -- impact -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Impacted:
    """A symbol that depends on a target, ``distance`` edges away, with the product of
    the edge confidences along the strongest path."""

    qname: str
    kind: str
    location: str
    distance: int
    confidence: float
    via: str  # call | import | inherit (the first edge from it)
    site: str  # path:line of that reference
    rule: str


def impact(graph: CodeGraph, tree_id: int, targets: list[SymbolRow], depth: int) -> list[Impacted]:
    best: dict[int, tuple[int, float, code_graph.EdgeRow]] = {}
    frontier = {t.id: 1.0 for t in targets}
    seen = set(frontier)
    for level in range(1, depth + 1):
        if not frontier or len(best) >= IMPACT_MAX:
            break  # ranked by distance first: a farther level cannot enter the top
        nxt: dict[int, float] = {}
        for e in graph.edges_touching(frontier, "callers", ("call", "import", "inherit"), limit=IMPACT_EDGES_PER_LEVEL
        ):
            if e.src_id in seen and e.src_id not in nxt:
                continue
            conf = frontier[e.dst_id] * e.confidence
            if conf > nxt.get(e.src_id, 0.0):
                nxt[e.src_id] = conf
                best[e.src_id] = (level, conf, e)
        seen.update(nxt)
        frontier = nxt
    rows = graph.symbols_by_id(best)
    out = [
        Impacted(
            rows[i].qname,
            rows[i].kind,
            f"{rows[i].path}:{rows[i].line}",
            d,
            round(c, 4),
            e.kind,
            f"{e.path}:{e.line}",
            e.rule,
        )
        for i, (d, c, e) in best.items()
        if i in rows
    ]
    out.sort(key=lambda x: (x.distance, -x.confidence, x.location))
    return out[:IMPACT_MAX]


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def changed_lines(root: Path, ref: str) -> dict[str, set[int]]:
    """Lines of the work tree changed since ``ref`` (committed or not), per file."""
    if ref.startswith("-"):
        raise BadInput(f"not a git revision: {ref!r}")
    diff = git(root, "diff", "--unified=0", "--no-color", "--no-ext-diff", ref, "--", timeout=60)
    files: dict[str, set[int]] = {}
    current: str | None = None
    for line in diff.decode("utf-8", "replace").splitlines():
        if line.startswith("+++ "):
            target = line[4:]
            current = target[2:] if target.startswith("b/") else None
            if current is not None:
                files.setdefault(current, set())
        elif line.startswith("--- a/"):
            files.setdefault(line[6:], set())  # a deleted file counts as touched
        elif current is not None and (m := _HUNK.match(line)):
            start, count = int(m.group(1)), int(m.group(2) or "1")
            files[current].update(range(start, start + max(count, 1)))
    untracked = git(root, "ls-files", "-z", "--others", "--exclude-standard", timeout=60)
    for raw in untracked.split(b"\0"):
        if raw:
            files.setdefault(raw.decode("utf-8", "surrogateescape"), set()).add(1)
    return files


def touched_symbols(graph: CodeGraph, tree_id: int, files: dict[str, set[int]]) -> list[SymbolRow]:
    ids: list[int] = []
    for path, lines in files.items():
        ids.extend(graph.symbols_at(tree_id, path, lines or {1}))
    rows = graph.symbols_by_id(ids)
    return sorted(rows.values(), key=lambda r: (r.path, r.line))


# -- architecture -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Package:
    path: str
    files: int
    lines: int
    symbols: int
    languages: list[str]


def package_table(graph: CodeGraph, tree_id: int, limit: int) -> tuple[list[Package], Counter, int, int]:
    """Directories with their sizes (largest first), lines per language, files, lines."""
    groups: dict[str, list[tuple]] = {}
    by_lang: Counter = Counter()
    total_files = total_lines = 0
    for f in graph.packages(tree_id):
        if f.status == "skipped":
            continue
        groups.setdefault(posixpath.dirname(f.path) or ".", []).append((f.lang, f.lines, f.symbols))
        by_lang[f.lang] += f.lines
        total_files += 1
        total_lines += f.lines
    table = [
        Package(
            d,
            len(rows),
            sum(r[1] for r in rows),
            sum(r[2] for r in rows),
            sorted({r[0] for r in rows}),
        )
        for d, rows in groups.items()
    ]
    table.sort(key=lambda p: (-p.lines, p.path))
    return table[:limit], by_lang, total_files, total_lines


def entry_points(graph: CodeGraph, tree_id: int, limit: int) -> list[SymbolRow]:
    rows = graph.top_ranked(tree_id, 200, names=_ENTRY_NAMES, kinds=("function", "method")
    )
    wanted = [
        m.symbol_id
        for m in graph.module_files(tree_id)
        if posixpath.splitext(posixpath.basename(m.path))[0] in _ENTRY_FILES
    ]
    modules = list(graph.symbols_by_id(wanted).values())
    seen, out = set(), []
    for r in sorted(modules, key=lambda r: (r.path.count("/"), r.path)) + rows:
        if r.id not in seen:
            seen.add(r.id)
            out.append(r)
    return out[:limit]
