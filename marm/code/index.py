"""Incremental indexing of one repository into the code graph.

1. List files (git); ``stat`` each; files whose (size, mtime) match what is stored are
   not even read. The rest are read and hashed; an unchanged hash only refreshes the
   stored stat. An unchanged repository therefore costs one ``git ls-files`` and one
   ``stat`` per file.
2. Changed files are parsed (over worker processes when there are many) and replace
   their old rows; deleted files are removed.
3. Only affected refs are re-resolved: those in changed files, those whose key is a
   name the changed files defined before or after, those in files importing a changed
   module (and, when what the changed files define, export or import changed, in files
   re-exporting from them, transitively), and those whose edge pointed into a changed
   file. When a class
   hierarchy may have changed (base lists differ, or a base reference elsewhere is
   affected), every ref is re-resolved: method lookups through bases can change far
   away. The result equals a full rebuild (a test checks it).
4. PageRank over the call/import/inherit edges ranks symbols for ``architecture``; an
   incremental run re-ranks once 1% of the edges changed since the last ranking.
"""

from __future__ import annotations

import gc
import os
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from marm import scope
from marm.code import aliases as import_aliases
from marm.code import files as fs
from marm.code.aliases import Alias
from marm.code.extract import Facts, extract
from marm.code.resolve import Resolver
from marm.store import code_graph, code_repos, events, leases, now
from marm.store.code_graph import CodeGraph, FileStat, RefKey

#: Below this many changed files, parsing stays in this process.
PARALLEL_MIN_FILES = 300
#: A full build of at least this many files drops the secondary indexes and builds
#: them again afterwards (much faster than maintaining them row by row).
BULK_MIN_FILES = 500
#: Parsed rows are written in batches of about this many refs.
FLUSH_REFS = 20_000
#: How many re-export hops an incremental run follows (the resolver follows as many).
MAX_REEXPORT_DEPTH = 5
#: Up to this many refs to re-resolve, the resolver reads symbols on demand instead of
#: loading the whole tree.
LAZY_MAX_REFS = 20_000
#: Centrality is recomputed once the edges changed since the last ranking reach this
#: share of all edges: a one-line edit in a large tree does not pay a whole PageRank,
#: and ranks never drift far.
RERANK_SHARE = 0.01


@dataclass
class IndexReport:
    root: str
    full: bool
    files: int = 0
    parsed: int = 0
    unchanged: int = 0
    deleted: int = 0
    lines_parsed: int = 0
    refs_resolved: int = 0
    edges: int = 0
    workers: int = 1
    seconds: float = 0.0
    skipped: list[dict[str, str]] = field(default_factory=list)
    partial: list[dict[str, str]] = field(default_factory=list)


class Changed(NamedTuple):
    """A file whose content changed (or is new): it is parsed."""

    path: str
    lang: str
    size: int
    mtime_ns: int
    digest: str


class Skipped(NamedTuple):
    """A file that is not parsed, and why (its hash, when it was read)."""

    path: str
    lang: str
    size: int
    mtime_ns: int
    digest: str | None
    why: str


class ParseJob(NamedTuple):
    """What a (worker) process needs to parse one file."""

    path: str
    full_path: str
    lang: str
    aliases: tuple[Alias, ...]


class Parsed(NamedTuple):
    """A parse's result: the file's facts, or why it has none."""

    path: str
    facts: Facts | str


def _parse(job: ParseJob) -> Parsed:
    """Read and parse one file. The file is read again here (the first read, to hash it,
    kept nothing), so a large index never holds every changed file in memory."""
    try:
        with open(job.full_path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return Parsed(job.path, f"unreadable: {exc.strerror}")
    try:
        return Parsed(job.path, extract(job.path, data, job.lang, job.aliases))
    except Exception as exc:  # noqa: BLE001 - one bad file never stops the index
        return Parsed(job.path, f"parser failed: {type(exc).__name__}: {exc}")


def _parse_all(items: list[ParseJob], workers: int, bar: Any) -> list[Parsed]:
    if workers <= 1 or len(items) < PARALLEL_MIN_FILES:
        out = []
        for item in items:
            out.append(_parse(item))
            bar.advance(1)
        return out
    import multiprocessing
    import threading

    # fork is cheapest, but only safe while this process runs a single thread (an MCP
    # server runs several): otherwise start clean interpreters
    single = threading.active_count() == 1
    method = "fork" if single and "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with multiprocessing.get_context(method).Pool(workers) as pool:
        out = []
        for result in pool.imap(_parse, items, chunksize=16):
            out.append(result)
            bar.advance(1)
        return out


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def index_tree(
    graph: CodeGraph, root: Path, *, full: bool = False, workers: int | None = None, progress: Any = None
) -> IndexReport:
    """Bring the code graph of the repository at ``root`` up to date."""
    with _no_cyclic_gc():
        return _index_tree(graph, root, full=full, workers=workers, progress=progress)


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: a large index allocates millions of tuples
    (rows, facts, resolver tables), none in a cycle, and the collector would traverse
    them again and again (~6% of a full index). Reference counting still frees them."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _index_tree(
    graph: CodeGraph, root: Path, *, full: bool, workers: int | None, progress: Any
) -> IndexReport:
    started = time.monotonic()
    workers = default_workers() if workers is None else max(1, workers)
    report = IndexReport(root=str(root), full=full)
    listed = fs.source_files(root)
    report.files = len(listed)
    with graph.transaction():
        tree = graph.tree(str(root), create=True)
        assert tree is not None
        aliases = import_aliases.load(root)
        stamp = import_aliases.stamp(aliases)
        if graph.tree_aliases(tree.id) != stamp:
            full = True  # another alias map: any import may now name another file
            graph.set_tree_aliases(tree.id, stamp)
        if full:
            graph.clear_tree(tree.id)
        known = graph.file_states(tree.id)
        full = full or not known
        report.full = full
        todo: list[Changed] = []
        touched: list[FileStat] = []
        skipped: list[Skipped] = []
        base = str(root) + os.sep
        present = set()
        for path, lang in listed:
            try:
                st = os.stat(base + path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            present.add(path)
            old = known.get(path)
            if old is not None and old.size == st.st_size and old.mtime_ns == st.st_mtime_ns:
                report.unchanged += 1
                continue
            if st.st_size > fs.MAX_BYTES:
                skipped.append(Skipped(path, lang, st.st_size, st.st_mtime_ns, None,
                                       f"larger than {fs.MAX_BYTES // 1_000_000} MB (generated?)"))
                continue
            try:
                with open(base + path, "rb") as fh:
                    data = fh.read()
            except OSError as exc:
                skipped.append(Skipped(path, lang, st.st_size, st.st_mtime_ns, None,
                                       f"unreadable: {exc.strerror}"))
                continue
            digest = fs.digest(data)
            if old is not None and old.hash == digest:
                touched.append(FileStat(st.st_size, st.st_mtime_ns, old.id))
                report.unchanged += 1
                continue
            why = fs.problem(data)
            if why is not None:
                skipped.append(Skipped(path, lang, st.st_size, st.st_mtime_ns, digest, why))
                continue
            todo.append(Changed(path, lang, st.st_size, st.st_mtime_ns, digest))
        graph.touch_files(touched)
        gone = [p for p in known if p not in present]
        replaced = [
            known[p].id for p in [t.path for t in todo] + [s.path for s in skipped] + gone if p in known
        ]
        report.deleted = len([p for p in gone if p in known])
        if replaced or todo or skipped:
            _update(graph, tree.id, root, aliases, todo, skipped, replaced, full, workers, progress, report)
        graph.finish_tree(tree.id, now())
        report.skipped = [
            {"path": f.path, "reason": f.note}
            for f in graph.skipped(tree.id)
            if f.status == "skipped"
        ]
        report.partial = [
            {"path": f.path, "reason": f.note}
            for f in graph.skipped(tree.id)
            if f.status == "partial"
        ]
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _update(
    graph: CodeGraph,
    tree_id: int,
    root: Path,
    aliases: tuple[Alias, ...],
    todo: list[Changed],
    skipped: list[Skipped],
    replaced: list[int],
    full: bool,
    workers: int,
    progress: Any,
    report: IndexReport,
) -> None:
    if not full:
        old = graph.shape(replaced)
        into = graph.refs_into(replaced)
    removed = graph.delete_files(replaced)
    for s in skipped:
        graph.add_skipped(tree_id, s.path, s.lang, s.size, s.mtime_ns, s.digest, s.why)
    meta = {t.path: t for t in todo}
    report.workers = workers if len(todo) >= PARALLEL_MIN_FILES else 1
    new_ids = []
    bulk = full and len(todo) >= BULK_MIN_FILES
    if bulk:
        graph.drop_indexes()
    writer = graph.writer(tree_id, keep=full)
    written: list[code_graph.RefRow] = []
    with _bar(progress, len(todo), "parsing") as bar:
        items = [ParseJob(t.path, os.path.join(root, t.path), t.lang, aliases) for t in todo]
        for path, facts in _parse_all(items, workers, bar):
            t = meta[path]
            if isinstance(facts, str):
                graph.add_skipped(tree_id, path, t.lang, t.size, t.mtime_ns, t.digest, facts)
                continue
            new_ids.append(writer.add(path, t.lang, t.size, t.mtime_ns, t.digest, facts))
            report.parsed += 1
            report.lines_parsed += facts.lines
            if len(writer.refs) >= FLUSH_REFS:  # write while the workers keep parsing
                written.extend(writer.flush())
    written.extend(writer.flush())
    if full:
        refs = written
    else:
        new = graph.shape(new_ids)
        modules = old.modules | new.modules
        importing = graph.importers(tree_id, _suffixes(modules))
        if old.interface != new.interface:
            importing |= _reexport_closure(graph, tree_id, modules)
        refs = graph.affected_refs(tree_id, set(new_ids) | importing, old.names | new.names, into
        )
        changed_files = set(new_ids)
        if old.bases != new.bases or any(
            r.kind == "base" and r.file_id not in changed_files for r in refs
        ):
            graph.delete_tree_edges(tree_id)
            refs = graph.all_refs(tree_id)
            full = True
        else:
            removed += graph.delete_edges_of_refs([RefKey(r.file_id, r.id) for r in refs])
    if writer.kept is not None:
        resolver = Resolver(graph, tree_id, written=writer.kept)
    else:
        resolver = Resolver(graph, tree_id, lazy=not full and len(refs) <= LAZY_MAX_REFS)
    rows = resolver.edges(refs)
    graph.add_edges(tree_id, rows)
    report.refs_resolved = len(refs)
    report.edges = len(rows)
    if full:
        graph.ranked(tree_id, len(rows))  # the count _rank compares against
        ranks = pagerank([r.src_id for r in rows], [r.dst_id for r in rows], [r.confidence for r in rows])
        if writer.kept is not None:  # a fresh build: the symbols go in once, ranked
            writer.write_symbols(ranks)
        else:
            graph.set_ranks(tree_id, ranks.items())
    else:
        graph.finish_tree(tree_id, now(), len(rows) - removed)
        if graph.ranking_due(tree_id, removed + len(rows), RERANK_SHARE):
            graph.ranked(tree_id, _rank(graph, tree_id))
    if bulk:
        graph.create_indexes()


def _reexport_closure(graph: CodeGraph, tree_id: int, modules: set[str]) -> set[int]:
    """Files a name from ``modules`` can reach through chains of ``from m import x`` (as
    far as the resolver follows re-exports): when what a changed file defines, exports
    or imports changes, a ref several imports away may now resolve differently."""
    files: set[int] = set()
    frontier = modules
    for _ in range(MAX_REEXPORT_DEPTH):
        found = [r for r in graph.reexporters(tree_id, _suffixes(frontier)) if r.file_id not in files]
        if not found:
            break
        files.update(r.file_id for r in found)
        frontier = {r.module for r in found if r.module}
    return files


def _suffixes(modules: set[str]) -> set[str]:
    out: set[str] = set()
    for module in modules:
        sep = "/" if "/" in module else "."
        parts = module.split(sep)
        out.update(sep.join(parts[i:]) for i in range(len(parts)))
    return out


def _rank(graph: CodeGraph, tree_id: int) -> int:
    """Rank the tree's symbols from its stored edges; returns their number."""
    rows = graph.edge_weights(tree_id)
    src_ids, dst_ids, weights = zip(*rows, strict=True) if rows else ((), (), ())
    graph.set_ranks(tree_id, pagerank(src_ids, dst_ids, weights).items())
    return len(rows)


def pagerank(
    src_ids: Sequence[int],
    dst_ids: Sequence[int],
    weights: Sequence[float],
    damping: float = 0.85,
    rounds: int = 40,
) -> dict[int, float]:
    """PageRank over the edges (caller -> callee, importer -> module, class -> base),
    given as columns (sources, destinations, confidences): symbol id -> rank, scaled so
    the mean is 1. Columns, not rows: numpy converts a flat sequence of numbers several
    times faster than a list of tuples."""
    n_edges = len(src_ids)
    if not n_edges:
        return {}
    import numpy as np

    sources = np.asarray(src_ids, dtype=np.int64)
    targets = np.asarray(dst_ids, dtype=np.int64)
    # number the symbols on an edge 0..n-1 in id order (a mask over the id range: no sort)
    low = min(sources.min(), targets.min())
    present = np.zeros(max(sources.max(), targets.max()) - low + 1, dtype=bool)
    present[sources - low] = True
    present[targets - low] = True
    ids = np.flatnonzero(present) + low
    number = np.cumsum(present) - 1
    src, dst = number[sources - low], number[targets - low]
    w = np.asarray(weights, dtype=np.float64)
    n = len(ids)
    out_w = np.bincount(src, weights=w, minlength=n)
    rank = np.full(n, 1.0 / n)
    dangling = out_w == 0
    share = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out_w))
    coef = w * share[src]  # the share of its source's rank each edge carries
    for _ in range(rounds):
        flow = np.bincount(dst, weights=rank[src] * coef, minlength=n)
        new = (1 - damping) / n + damping * (flow + rank[dangling].sum() / n)
        if np.abs(new - rank).sum() < 1e-9:
            rank = new
            break
        rank = new
    scaled = rank * n
    return dict(zip(ids.tolist(), np.round(scaled, 6).tolist(), strict=True))


class _NoBar:
    def advance(self, n: int = 1) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _bar(progress: Any, total: int, label: str) -> Any:
    return progress(total, label) if progress is not None else _NoBar()


def record(ctx: Any, root: Path, report: IndexReport, started_at: str) -> None:
    """Note the run in the durable store: the repo's last index time, and an event."""
    store = ctx.store()
    project = scope.git_project(root)
    with store.write():
        code_repos.mark_indexed(store, str(root), project, started_at)
        events.append(
            store,
            "code.index",
            "code_repo",
            str(root),
            project=project,
            detail={
                "full": report.full,
                "files": report.files,
                "parsed": report.parsed,
                "deleted": report.deleted,
                "skipped": len(report.skipped),
                "edges": report.edges,
                "seconds": report.seconds,
            },
        )


def index_repo(
    ctx: Any, root: Path, *, full: bool = False, holder: str = "marm code index"
) -> IndexReport:
    """Index one repository under the ``code-index`` lease (``Busy`` when another runs)."""
    store = ctx.store()
    with leases.hold(store, ctx.home, "code-index", holder=holder):
        started_at = now()
        graph = code_graph.CodeGraph.open(ctx.home)
        try:
            report = index_tree(graph, root, full=full, progress=ctx.progress)
        finally:
            graph.close()
        record(ctx, root, report, started_at)
    return report
