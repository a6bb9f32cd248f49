"""Code graph ops: index, lookup, trace, architecture, impact, projects, forget.

Query ops answer for the repository of the current directory unless ``--repo`` names
another. The heavy part (tree-sitter) is imported only by ``code index``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from marm.context import Ctx
from marm.errors import BadInput, NotFound
from marm.ops.registry import Param, op
from marm.ops.results import Done
from marm.store import code_graph, code_repos, events


def _root(ctx: Ctx, path: str | None) -> Path:
    from marm.code.files import repo_root  # start-up cost (see above)

    where = (ctx.cwd / Path(path).expanduser()) if path else ctx.cwd
    if not where.exists():
        raise BadInput(f"no such directory: {where}")
    return repo_root(where)


def mark_dirty(ctx: Ctx, top: str, project: str | None) -> None:
    """Note that files of the work tree at ``top`` changed: the next drain re-indexes it."""
    code_repos.mark_dirty(ctx.store(), top, project)


_REPO = Param("repository to ask about (default: the one of the current directory)")


# -- index --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IndexResult:
    repo: str
    full: bool
    files: int
    parsed: int
    unchanged: int
    deleted: int
    lines_parsed: int
    refs_resolved: int
    edges: int
    workers: int
    seconds: float
    skipped: list[dict[str, str]] = field(default_factory=list)
    partial: list[dict[str, str]] = field(default_factory=list)

    def text(self) -> str:
        lines = [
            f"indexed {self.repo} in {self.seconds:.2f}s ({'full' if self.full else 'incremental'}): "
            f"{self.files} files, {self.parsed} parsed ({self.lines_parsed} lines), "
            f"{self.unchanged} unchanged, {self.deleted} removed, {self.edges} edges resolved"
        ]
        for s in self.skipped:
            lines.append(f"  skipped {s['path']}: {s['reason']}")
        for s in self.partial:
            lines.append(f"  partial {s['path']}: {s['reason']}")
        return "\n".join(lines)


@op("code", "index", mcp="marm_graph_index", idempotent=True)
def code_index(
    ctx: Ctx,
    path: Annotated[
        str | None, Param("repository to index (default: the current one)", argument=True)
    ] = None,
    full: Annotated[bool, Param("rebuild this repository's graph from scratch")] = False,
) -> IndexResult:
    """Index a repository's code (incremental: only changed files are parsed).

    Files are those git tracks plus untracked ones it does not ignore. Binary, non-UTF-8
    and very large files are skipped and listed; files with syntax errors are indexed
    partially and listed.

    Examples:
      marm code index
      marm code index ../other-repo --full
    """
    from dataclasses import asdict

    from marm.code.index import index_repo  # start-up cost (see above)

    root = _root(ctx, path)
    report = index_repo(ctx, root, full=full)
    data = asdict(report)
    data["repo"] = data.pop("root")
    return IndexResult(**data)


# -- lookup -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SymbolView:
    qname: str
    name: str
    kind: str
    location: str
    signature: str
    rank: float
    snippet: str = ""


@dataclass(frozen=True, slots=True)
class FileView:
    path: str
    language: str
    lines: int
    symbols: int
    status: str


@dataclass(frozen=True, slots=True)
class LookupResult:
    repo: str
    query: str
    symbols: list[SymbolView]
    files: list[FileView]

    def text(self) -> str:
        if not self.symbols and not self.files:
            return f"nothing named {self.query!r} in {self.repo}"
        out = []
        for s in self.symbols:
            out.append(f"{s.kind} {s.qname}  {s.location}")
            if s.snippet:
                out.extend("    " + line for line in s.snippet.splitlines())
        for f in self.files:
            out.append(f"file {f.path} ({f.language}, {f.lines} lines, {f.symbols} symbols)")
        return "\n".join(out)


@op("code", "lookup", mcp="marm_code_lookup", read_only=True, idempotent=True)
def code_lookup(
    ctx: Ctx,
    query: Annotated[
        str, Param("a name, a qualified name (Class.method) or part of a file path", argument=True)
    ],
    kind: Annotated[
        str | None, Param("only symbols of this kind (function, method, class, module, ...)")
    ] = None,
    limit: Annotated[int, Param("most symbols to return", short="-n")] = 10,
    repo: Annotated[str | None, _REPO] = None,
) -> LookupResult:
    """Find symbols and files by name, with the source of each symbol.

    Examples:
      marm code lookup write_memory
      marm code lookup Store.write --kind method
    """
    from marm.code import query as q  # start-up cost: hooks load this module to mark trees dirty

    if not query.strip():
        raise BadInput("the query is empty")
    if limit < 1:
        raise BadInput("--limit must be at least 1")
    root = _root(ctx, repo)
    graph, tree = q.open_tree(ctx.home, root)
    try:
        rows = graph.find_symbols(tree.id, query.strip(), kind=kind, limit=limit)
        files = [] if kind else graph.find_files(tree.id, query.strip(), limit=5)
    finally:
        graph.close()
    return LookupResult(
        str(root),
        query,
        [
            SymbolView(
                r.qname,
                r.name,
                r.kind,
                f"{r.path}:{r.line}",
                r.signature,
                round(r.rank, 4),
                q.snippet(root, r),
            )
            for r in rows
        ],
        [FileView(f.path, f.lang, f.lines, f.symbols, f.status) for f in files],
    )


# -- trace --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TraceResult:
    repo: str
    name: str
    direction: str
    depth: int
    steps: list[dict]

    def text(self) -> str:
        out = []
        for s in self.steps:
            if s["parent"] == -1:
                out.append(f"{s['qname']}  ({s['kind']}, {s['location']})")
                continue
            arrow = "<-" if s["direction"] == "callers" else "->"
            conf = f" [{s['rule']} {s['confidence']:.2f}]" if s["rule"] != "same-file" else ""
            out.append(
                f"{'  ' * s['depth']}{arrow} {s['qname']}  {s['location']}  (call at {s['site']}){conf}"
            )
        return "\n".join(out)


@op("code", "trace", mcp="marm_graph_trace", read_only=True, idempotent=True)
def code_trace(
    ctx: Ctx,
    name: Annotated[
        str, Param("the symbol: a name or a qualified name (module.Class.method)", argument=True)
    ],
    direction: Annotated[
        Literal["callers", "callees", "both"], Param("which way to walk the calls")
    ] = "both",
    depth: Annotated[int, Param("how many calls deep (1-6)")] = 2,
    repo: Annotated[str | None, _REPO] = None,
) -> TraceResult:
    """The call tree around a symbol: who calls it, what it calls, with file:line per step.

    Examples:
      marm code trace write_memory
      marm code trace write_memory --direction callers --depth 3
    """
    from dataclasses import asdict

    from marm.code import query as q  # start-up cost: hooks load this module to mark trees dirty

    if not 1 <= depth <= 6:
        raise BadInput("--depth must be between 1 and 6")
    root = _root(ctx, repo)
    graph, tree = q.open_tree(ctx.home, root)
    try:
        steps = q.trace(graph, tree.id, q.resolve_targets(graph, tree.id, name), direction, depth)
    finally:
        graph.close()
    return TraceResult(str(root), name, direction, depth, [asdict(s) for s in steps])


# -- architecture -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArchitectureResult:
    repo: str
    indexed_at: str | None
    files: int
    lines: int
    symbols: int
    edges: int
    languages: dict[str, int]
    packages: list[dict]
    entry_points: list[SymbolView]
    central: list[SymbolView]

    def text(self) -> str:
        langs = ", ".join(
            f"{k} {v}" for k, v in sorted(self.languages.items(), key=lambda kv: -kv[1])
        )
        out = [
            f"{self.repo}: {self.files} files, {self.lines} lines, {self.symbols} symbols, "
            f"{self.edges} edges (indexed {self.indexed_at})",
            f"languages (lines): {langs}",
            "packages:",
        ]
        out += [
            f"  {p['path']:<40} {p['files']:>5} files {p['lines']:>8} lines {p['symbols']:>6} symbols"
            for p in self.packages
        ]
        out.append("entry points:")
        out += [f"  {s.kind} {s.qname}  {s.location}" for s in self.entry_points]
        out.append("most central:")
        out += [f"  {s.rank:8.2f} {s.kind} {s.qname}  {s.location}" for s in self.central]
        return "\n".join(out)


@op("code", "architecture", mcp="marm_graph_architecture", read_only=True, idempotent=True)
def code_architecture(
    ctx: Ctx,
    limit: Annotated[int, Param("rows per section", short="-n")] = 15,
    repo: Annotated[str | None, _REPO] = None,
) -> ArchitectureResult:
    """Packages with their sizes, entry points, and the most central symbols (PageRank).

    Examples:
      marm code architecture
      marm code architecture --limit 5
    """
    from marm.code import query as q  # start-up cost: hooks load this module to mark trees dirty

    if limit < 1:
        raise BadInput("--limit must be at least 1")
    root = _root(ctx, repo)
    graph, tree = q.open_tree(ctx.home, root)
    try:
        packages, by_lang, files, lines = q.package_table(graph, tree.id, limit)
        counts = graph.counts(tree.id)
        entries = q.entry_points(graph, tree.id, limit)
        central = graph.top_ranked(tree.id,
            limit,
            kinds=("function", "method", "class", "interface", "struct", "trait", "type", "enum"),
        )
    finally:
        graph.close()

    def view(r) -> SymbolView:
        return SymbolView(
            r.qname, r.name, r.kind, f"{r.path}:{r.line}", r.signature, round(r.rank, 4)
        )

    return ArchitectureResult(
        str(root),
        tree.indexed_at,
        files,
        lines,
        counts["symbols"],
        counts["edges"],
        dict(by_lang),
        [
            {
                "path": p.path,
                "files": p.files,
                "lines": p.lines,
                "symbols": p.symbols,
                "languages": p.languages,
            }
            for p in packages
        ],
        [view(r) for r in entries],
        [view(r) for r in central],
    )


# -- impact -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImpactResult:
    repo: str
    targets: list[str]
    since: str | None
    changed_files: list[str]
    impacted: list[dict]

    def text(self) -> str:
        head = f"changes since {self.since}" if self.since else ", ".join(self.targets)
        out = [f"impact of {head}: {len(self.impacted)} dependent symbol(s)"]
        if self.since:
            out.append("touched: " + (", ".join(self.targets) or "(no indexed symbol)"))
        for i in self.impacted:
            out.append(
                f"  d={i['distance']} {i['confidence']:.2f} {i['kind']} {i['qname']}  {i['location']}"
                f"  ({i['via']} at {i['site']}, {i['rule']})"
            )
        return "\n".join(out)


@op("code", "impact", mcp="marm_graph_impact", read_only=True, idempotent=True)
def code_impact(
    ctx: Ctx,
    name: Annotated[str | None, Param("the symbol whose dependents to find", argument=True)] = None,
    since: Annotated[
        str | None, Param("instead: everything a diff since this git revision touched")
    ] = None,
    depth: Annotated[int, Param("how many edges away (1-6)")] = 3,
    repo: Annotated[str | None, _REPO] = None,
) -> ImpactResult:
    """What depends on a symbol, or on everything a diff since a git revision touched.

    Dependents are callers, importers and subclasses, found by walking the graph
    backwards and ranked by distance, then by the product of edge confidences. A
    revision starts from the symbols around every line changed since it (committed or
    not, plus untracked files).

    CLI:
      Give a symbol NAME or --since REF.
    MCP:
      Give a symbol `name` or a revision `since`.
    Examples:
      marm code impact write_memory
      marm code impact --since main --depth 2
    """
    from dataclasses import asdict

    from marm.code import query as q  # start-up cost: hooks load this module to mark trees dirty

    if (name is None) == (since is None):
        raise BadInput("give a symbol NAME or --since REF (one of them)")
    if not 1 <= depth <= 6:
        raise BadInput("--depth must be between 1 and 6")
    root = _root(ctx, repo)
    graph, tree = q.open_tree(ctx.home, root)
    try:
        changed: list[str] = []
        if since is not None:
            files = q.changed_lines(root, since)
            changed = sorted(files)
            targets = q.touched_symbols(graph, tree.id, files)
        else:
            targets = q.resolve_targets(graph, tree.id, name or "")
        impacted = q.impact(graph, tree.id, targets, depth) if targets else []
    finally:
        graph.close()
    return ImpactResult(
        str(root), [t.qname for t in targets], since, changed, [asdict(i) for i in impacted]
    )


# -- projects / forget --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CodeProject:
    path: str
    project: str | None
    indexed_at: str | None
    dirty_since: str | None
    files: int
    lines: int


@dataclass(frozen=True, slots=True)
class ProjectsResult:
    projects: list[CodeProject]

    def text(self) -> str:
        if not self.projects:
            return "no repository indexed yet (run `marm code index` in one)"
        return "\n".join(
            f"{p.path}  {p.files} files, {p.lines} lines, indexed {p.indexed_at or 'never'}"
            + (f", dirty since {p.dirty_since}" if p.dirty_since else "")
            for p in self.projects
        )


@op("code", "projects", mcp=None, read_only=True, idempotent=True)
def code_projects(ctx: Ctx) -> ProjectsResult:
    """Repositories in the code graph, when each was indexed, and which are dirty.

    Examples:
      marm code projects
    """
    trees = {}
    if code_graph.exists(ctx.home):
        graph = code_graph.CodeGraph.open(ctx.home)
        try:
            trees = {t.root: t for t in graph.trees()}
        finally:
            graph.close()
    out = []
    for r in code_repos.listing(ctx.store()):
        t = trees.pop(r.path, None)
        out.append(
            CodeProject(
                r.path,
                r.project,
                r.last_indexed_at,
                r.dirty_since,
                t.files if t else 0,
                t.lines if t else 0,
            )
        )
    out += [CodeProject(t.root, None, t.indexed_at, None, t.files, t.lines) for t in trees.values()]
    return ProjectsResult(sorted(out, key=lambda p: p.path))


@op("code", "forget", mcp=None, destructive=True, idempotent=True)
def code_forget(
    ctx: Ctx,
    path: Annotated[str, Param("the repository to drop from the code graph", argument=True)],
) -> Done:
    """Drop a repository's code graph and stop keeping it current (its files are untouched).

    Examples:
      marm code forget ../old-repo
    """
    target = (ctx.cwd / Path(path).expanduser()).resolve()
    store = ctx.store()
    known = {r.path for r in code_repos.listing(store)}
    key = (
        str(target) if str(target) in known or not target.exists() else str(_root(ctx, str(target)))
    )
    removed_tree = False
    if code_graph.exists(ctx.home):
        graph = code_graph.CodeGraph.open(ctx.home)
        try:
            with graph.transaction():
                tree = graph.tree(key)
                if tree is not None:
                    graph.forget_tree(tree.id)
                    removed_tree = True
        finally:
            graph.close()
    with store.write():
        removed_repo = code_repos.remove(store, key)
        if removed_repo or removed_tree:
            events.append(store, "code.forget", "code_repo", key)
    if not (removed_repo or removed_tree):
        raise NotFound(f"{key} is not in the code graph")
    return Done(True, f"forgot the code graph of {key}", {"repo": key})
