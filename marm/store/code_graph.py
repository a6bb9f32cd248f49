"""All SQL of the code graph, in the disposable ``derived.db``.

A tree is one indexed repository; its files carry what was read (stat, hash, status);
symbols, imports, refs (calls, base classes, import statements) and typed variables
come from parsing one file and are replaced with it; edges link a ref to the symbol it
resolved to, with the rule that produced the link and a confidence. Rows of a file are
deleted by hand (no cascading foreign keys): bulk inserts stay fast.

A file's refs are one JSON row (``code_file_refs``): nothing queries a single ref, only
the refs of some files (an incremental run re-resolving them), and hundreds of
thousands of rows with their indexes were a fifth of a full build. Ref ids are
``first_id`` + position, so edges still name their ref; ``code_ref_keys`` says which
files have a ref with a given key (the name looked up elsewhere).
"""

from __future__ import annotations

import posixpath
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar, cast

import orjson

from marm.config import derived_path
from marm.store import core, derived

#: Secondary indexes; a large rebuild drops them and builds them again after the bulk
#: insert, which is several times faster than updating them row by row.
INDEXES = (
    "CREATE INDEX code_symbols_name ON code_symbols (tree_id, name)",
    "CREATE INDEX code_symbols_file ON code_symbols (file_id)",
    "CREATE INDEX code_symbols_rank ON code_symbols (tree_id, rank DESC)",
    "CREATE INDEX code_imports_module ON code_imports (tree_id, module)",
    "CREATE INDEX code_imports_file ON code_imports (file_id)",
    "CREATE INDEX code_ref_keys_key ON code_ref_keys (tree_id, key)",
    "CREATE INDEX code_ref_keys_file ON code_ref_keys (file_id)",
    "CREATE INDEX code_types_file ON code_types (file_id)",
    "CREATE INDEX code_edges_src ON code_edges (src_id)",
    "CREATE INDEX code_edges_dst ON code_edges (dst_id)",
    "CREATE INDEX code_edges_file ON code_edges (file_id, ref_id)",
)


PART = derived.SchemaPart(
    name="code",
    version=9,
    tables=(
        "code_edges",
        "code_types",
        "code_ref_keys",
        "code_file_refs",
        "code_refs",  # before version 5
        "code_imports",
        "code_symbols",
        "code_files",
        "code_trees",
    ),
    ddl="""
    CREATE TABLE code_trees (
        id INTEGER PRIMARY KEY, root TEXT NOT NULL UNIQUE, indexed_at TEXT,
        files INTEGER NOT NULL DEFAULT 0, lines INTEGER NOT NULL DEFAULT 0,
        symbols INTEGER NOT NULL DEFAULT 0, edges INTEGER NOT NULL DEFAULT 0,
        unranked INTEGER NOT NULL DEFAULT 0, aliases TEXT);
    CREATE TABLE code_files (
        id INTEGER PRIMARY KEY, tree_id INTEGER NOT NULL, path TEXT NOT NULL, lang TEXT,
        module TEXT, size INTEGER, mtime_ns INTEGER, hash TEXT, lines INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL, note TEXT, exports TEXT, UNIQUE (tree_id, path));
    CREATE TABLE code_symbols (
        id INTEGER PRIMARY KEY, tree_id INTEGER NOT NULL, file_id INTEGER NOT NULL,
        parent_id INTEGER, name TEXT NOT NULL, qname TEXT NOT NULL, kind TEXT NOT NULL,
        line INTEGER NOT NULL, end_line INTEGER NOT NULL, signature TEXT NOT NULL,
        rank REAL NOT NULL DEFAULT 0);
    CREATE TABLE code_imports (
        tree_id INTEGER NOT NULL, file_id INTEGER NOT NULL, local TEXT, module TEXT NOT NULL,
        name TEXT, kind TEXT NOT NULL, line INTEGER NOT NULL);
    CREATE TABLE code_file_refs (
        file_id INTEGER PRIMARY KEY, first_id INTEGER NOT NULL, n INTEGER NOT NULL,
        symbol_base INTEGER NOT NULL, refs BLOB NOT NULL, bases BLOB);
    CREATE TABLE code_ref_keys (tree_id INTEGER NOT NULL, key TEXT NOT NULL, file_id INTEGER NOT NULL);
    CREATE TABLE code_types (
        file_id INTEGER NOT NULL, scope_id INTEGER NOT NULL, var TEXT NOT NULL, type TEXT NOT NULL);
    CREATE TABLE code_edges (
        tree_id INTEGER NOT NULL, ref_id INTEGER NOT NULL, src_id INTEGER NOT NULL,
        dst_id INTEGER NOT NULL, kind TEXT NOT NULL, rule TEXT NOT NULL, confidence REAL NOT NULL,
        file_id INTEGER NOT NULL, line INTEGER NOT NULL);
    """
    + "".join(f"{ddl};\n" for ddl in INDEXES),
)


def exists(home: Path) -> bool:
    return derived_path(home).exists()


# -- rows of a bulk build -----------------------------------------------------------
#
# What a parse yields and what a build writes and resolves cross module boundaries
# (marm.code.extract -> Writer -> marm.code.resolve -> add_edges) by the hundred
# thousand. They are NamedTuples: named fields for readers, still plain tuples for
# ``executemany``, ``insert_rows`` and unpacking. Hot paths make them with ``_make_rows``
# (``tuple.__new__`` in C: a NamedTuple's own ``__new__`` is a Python call per row).

_Row = TypeVar("_Row", bound=tuple)


def _maker(cls: type[_Row]) -> Any:
    """``cls((a, b, ...))`` without ``cls``'s Python-level ``__new__``: for a tuple of
    exactly ``cls``'s fields."""
    return partial(tuple.__new__, cls)


def make_rows(cls: type[_Row], rows: Iterable[tuple]) -> list[_Row]:
    """``rows`` (tuples of ``cls``'s fields, in order) as ``cls`` rows."""
    return cast("list[_Row]", list(map(_maker(cls), rows)))


class ParsedSymbol(NamedTuple):
    """A definition a parse found; ``parent``: the index of the enclosing one in the
    file's symbols (-1 for the module itself, which is always index 0)."""

    name: str
    qname: str
    kind: str
    line: int
    end_line: int
    signature: str
    parent: int


class ParsedImport(NamedTuple):
    """An import binding: ``local`` names ``module``'s ``name`` (kind module|from|star)."""

    local: str | None
    module: str
    name: str | None
    kind: str
    line: int


class ParsedRef(NamedTuple):
    """A reference: kind call, base, import (module), import-from or import-star;
    ``scope``: the index of the enclosing symbol; ``key``: the name looked up elsewhere
    (an alias's original name); an import's ``receiver`` is its module. A file's refs
    are stored as one JSON list of these (``code_file_refs``)."""

    kind: str
    scope: int
    name: str
    key: str
    receiver: str | None
    line: int


class ParsedType(NamedTuple):
    """A typed receiver: ``var`` has type ``type`` in the symbol at index ``scope``."""

    scope: int
    var: str
    type: str


class ParsedFile(Protocol):
    """What ``Writer.add`` reads of one parse (``marm.code.extract.Facts``)."""

    module: str
    lines: int
    partial: bool
    symbols: list[ParsedSymbol]
    imports: list[ParsedImport]
    refs: list[ParsedRef]
    types: list[ParsedType]
    exports: list[str] | None


class NewSymbol(NamedTuple):
    """A ``code_symbols`` row as a build writes it (without its rank)."""

    id: int
    tree_id: int
    file_id: int
    parent_id: int | None
    name: str
    qname: str
    kind: str
    line: int
    end_line: int
    signature: str


class NewImport(NamedTuple):
    """A ``code_imports`` row."""

    tree_id: int
    file_id: int
    local: str | None
    module: str
    name: str | None
    kind: str
    line: int


class TypeRow(NamedTuple):
    """A ``code_types`` row: ``var`` has type ``type`` in symbol ``scope_id``."""

    file_id: int
    scope_id: int
    var: str
    type: str


class RefRow(NamedTuple):
    """A ref with its ids, as the resolver takes it: ``id`` (``first_id`` + position),
    its file, the symbol it sits in (``src_id``), then a ``ParsedRef``'s fields."""

    id: int
    file_id: int
    src_id: int
    kind: str
    name: str
    key: str
    receiver: str | None
    line: int


class BaseRef(NamedTuple):
    """A base class a class names (``receiver``: what the name is looked up on)."""

    class_id: int
    name: str
    receiver: str | None


class ResolverSymbol(NamedTuple):
    """What the resolver preloads of a symbol."""

    id: int
    file_id: int
    parent_id: int | None
    name: str
    kind: str


class ResolverImport(NamedTuple):
    """What the resolver preloads of an import binding."""

    file_id: int
    local: str | None
    module: str
    name: str | None
    kind: str


class NewEdge(NamedTuple):
    """A ``code_edges`` row as the resolver makes it (the tree id comes with the write)."""

    ref_id: int
    src_id: int
    dst_id: int
    kind: str
    rule: str
    confidence: float
    file_id: int
    line: int


class FileStat(NamedTuple):
    """A file's new (size, mtime) when its content did not change."""

    size: int
    mtime_ns: int
    id: int


class RefKey(NamedTuple):
    """A ref as edges are indexed on it: its file, its id."""

    file_id: int
    ref_id: int


class EdgeWeight(NamedTuple):
    """An edge as the ranking reads it."""

    src_id: int
    dst_id: int
    confidence: float


_new_symbol = _maker(NewSymbol)
_new_import = _maker(NewImport)
_type_row = _maker(TypeRow)
_ref_row = _maker(RefRow)
_base_ref = _maker(BaseRef)


# -- trees and files ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tree:
    id: int
    root: str
    indexed_at: str | None
    files: int
    lines: int


@dataclass(frozen=True, slots=True)
class SkippedFile:
    path: str
    status: str  # skipped | partial
    note: str


@dataclass(frozen=True, slots=True)
class FileSize:
    path: str
    lang: str
    lines: int
    symbols: int  # not counting the module itself
    status: str


@dataclass(frozen=True, slots=True)
class ModuleFile:
    symbol_id: int  # the file's module symbol
    path: str


@dataclass(frozen=True, slots=True)
class FileState:
    id: int
    size: int | None
    mtime_ns: int | None
    hash: str | None
    status: str


def insert_rows(conn: sqlite3.Connection, sql: str, rows: Sequence[tuple], per: int = 100) -> None:
    """``executemany`` of ``INSERT ... VALUES (?,...)`` with ``per`` rows a statement: a
    bulk insert of many short rows spends ~40% less (one statement step per ``per``
    rows instead of per row)."""
    head, _, one = sql.rpartition("VALUES")
    n = len(rows) - len(rows) % per
    if n:
        many = f"{head}VALUES {','.join([one.strip()] * per)}"
        flat = chain.from_iterable
        conn.executemany(many, (tuple(flat(rows[i : i + per])) for i in range(0, n, per)))
    if n < len(rows):
        conn.executemany(sql, rows[n:])


def _ids(conn: sqlite3.Connection, ids: Iterable[int]) -> str:
    """Fill a temp table with ``ids`` and return its name (for ``IN (SELECT id FROM ...)``)."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS tmp_ids (id INTEGER PRIMARY KEY)")
    conn.execute("DELETE FROM tmp_ids")
    conn.executemany("INSERT OR IGNORE INTO tmp_ids VALUES (?)", ((i,) for i in ids))
    return "SELECT id FROM temp.tmp_ids"


@dataclass(frozen=True, slots=True)
class ResolverFile:
    """A parsed file as the resolver reads it (``exports``: its ``__all__`` as JSON, if any)."""

    id: int
    path: str
    lang: str
    module: str | None
    exports: str | None


@dataclass(slots=True)
class Written:
    """What a full build wrote, kept for the resolver (in the row shapes of the
    ``*_for_resolver`` reads below, in the same order)."""

    files: list[ResolverFile]
    symbols: list[NewSymbol]  # id order
    imports: list[NewImport]  # file then statement order
    types: list[TypeRow]  # insertion order
    bases: list[BaseRef]  # ref order


class Writer:
    """Bulk insertion of parsed files with ids assigned here, so refs can be resolved
    straight from memory after a full parse (no read-back). With ``keep`` (a full
    build) it also keeps what it wrote for the resolver, and holds the symbols back
    until ``write_symbols``: they go in once, with their rank, instead of being
    updated after the ranking."""

    def __init__(self, conn: sqlite3.Connection, tree_id: int, keep: bool = False) -> None:
        self.conn = conn
        self.tree_id = tree_id
        self.next_symbol = conn.execute(
            "SELECT coalesce(max(id), 0) + 1 FROM code_symbols"
        ).fetchone()[0]
        self.next_ref = conn.execute(
            "SELECT coalesce(max(first_id + n), 1) FROM code_file_refs"
        ).fetchone()[0]
        self.symbols: list[NewSymbol] = []
        self.refs: list[RefRow] = []
        self.file_refs: list[tuple[int, int, int, int, bytes, bytes | None]] = []  # code_file_refs rows
        self.keys: list[tuple[int, str, int]] = []  # code_ref_keys rows
        self.imports: list[NewImport] = []
        self.types: list[TypeRow] = []
        # with keep, ``symbols`` only grows: the kept list is the same list
        self.kept = Written([], self.symbols, [], [], []) if keep else None

    def add(self, path: str, lang: str, size: int, mtime_ns: int, digest: str, facts: ParsedFile) -> int:
        """Queue one parsed file (``facts`` from ``marm.code.extract``); returns its id."""
        status = "partial" if facts.partial else "ok"
        cur = self.conn.execute(
            "INSERT INTO code_files (tree_id, path, lang, module, size, mtime_ns, hash, lines, status,"
            " note, exports) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                self.tree_id,
                path,
                lang,
                facts.module,
                size,
                mtime_ns,
                digest,
                facts.lines,
                status,
                "syntax errors: indexed partially" if facts.partial else None,
                None if facts.exports is None else orjson.dumps(facts.exports).decode(),
            ),
        )
        fid = int(cur.lastrowid or 0)
        if self.kept is not None:
            exports = None if facts.exports is None else orjson.dumps(facts.exports).decode()
            self.kept.files.append(ResolverFile(fid, path, lang, facts.module, exports))
        tid = self.tree_id
        base = self.next_symbol
        self.next_symbol += len(facts.symbols)
        self.symbols.extend(map(_new_symbol, (
            (
                base + i,
                tid,
                fid,
                base + parent if parent >= 0 else None,
                name,
                qname,
                kind,
                line,
                end,
                sig,
            )
            for i, (name, qname, kind, line, end, sig, parent) in enumerate(facts.symbols)
        )))
        self.imports.extend(map(_new_import, ((tid, fid, *i) for i in facts.imports)))
        rid = self.next_ref
        self.next_ref += len(facts.refs)
        self.refs.extend(map(_ref_row, (
            (rid + i, fid, base + scope, kind, name, key, recv, line)
            for i, (kind, scope, name, key, recv, line) in enumerate(facts.refs)
        )))
        bases = [r for r in facts.refs if r.kind == "base"]  # also apart: lazy lookups read them
        if bases and self.kept is not None:
            self.kept.bases.extend(map(_base_ref, ((base + r.scope, r.name, r.receiver) for r in bases)))
        self.file_refs.append(
            (
                fid,
                rid,
                len(facts.refs),
                base,
                orjson.dumps(facts.refs, default=tuple),  # stored as plain JSON lists
                orjson.dumps(bases, default=tuple) if bases else None,
            )
        )
        self.keys.extend((tid, key, fid) for key in {r.key for r in facts.refs})
        self.types.extend(map(_type_row, ((fid, base + scope, var, typ) for scope, var, typ in facts.types)))
        return fid

    def flush(self) -> list[RefRow]:
        """Write everything queued (symbols only without ``keep``); returns the refs
        written."""
        c = self.conn
        if self.kept is None:
            insert_rows(
                c,
                "INSERT INTO code_symbols (id, tree_id, file_id, parent_id, name, qname, kind,"
                " line, end_line, signature) VALUES (?,?,?,?,?,?,?,?,?,?)",
                self.symbols,
            )
            self.symbols = []
        else:
            self.kept.imports.extend(self.imports)
            self.kept.types.extend(self.types)
        insert_rows(
            c,
            "INSERT INTO code_imports (tree_id, file_id, local, module, name, kind, line)"
            " VALUES (?,?,?,?,?,?,?)",
            self.imports,
        )
        c.executemany(
            "INSERT INTO code_file_refs (file_id, first_id, n, symbol_base, refs, bases)"
            " VALUES (?,?,?,?,?,?)",
            self.file_refs,
        )
        insert_rows(c, "INSERT INTO code_ref_keys (tree_id, key, file_id) VALUES (?,?,?)", self.keys)
        insert_rows(
            c, "INSERT INTO code_types (file_id, scope_id, var, type) VALUES (?,?,?,?)", self.types
        )
        refs = self.refs
        self.imports, self.refs, self.types, self.file_refs, self.keys = [], [], [], [], []
        return refs

    def write_symbols(self, ranks: dict[int, float]) -> None:
        """Write the held-back symbols (``keep``) with their rank (0 when unranked)."""
        assert self.kept is not None
        get = ranks.get
        insert_rows(
            self.conn,
            "INSERT INTO code_symbols (id, tree_id, file_id, parent_id, name, qname, kind, line,"
            " end_line, signature, rank) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [(*row, get(row.id, 0.0)) for row in self.symbols],
        )


def _unpack(rows: Iterable[tuple]) -> Iterator[RefRow]:
    """Refs from code_file_refs rows (file_id, first_id, symbol_base, refs)."""
    for fid, first, base, blob in rows:
        for i, (kind, scope, name, key, receiver, line) in enumerate(orjson.loads(blob)):
            yield _ref_row((first + i, fid, base + scope, kind, name, key, receiver, line))


def _file_refs(conn: sqlite3.Connection, where: str, args: tuple = ()) -> list[tuple]:
    return conn.execute(
        "SELECT r.file_id, r.first_id, r.symbol_base, r.refs FROM code_file_refs r"
        f" WHERE {where} ORDER BY r.first_id",
        args,
    ).fetchall()


def _tree_files(tree_id: int) -> tuple[str, tuple]:
    return "r.file_id IN (SELECT id FROM code_files WHERE tree_id = ?)", (tree_id,)


def _bases(rows: Iterable[tuple]) -> list[BaseRef]:
    """Base-class refs from (symbol_base, bases JSON) rows."""
    return [
        _base_ref((base + scope, name, receiver))
        for base, blob in rows
        for _, scope, name, _, receiver, _ in orjson.loads(blob)
    ]


@dataclass(frozen=True, slots=True)
class Shape:
    """What other files can see of a set of files: enough to decide what to re-resolve."""

    names: set[str]  # defined names and ``__all__`` entries
    modules: set[str]  # module keys
    bases: set[tuple]  # (class qname, base name, receiver), and (class qname, None, None)
    interface: set[tuple]  # (path, what, ...) of definitions, exports and import bindings


# -- queries -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SymbolRow:
    id: int
    name: str
    qname: str
    kind: str
    path: str
    line: int
    end_line: int
    signature: str
    rank: float


_SYM = (
    "s.id, s.name, s.qname, s.kind, f.path, s.line, s.end_line, s.signature, s.rank"
    " FROM code_symbols s JOIN code_files f ON f.id = s.file_id"
)


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass(frozen=True, slots=True)
class FileRow:
    path: str
    lang: str
    lines: int
    status: str
    symbols: int


@dataclass(frozen=True, slots=True)
class EdgeRow:
    src_id: int
    dst_id: int
    kind: str
    rule: str
    confidence: float
    path: str  # file of the reference
    line: int


@dataclass(frozen=True, slots=True)
class SymbolBrief:
    """What the resolver knows of a symbol it looks up by id."""

    file_id: int
    parent_id: int | None
    name: str
    kind: str


@dataclass(frozen=True, slots=True)
class NamedSymbol:
    """A symbol the resolver finds by its name."""

    id: int
    file_id: int
    parent_id: int | None
    kind: str


@dataclass(frozen=True, slots=True)
class ImportRow:
    """One import binding of a file: ``local`` names ``module``'s ``name`` (kind ``from``,
    ``import``, ``star``, ...)."""

    local: str | None
    module: str
    name: str | None
    kind: str


@dataclass(frozen=True, slots=True)
class Reexporter:
    """A file that imports names from a module, through which they can travel on."""

    file_id: int
    module: str | None


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What a memory's staleness check compares of a file between index runs."""

    hash: str | None
    lines: int
    names: tuple[str, ...]  # sorted qualified names of its symbols


@dataclass(frozen=True, slots=True)
class SymbolLink:
    """A definition of a name in an indexed repository."""

    repo: str
    qname: str
    kind: str
    path: str
    line: int


class CodeGraph:
    """The code part of the derived database: one open connection, every read and write.

    ``CodeGraph.open(home)`` opens (and, for a new part version, rebuilds) it; writes go
    inside ``transaction()``; rows leave as the records above, or for the resolver and
    the ranking as the bulk rows (NamedTuples, made in C: it reads hundreds of
    thousands of them).
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, home: Path) -> CodeGraph:
        conn = derived.connect(derived_path(home), PART)
        conn.execute("PRAGMA cache_size = -65536")  # 64 MiB: bulk index inserts stay in memory
        return cls(conn)

    def close(self) -> None:
        self.conn.close()

    def writer(self, tree_id: int, keep: bool = False) -> Writer:
        """Bulk insertion of parsed files (see ``Writer``), inside ``transaction()``."""
        return Writer(self.conn, tree_id, keep)

    def drop_indexes(self) -> None:
        for ddl in INDEXES:
            self.conn.execute(f"DROP INDEX IF EXISTS {ddl.split()[2]}")

    def create_indexes(self) -> None:
        for ddl in INDEXES:
            self.conn.execute(ddl.replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One unit of work (``marm.store.core.atomic``) on the derived database."""
        with core.atomic(self.conn, "the derived database"):
            yield

    def tree(self, root: str, create: bool = False) -> Tree | None:
        if create:
            self.conn.execute("INSERT OR IGNORE INTO code_trees (root) VALUES (?)", (root,))
        row = self.conn.execute(
            "SELECT id, root, indexed_at, files, lines FROM code_trees WHERE root = ?", (root,)
        ).fetchone()
        return None if row is None else Tree(*row)

    def trees(self) -> list[Tree]:
        return [
            Tree(*r)
            for r in self.conn.execute(
                "SELECT id, root, indexed_at, files, lines FROM code_trees ORDER BY root"
            )
        ]

    def finish_tree(
        self, tree_id: int, at: str, edges_delta: int | None = None
    ) -> None:
        """Refresh the tree's totals; ``edges_delta`` (None: unchanged) moves the edge count."""
        self.conn.execute(
            "UPDATE code_trees SET indexed_at = ?, files = (SELECT count(*) FROM code_files WHERE"
            " tree_id = ? AND status != 'skipped'), lines = (SELECT coalesce(sum(lines), 0) FROM code_files"
            " WHERE tree_id = ?), symbols = (SELECT count(*) FROM code_symbols WHERE tree_id = ?) - (SELECT"
            " count(*) FROM code_files WHERE tree_id = ? AND status != 'skipped'), edges = CASE WHEN ? IS NULL THEN edges ELSE max(edges + ?, 0) END"  # noqa: E501
            " WHERE id = ?",
            (at, tree_id, tree_id, tree_id, tree_id, edges_delta, edges_delta, tree_id),
        )

    def ranking_due(self, tree_id: int, changed_edges: int, share: float) -> bool:
        """Add ``changed_edges`` to the edges changed since the last ranking; True when they
        reach ``share`` of the tree's edges (then the caller ranks and calls ``ranked``)."""
        self.conn.execute(
            "UPDATE code_trees SET unranked = unranked + ? WHERE id = ?", (changed_edges, tree_id)
        )
        unranked, edges = self.conn.execute(
            "SELECT unranked, edges FROM code_trees WHERE id = ?", (tree_id,)
        ).fetchone()
        return unranked > 0 and unranked >= share * edges

    def ranked(self, tree_id: int, edges: int) -> None:
        self.conn.execute("UPDATE code_trees SET unranked = 0, edges = ? WHERE id = ?", (edges, tree_id))

    def file_states(self, tree_id: int) -> dict[str, FileState]:
        return {
            r[0]: FileState(*r[1:])
            for r in self.conn.execute(
                "SELECT path, id, size, mtime_ns, hash, status FROM code_files WHERE tree_id = ?",
                (tree_id,),
            )
        }

    def file_facts(self, tree_id: int, paths: Sequence[str]) -> dict[str, FileFacts]:
        """``{path: its facts}`` of those files that are indexed."""
        out: dict[str, FileFacts] = {}
        for path in dict.fromkeys(paths):
            row = self.conn.execute("SELECT id, hash, lines FROM code_files WHERE tree_id = ? AND path = ?",
                                    (tree_id, path)).fetchone()
            if row is not None:
                names = sorted({r[0] for r in self.conn.execute(
                    "SELECT qname FROM code_symbols WHERE file_id = ? AND kind != 'module'", (row[0],))})
                out[path] = FileFacts(row[1], int(row[2]), tuple(names))
        return out

    def touch_files(self, rows: Iterable[FileStat]) -> None:
        """Store a new (size, mtime) for files whose content did not change."""
        self.conn.executemany("UPDATE code_files SET size = ?, mtime_ns = ? WHERE id = ?", rows)

    def skipped(self, tree_id: int) -> list[SkippedFile]:
        """Files skipped or indexed partially, by path."""
        return [SkippedFile(*r) for r in self.conn.execute(
            "SELECT path, status, note FROM code_files WHERE tree_id = ? AND status != 'ok' ORDER BY path",
            (tree_id,),
        )]

    def delete_files(self, file_ids: Sequence[int]) -> int:
        """Remove files and everything parsed from them, and every edge into or out of them
        (returns how many edges went)."""
        if not file_ids:
            return 0
        ids = _ids(self.conn, file_ids)
        gone = self.conn.execute(f"DELETE FROM code_edges WHERE file_id IN ({ids})").rowcount
        gone += self.conn.execute(
            f"DELETE FROM code_edges WHERE dst_id IN"
            f" (SELECT id FROM code_symbols WHERE file_id IN ({ids}))"
        ).rowcount
        for table in ("code_types", "code_file_refs", "code_ref_keys", "code_imports", "code_symbols"):
            self.conn.execute(f"DELETE FROM {table} WHERE file_id IN ({ids})")
        self.conn.execute(f"DELETE FROM code_files WHERE id IN ({ids})")
        return gone

    def tree_aliases(self, tree_id: int) -> str | None:
        """The import aliases the tree was last indexed with (``marm.code.aliases.stamp``)."""
        return self.conn.execute("SELECT aliases FROM code_trees WHERE id = ?", (tree_id,)).fetchone()[0]

    def set_tree_aliases(self, tree_id: int, stamp: str) -> None:
        self.conn.execute("UPDATE code_trees SET aliases = ? WHERE id = ?", (stamp, tree_id))

    def clear_tree(self, tree_id: int) -> None:
        for table in ("code_edges", "code_ref_keys", "code_imports", "code_symbols"):
            self.conn.execute(f"DELETE FROM {table} WHERE tree_id = ?", (tree_id,))
        for table in ("code_types", "code_file_refs"):
            self.conn.execute(
                f"DELETE FROM {table} WHERE file_id IN (SELECT id FROM code_files WHERE tree_id = ?)",
                (tree_id,),
            )
        self.conn.execute("DELETE FROM code_files WHERE tree_id = ?", (tree_id,))

    def forget_tree(self, tree_id: int) -> None:
        self.clear_tree(tree_id)
        self.conn.execute("DELETE FROM code_trees WHERE id = ?", (tree_id,))

    def add_skipped(
        self, tree_id: int,
        path: str,
        lang: str,
        size: int,
        mtime_ns: int,
        digest: str | None,
        note: str,
    ) -> None:
        self.conn.execute(
            "INSERT INTO code_files (tree_id, path, lang, size, mtime_ns, hash, status, note)"
            " VALUES (?,?,?,?,?,?, 'skipped', ?)",
            (tree_id, path, lang, size, mtime_ns, digest, note),
        )

    # -- what the resolver reads -------------------------------------------------------

    def files_for_resolver(self, tree_id: int) -> list[ResolverFile]:
        """Every parsed file."""
        return [ResolverFile(*r) for r in self.conn.execute(
            "SELECT id, path, lang, module, exports FROM code_files WHERE tree_id = ?"
            " AND status != 'skipped'",
            (tree_id,),
        )]

    def symbols_for_resolver(self, tree_id: int) -> list[ResolverSymbol]:
        """Every symbol, in id order."""
        return make_rows(ResolverSymbol, self.conn.execute(
            "SELECT id, file_id, parent_id, name, kind FROM code_symbols WHERE tree_id = ? ORDER BY id",
            (tree_id,),
        ))

    def imports_for_resolver(self, tree_id: int) -> list[ResolverImport]:
        """Every import binding, in statement order."""
        return make_rows(ResolverImport, self.conn.execute(
            "SELECT file_id, local, module, name, kind FROM code_imports WHERE tree_id = ?"
            " ORDER BY file_id, line, rowid",
            (tree_id,),
        ))

    def bases_for_resolver(self, tree_id: int) -> list[BaseRef]:
        """Every base-class reference, in ref order."""
        return _bases(
            self.conn.execute(
                "SELECT symbol_base, bases FROM code_file_refs WHERE bases IS NOT NULL AND file_id IN"
                " (SELECT id FROM code_files WHERE tree_id = ?) ORDER BY first_id",
                (tree_id,),
            )
        )

    def symbol_brief(self, sid: int) -> SymbolBrief | None:
        row = self.conn.execute(
            "SELECT file_id, parent_id, name, kind FROM code_symbols WHERE id = ?", (sid,)
        ).fetchone()
        return None if row is None else SymbolBrief(*row)

    def symbols_with_name(self, tree_id: int, name: str) -> list[NamedSymbol]:
        """The tree's symbols called ``name``, in id order."""
        return [NamedSymbol(*r) for r in self.conn.execute(
            "SELECT id, file_id, parent_id, kind FROM code_symbols WHERE tree_id = ? AND name = ?"
            " ORDER BY id",
            (tree_id, name),
        )]

    def module_symbol(self, file_id: int) -> int | None:
        row = self.conn.execute(
            "SELECT id FROM code_symbols WHERE file_id = ? AND kind = 'module'", (file_id,)
        ).fetchone()
        return None if row is None else row[0]

    def top_level(self, file_id: int, kinds: tuple[str, ...]) -> list[int]:
        return [
            r[0]
            for r in self.conn.execute(
                f"SELECT s.id FROM code_symbols s JOIN code_symbols m ON m.id = s.parent_id AND m.kind = 'module'"
                f" WHERE s.file_id = ? AND s.kind IN ({','.join('?' * len(kinds))}) ORDER BY s.id",
                (file_id, *kinds),
            )
        ]

    def imports_of(self, file_id: int) -> list[ImportRow]:
        """One file's import bindings, in statement order."""
        return [ImportRow(*r) for r in self.conn.execute(
            "SELECT local, module, name, kind FROM code_imports WHERE file_id = ? ORDER BY line, rowid",
            (file_id,),
        )]

    def bases_in_file(self, file_id: int) -> list[BaseRef]:
        """One file's base-class references."""
        return _bases(
            self.conn.execute(
                "SELECT symbol_base, bases FROM code_file_refs WHERE file_id = ? AND bases IS NOT NULL",
                (file_id,),
            )
        )

    def types_for_files(self, file_ids: Iterable[int]) -> list[TypeRow]:
        """The typed receivers of some files."""
        ids = _ids(self.conn, file_ids)
        return make_rows(TypeRow, self.conn.execute(
            f"SELECT file_id, scope_id, var, type FROM code_types WHERE file_id IN ({ids})"
        ))

    def all_refs(self, tree_id: int) -> list[RefRow]:
        """Every ref of the tree."""
        return list(_unpack(_file_refs(self.conn, *_tree_files(tree_id))))

    def affected_refs(
        self, tree_id: int,
        file_ids: Iterable[int],
        names: Iterable[str],
        ref_files: dict[int, int],
    ) -> list[RefRow]:
        """Refs in ``file_ids``, refs whose key is in ``names``, and the refs ``ref_files``
        names (ref id -> its file), in id order."""
        names = set(names)
        whole = set(file_ids)
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS tmp_names (name TEXT PRIMARY KEY)")
        self.conn.execute("DELETE FROM tmp_names")
        self.conn.executemany("INSERT OR IGNORE INTO tmp_names VALUES (?)", ((n,) for n in names))
        keyed = {
            r[0]
            for r in self.conn.execute(
                "SELECT DISTINCT file_id FROM code_ref_keys WHERE tree_id = ? AND key IN"
                " (SELECT name FROM temp.tmp_names)",
                (tree_id,),
            )
        }
        ids = _ids(self.conn, whole | keyed | set(ref_files.values()))
        out: list[RefRow] = []
        for fid, first, base, blob in _file_refs(self.conn, f"r.file_id IN ({ids})"):
            refs = orjson.loads(blob)
            picked: Iterable[tuple[int, Any]]
            if fid in whole:
                picked = enumerate(refs, first)
            else:  # only some refs of this file: skip the others before unpacking them
                picked = (
                    (rid, r) for rid, r in enumerate(refs, first) if r[3] in names or rid in ref_files
                )
            for rid, (kind, scope, name, key, receiver, line) in picked:
                out.append(_ref_row((rid, fid, base + scope, kind, name, key, receiver, line)))
        return out

    def importers(self, tree_id: int, modules: Iterable[str]) -> set[int]:
        """Files with an import statement naming one of ``modules``."""
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS tmp_names (name TEXT PRIMARY KEY)")
        self.conn.execute("DELETE FROM tmp_names")
        self.conn.executemany("INSERT OR IGNORE INTO tmp_names VALUES (?)", ((m,) for m in modules))
        return {
            r[0]
            for r in self.conn.execute(
                "SELECT DISTINCT file_id FROM code_imports WHERE tree_id = ? AND module IN"
                " (SELECT name FROM temp.tmp_names)",
                (tree_id,),
            )
        }

    def shape(self, file_ids: Sequence[int]) -> Shape:
        ids = _ids(self.conn, file_ids)
        names: set[str] = set()
        interface: set[tuple] = set()
        for path, name in self.conn.execute(
            f"SELECT DISTINCT f.path, s.name FROM code_symbols s JOIN code_files f"
            f" ON f.id = s.file_id WHERE s.file_id IN ({ids})"
        ):
            names.add(name)
            interface.add((path, "def", name))
        modules = set()
        for path, module, exports in self.conn.execute(
            f"SELECT path, module, exports FROM code_files WHERE id IN ({ids})"
        ):
            if module:
                modules.add(module)
            for name in orjson.loads(exports) if exports else ():
                names.add(name)
                interface.add((path, "export", name))
        for row in self.conn.execute(
            f"SELECT f.path, i.local, i.module, i.name, i.kind FROM code_imports i"
            f" JOIN code_files f ON f.id = i.file_id WHERE i.file_id IN ({ids})"
        ):
            interface.add((row[0], "import", *row[1:]))
        qnames = dict(self.conn.execute(f"SELECT id, qname FROM code_symbols WHERE file_id IN ({ids})"))
        bases = {
            (qnames.get(r.src_id), r.name, r.receiver)
            for r in _unpack(_file_refs(self.conn, f"r.file_id IN ({ids})"))
            if r.kind == "base"
        }
        classes = {
            r[0]
            for r in self.conn.execute(
                f"SELECT qname FROM code_symbols WHERE file_id IN ({ids}) AND kind IN"
                " ('class', 'interface', 'struct', 'trait', 'type')"
            )
        }
        return Shape(names, modules, bases | {(c, None, None) for c in classes}, interface)

    def reexporters(
        self, tree_id: int, modules: Iterable[str]
    ) -> list[Reexporter]:
        """The files that import names from (or everything from) ``modules``: the files
        through which a name can travel on to further importers."""
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS tmp_names (name TEXT PRIMARY KEY)")
        self.conn.execute("DELETE FROM tmp_names")
        self.conn.executemany("INSERT OR IGNORE INTO tmp_names VALUES (?)", ((m,) for m in modules))
        return [Reexporter(*r) for r in self.conn.execute(
            "SELECT DISTINCT f.id, f.module FROM code_imports i JOIN code_files f ON f.id = i.file_id"
            " WHERE i.tree_id = ? AND i.kind IN ('from', 'star') AND i.module IN (SELECT name FROM temp.tmp_names)",
            (tree_id,),
        )]

    def refs_into(self, file_ids: Sequence[int]) -> dict[int, int]:
        """Refs (from anywhere) whose edge points into the given files: ref id -> its file."""
        ids = _ids(self.conn, file_ids)
        return dict(
            self.conn.execute(
                f"SELECT DISTINCT e.ref_id, e.file_id FROM code_edges e JOIN code_symbols s"
                f" ON s.id = e.dst_id WHERE s.file_id IN ({ids})"
            ).fetchall()
        )

    def delete_edges_of_refs(self, refs: Iterable[RefKey]) -> int:
        """Delete the edges of ``refs``. Edges are indexed on (file, ref): deleting a
        file's edges (``delete_files``) uses the same index."""
        self.conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS tmp_refs (file_id INTEGER, ref_id INTEGER,"
            " PRIMARY KEY (file_id, ref_id))"
        )
        self.conn.execute("DELETE FROM tmp_refs")
        self.conn.executemany("INSERT OR IGNORE INTO tmp_refs VALUES (?, ?)", refs)
        return self.conn.execute(
            "DELETE FROM code_edges WHERE rowid IN (SELECT e.rowid FROM temp.tmp_refs t"
            " CROSS JOIN code_edges e ON e.file_id = t.file_id AND e.ref_id = t.ref_id)"
        ).rowcount

    def delete_tree_edges(self, tree_id: int) -> None:
        self.conn.execute("DELETE FROM code_edges WHERE tree_id = ?", (tree_id,))

    def add_edges(self, tree_id: int, rows: Sequence[NewEdge]) -> None:
        insert_rows(
            self.conn,
            "INSERT INTO code_edges (tree_id, ref_id, src_id, dst_id, kind, rule, confidence, file_id, line)"
            f" VALUES ({int(tree_id)},?,?,?,?,?,?,?,?)",
            rows,
        )

    def edge_weights(self, tree_id: int) -> list[EdgeWeight]:
        return make_rows(EdgeWeight, self.conn.execute(
            "SELECT src_id, dst_id, confidence FROM code_edges WHERE tree_id = ?", (tree_id,)
        ))

    def set_ranks(self, tree_id: int, ranks: Iterable[tuple[int, float]]) -> None:
        """Replace the tree's ranks with ``(symbol id, rank)`` pairs (others get 0)."""
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS tmp_rank (id INTEGER PRIMARY KEY, rank REAL)")
        self.conn.execute("DELETE FROM tmp_rank")
        self.conn.executemany("INSERT INTO tmp_rank VALUES (?, ?)", ranks)
        self.conn.execute(
            "UPDATE code_symbols SET rank = 0 WHERE tree_id = ? AND rank != 0"
            " AND id NOT IN (SELECT id FROM temp.tmp_rank)",
            (tree_id,),
        )
        self.conn.execute(
            "UPDATE code_symbols SET rank = t.rank FROM temp.tmp_rank t WHERE code_symbols.id = t.id"
            " AND code_symbols.rank != t.rank"
        )

    def find_symbols(
        self, tree_id: int,
        query: str,
        kind: str | None = None,
        limit: int = 20,
        exact_only: bool = False,
    ) -> list[SymbolRow]:
        """Symbols named ``query``: exact name or qualified name (or its dotted tail) first,
        then (unless ``exact_only``) names containing it; each group by centrality."""
        kind_sql = " AND s.kind = ?" if kind else ""
        extra = [kind] if kind else []
        out: dict[int, SymbolRow] = {}

        def take(sql: str, args: list) -> None:
            for r in self.conn.execute(
                f"SELECT {_SYM} WHERE s.tree_id = ?{kind_sql} AND {sql}"
                " ORDER BY +s.rank DESC, f.path, s.line LIMIT ?",  # + : filter by name first
                [tree_id, *extra, *args, limit],
            ):
                if len(out) < limit:
                    out.setdefault(r[0], SymbolRow(*r))

        if "." in query or "/" in query:
            # a qualified name ends in the symbol's name (a module's: its last dotted part,
            # or its file name for path keys): the name index finds it, no qname index
            names = [query.rsplit(".", 1)[-1], posixpath.basename(query)]
            take("s.name IN (?, ?) AND s.qname = ?", [*names, query])
            tail = query.replace("/", ".").rsplit(".", 1)[-1]
            if len(out) < limit and tail:  # the name index narrows, then the dotted tail filters
                take(
                    "s.name = ? AND (s.qname LIKE ? ESCAPE '\\' OR s.qname LIKE ? ESCAPE '\\')",
                    [tail, "%." + _like(query), "%/" + _like(query)],
                )
        else:
            take("s.name = ? AND s.kind != 'module'", [query])
            take("s.name = ?", [query])
        if not exact_only and len(out) < limit:
            take(
                "s.name LIKE ? ESCAPE '\\' AND s.kind != 'module'",
                ["%" + _like(query.rsplit(".", 1)[-1]) + "%"],
            )
        return list(out.values())

    def find_files(
        self, tree_id: int, query: str, limit: int = 10
    ) -> list[FileRow]:
        rows = self.conn.execute(
            "SELECT f.path, f.lang, f.lines, f.status, (SELECT count(*) FROM code_symbols s WHERE"
            " s.file_id = f.id) FROM code_files f WHERE f.tree_id = ? AND f.path LIKE ? ESCAPE '\\'"
            " ORDER BY (f.path = ?) DESC, length(f.path), f.path LIMIT ?",
            (tree_id, "%" + _like(query) + "%", query, limit),
        ).fetchall()
        return [FileRow(*r) for r in rows]

    def symbols_by_id(self, ids: Iterable[int]) -> dict[int, SymbolRow]:
        idl = _ids(self.conn, ids)
        return {r[0]: SymbolRow(*r) for r in self.conn.execute(f"SELECT {_SYM} WHERE s.id IN ({idl})")}

    def edges_touching(
        self, ids: Iterable[int],
        direction: str,
        kinds: tuple[str, ...],
        limit: int = 100_000,
    ) -> list[EdgeRow]:
        """Edges out of (``callees``) or into (``callers``) the given symbols, the most
        confident first."""
        idl = _ids(self.conn, ids)
        column = "src_id" if direction == "callees" else "dst_id"
        marks = ",".join("?" * len(kinds))
        return [
            EdgeRow(*r)
            for r in self.conn.execute(
                f"SELECT e.src_id, e.dst_id, e.kind, e.rule, e.confidence, f.path, e.line FROM code_edges e"
                f" JOIN code_files f ON f.id = e.file_id WHERE e.{column} IN ({idl}) AND e.kind IN ({marks})"
                " ORDER BY e.confidence DESC, f.path, e.line LIMIT ?",
                (*kinds, limit),
            )
        ]

    def symbols_at(
        self, tree_id: int, path: str, lines: Iterable[int]
    ) -> list[int]:
        """The innermost symbol around each line of ``path`` (the module when none is)."""
        rows = self.conn.execute(
            "SELECT s.id, s.line, s.end_line, s.kind FROM code_symbols s JOIN code_files f ON f.id = s.file_id"
            " WHERE f.tree_id = ? AND f.path = ?",
            (tree_id, path),
        ).fetchall()
        out = set()
        for line in lines:
            around = [r for r in rows if r[1] <= line <= r[2] or r[3] == "module"]
            if around:
                out.add(min(around, key=lambda r: (r[3] == "module", r[2] - r[1]))[0])
        return sorted(out)

    def packages(self, tree_id: int) -> list[FileSize]:
        """Every file's size, for grouping into packages."""
        return [FileSize(*r) for r in self.conn.execute(
            "SELECT f.path, f.lang, f.lines, (SELECT count(*) FROM code_symbols s WHERE s.file_id = f.id"
            " AND s.kind != 'module'), f.status FROM code_files f WHERE f.tree_id = ?",
            (tree_id,),
        )]

    def top_ranked(
        self, tree_id: int,
        limit: int,
        kinds: tuple[str, ...] | None = None,
        names: tuple[str, ...] | None = None,
    ) -> list[SymbolRow]:
        sql = f"SELECT {_SYM} WHERE s.tree_id = ?"
        args: list = [tree_id]
        if kinds:
            sql += f" AND s.kind IN ({','.join('?' * len(kinds))})"
            args += kinds
        if names:
            sql += f" AND s.name IN ({','.join('?' * len(names))})"
            args += names
        return [
            SymbolRow(*r)
            for r in self.conn.execute(sql + " ORDER BY s.rank DESC, s.id LIMIT ?", [*args, limit])
        ]

    def module_files(self, tree_id: int) -> list[ModuleFile]:
        """The module symbol of every parsed file, with the file's path."""
        return [ModuleFile(*r) for r in self.conn.execute(
            "SELECT s.id, f.path FROM code_files f JOIN code_symbols s ON s.file_id = f.id"
            " AND s.kind = 'module' WHERE f.tree_id = ?",
            (tree_id,),
        )]

    def counts(self, tree_id: int) -> dict[str, int]:
        one = self.conn.execute
        return {
            "symbols": one("SELECT symbols FROM code_trees WHERE id = ?", (tree_id,)).fetchone()[0],
            "edges": one("SELECT edges FROM code_trees WHERE id = ?", (tree_id,)).fetchone()[0],
        }

    def snapshot(self, tree_id: int) -> dict[str, set[tuple]]:
        """The tree's graph keyed on values (paths, qualified names), never on row ids: two
        indexes of the same files compare equal exactly when they built the same graph."""
        return {
            "files": set(
                self.conn.execute(
                    "SELECT path, lang, module, hash, lines, status, note, exports"
                    " FROM code_files WHERE tree_id = ?",
                    (tree_id,),
                )
            ),
            "symbols": set(
                self.conn.execute(
                    "SELECT f.path, s.qname, s.kind, s.line, s.end_line, s.signature, p.qname, round(s.rank, 4)"
                    " FROM code_symbols s JOIN code_files f ON f.id = s.file_id"
                    " LEFT JOIN code_symbols p ON p.id = s.parent_id WHERE s.tree_id = ?",
                    (tree_id,),
                )
            ),
            "edges": set(
                self.conn.execute(
                    "SELECT a.qname, fa.path, b.qname, fb.path, e.kind, e.rule, e.confidence, e.line"
                    " FROM code_edges e JOIN code_symbols a ON a.id = e.src_id JOIN code_files fa ON fa.id = a.file_id"
                    " JOIN code_symbols b ON b.id = e.dst_id JOIN code_files fb ON fb.id = b.file_id"
                    " WHERE e.tree_id = ?",
                    (tree_id,),
                )
            ),
        }

    def symbols_named(
        self, names: Sequence[str], limit: int = 5
    ) -> dict[str, list[SymbolLink]]:
        """For each name: up to ``limit`` definitions, most central first. A plain name
        matches symbol names; a dotted one a qualified name or its tail."""
        out: dict[str, list[tuple[float, SymbolLink]]] = {}
        for t in self.trees():
            for name in names:
                for r in self.find_symbols(t.id, name, limit=limit, exact_only=True):
                    if r.kind != "module":
                        out.setdefault(name, []).append(
                            (r.rank, SymbolLink(t.root, r.qname, r.kind, r.path, r.line))
                        )
        return {
            n: [link for _, link in sorted(rows, key=lambda x: -x[0])[:limit]] for n, rows in out.items()
        }
