"""One file's facts: symbols, imports, references (calls, base classes, imports), typed
variables and ``__all__``, from one tree-sitter query per language.

The query yields flat matches; scoping (which definition encloses which call, and
hence each qualified name) is one sweep over byte offsets, so no Python code walks the
tree node by node. Facts are rows of the code graph's parse types (NamedTuples,
``marm.store.code_graph``); across process boundaries (a large index split over worker
processes) they travel as plain tuples, which pickle several times faster.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter
from typing import Any

from marm.code.aliases import Alias, rewrite
from marm.code.languages import LANGS, load
from marm.store.code_graph import ParsedImport, ParsedRef, ParsedSymbol, ParsedType, make_rows

#: Kinds of definitions that make the functions inside them methods.
CLASS_KINDS = frozenset({"class", "interface", "struct", "impl", "trait", "type", "enum"})

_MAX_SIGNATURE = 200
_END = float("inf")  # past every byte offset
_IMPORT_REF = {"module": "import", "from": "import-from", "star": "import-star"}
_TS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".d")


#: Rows as each parse step makes them (``tuple.__new__``: no Python call per row).
_symbol: Any = partial(tuple.__new__, ParsedSymbol)
_import: Any = partial(tuple.__new__, ParsedImport)
_ref: Any = partial(tuple.__new__, ParsedRef)
_type: Any = partial(tuple.__new__, ParsedType)


@dataclass(slots=True)
class Facts:
    """What a file defines and references. Index 0 of ``symbols`` is the module itself."""

    module: str
    lines: int
    partial: bool = False
    symbols: list[ParsedSymbol] = field(default_factory=list)
    imports: list[ParsedImport] = field(default_factory=list)
    refs: list[ParsedRef] = field(default_factory=list)
    types: list[ParsedType] = field(default_factory=list)  # typed receivers
    exports: list[str] | None = None  # Python ``__all__``

    def __reduce__(self) -> tuple[Any, tuple]:
        """Pickled as plain tuples (a NamedTuple pickles ~5x slower, and a worker process
        sends every parsed file), made rows again on the other side."""
        return _unpickle, (self.module, self.lines, self.partial, [tuple(r) for r in self.symbols],
                           [tuple(r) for r in self.imports], [tuple(r) for r in self.refs],
                           [tuple(r) for r in self.types], self.exports)


def _unpickle(module: str, lines: int, partial: bool, symbols: list[tuple], imports: list[tuple],
              refs: list[tuple], types: list[tuple], exports: list[str] | None) -> Facts:
    return Facts(module, lines, partial, make_rows(ParsedSymbol, symbols), make_rows(ParsedImport, imports),
                 make_rows(ParsedRef, refs), make_rows(ParsedType, types), exports)


def module_key(path: str, lang: str) -> str:
    """The name other files import ``path`` by: dotted for Python/Java, a path otherwise."""
    stem = path[: path.rfind(".")] if "." in posixpath.basename(path) else path
    if lang == "python":
        parts = stem.split("/")
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        return ".".join(parts)
    if lang == "java":
        return stem.replace("/", ".")
    if lang in ("javascript", "typescript", "tsx") and stem.endswith("/index"):
        return stem[: -len("/index")]
    return stem


def extract(path: str, data: bytes, lang: str, aliases: tuple[Alias, ...] = ()) -> Facts:
    """Parse ``data`` (the bytes of ``path``) and collect its facts; ``aliases`` are the
    repository's JS/TS import path aliases (``marm.code.aliases``)."""
    from tree_sitter import QueryCursor

    _, parser, query = load(lang)
    tree = parser.parse(data)
    root = tree.root_node
    key = module_key(path, lang)
    facts = Facts(
        module=key,
        lines=data.count(b"\n") + (0 if data.endswith(b"\n") else 1),
        partial=root.has_error,
    )
    facts.symbols.append(
        ParsedSymbol(
            posixpath.basename(key) if "/" in key else key.rsplit(".", 1)[-1] or key,
            key,
            "module",
            1,
            root.end_point[0] + 1,
            "",
            -1,
        )
    )
    defs: list[tuple] = []
    refs: list[tuple] = []  # (start, kind, name, receiver, line)
    typed: list[tuple] = []  # (start, var, type)
    fields: list[tuple] = []  # (start, attribute, type, object text or None)
    import_nodes = []
    requires = []  # CommonJS: (declarator, source string)
    # Most files are ASCII: decode them once and slice the text by byte offsets (the
    # same offsets then), instead of decoding every captured node on its own.
    text = data.decode("ascii") if data.isascii() else None
    if text is not None:

        def txt(node) -> str:
            return text[node.start_byte : node.end_byte]

    else:

        def txt(node) -> str:
            return data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def_kinds: dict[int, str] = {}  # pattern index -> definition kind
    for pattern, caps in QueryCursor(query).matches(root):
        callee = caps.get("callee")
        if callee is not None:  # calls are most matches: tested first
            node = callee[0]
            receiver = caps.get("receiver")
            if receiver is not None:
                recv = txt(receiver[0])
                if len(recv) > 80 or "\n" in recv:
                    recv = "?"
            else:
                recv = None
            refs.append((node.start_byte, "call", txt(node), recv, node.start_point[0] + 1))
        elif "name" in caps:
            kind = def_kinds.get(pattern)
            if kind is None:
                kind = def_kinds[pattern] = next(k for k in caps if k.startswith("def."))[4:]
            node = caps["def." + kind][0]
            receivers = caps.get("recv")
            bases = caps.get("bases")
            defs.append(
                (
                    node.start_byte,
                    node.end_byte,
                    kind,
                    txt(caps["name"][0]),
                    node.start_point[0] + 1,
                    node.end_point[0] + 1,
                    _signature(data, text, node),
                    txt(receivers[0]) if receivers else None,
                    _base_names(data, bases[0]) if bases else (),
                )
            )
        elif "import" in caps:
            import_nodes.append(caps["import"][0])
        elif "require" in caps and txt(caps["require.fn"][0]) == "require":
            requires.append((caps["require"][0], caps["require.source"][0]))
        elif "field" in caps:
            node = caps["field"][0]
            owner = caps.get("field.self")
            fields.append(
                (
                    node.start_byte,
                    txt(node),
                    txt(caps["type"][0]),
                    txt(owner[0]) if owner else None,
                )
            )
        elif "var" in caps:
            node = caps["var"][0]
            typed.append((node.start_byte, txt(node), txt(caps["type"][0])))
        elif "all" in caps and txt(caps["all.name"][0]) == "__all__":
            facts.exports = [
                txt(n).strip("'\"") for n in caps["all"][0].named_children if n.type == "string"
            ]
    _scope(facts, key, defs, refs, typed, fields, LANGS[lang].self_names)
    if import_nodes or requires:
        for node in import_nodes:
            if lang == "python":
                facts.imports.extend(_py_imports(data, node, path, key))
            else:
                facts.imports.extend(_js_imports(data, node, path, aliases))
        for node, source in requires:
            facts.imports.extend(_js_require(data, node, source, path, aliases))
        renamed = {
            local: name
            for local, _, name, kind, _ in facts.imports
            if kind == "from" and local and name and local != name
        }
        if renamed:
            facts.refs = [
                _ref((k, s, n, renamed.get(n, n) if r is None else n, r, line))
                for k, s, n, _, r, line in facts.refs
            ]
        sep = LANGS[lang].module_sep
        for local, module, name, kind, line in facts.imports:
            facts.refs.append(
                ParsedRef(
                    _IMPORT_REF[kind],
                    0,
                    local or "*",
                    name or module.rsplit(sep, 1)[-1],
                    module,
                    line,
                )
            )
    return facts


def _text(data: bytes, node) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _signature(data: bytes, text: str | None, node) -> str:
    """The definition's head (up to its body), whitespace collapsed; ``text`` is
    ``data`` decoded when it is ASCII (then byte offsets index it directly)."""
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None else node.end_byte
    end = min(end, node.start_byte + 4 * _MAX_SIGNATURE)
    if text is not None:
        raw = text[node.start_byte : end]
    else:
        raw = data[node.start_byte : end].decode("utf-8", "replace")
    sig = " ".join(raw.split()).rstrip("{ ").rstrip()
    return sig if len(sig) <= _MAX_SIGNATURE else sig[: _MAX_SIGNATURE - 1] + "…"


_BASE_TYPES = frozenset(
    {
        "identifier",
        "type_identifier",
        "attribute",
        "member_expression",
        "scoped_type_identifier",
        "qualified_identifier",
        "generic_type",
    }
)


def _base_names(data: bytes, node, depth: int = 0) -> tuple[str, ...]:
    if node.type in _BASE_TYPES:
        if node.type == "generic_type" and node.named_child_count:
            node = node.named_children[0]
        return (_text(data, node),)
    if depth > 3 or node.type == "keyword_argument":
        return ()
    out: tuple[str, ...] = ()
    for child in node.named_children:
        out += _base_names(data, child, depth + 1)
    return out


def _scope(
    facts: Facts,
    key: str,
    defs: list,
    refs: list,
    typed: list,
    fields: list,
    self_names: tuple[str, ...],
) -> None:
    """Give every definition its parent and qualified name, every reference its scope;
    a typed field becomes ``self.x`` / ``this.x`` in the scope of its class."""
    defs.sort(key=lambda d: (d[0], -d[1]))
    this = self_names[0] if self_names else None
    # events in byte order, told apart by their length (no wrapper tuple per ref):
    # refs (start, kind, name, receiver, line), typed variables (start, var, type),
    # typed fields (start, self.attr, type, None)
    events = refs + typed
    events.extend(
        (start, f"{owner or this}.{attr}", typ, None)
        for start, attr, typ, owner in fields
        if this is not None and (owner is None or owner in self_names)
    )
    events.sort(key=itemgetter(0))
    symbols, out_refs, out_types = facts.symbols, facts.refs, facts.types
    stack: list[tuple[int, int]] = []  # (end byte, symbol index)
    ei, n_events = 0, len(events)
    base_refs = []
    # one sweep in byte order; a final pseudo-definition past the end attaches what is left
    for d in [*defs, None]:
        limit = d[0] if d is not None else _END
        while ei < n_events and events[ei][0] < limit:  # refs/types before this definition
            item = events[ei]
            ei += 1
            at = item[0]
            while stack and stack[-1][0] <= at:
                stack.pop()
            scope = stack[-1][1] if stack else 0
            what = len(item)
            if what == 5:
                _, kind, name, receiver, line = item
                out_refs.append(_ref((kind, scope, name, name, receiver, line)))
            elif what == 3:
                out_types.append(_type((scope, item[1], item[2])))
            else:
                owner = next((i for _, i in reversed(stack) if symbols[i].kind in CLASS_KINDS), None)
                if owner is not None:
                    out_types.append(_type((owner, item[1], item[2])))
        if d is None:
            break
        start, end, kind, name, line, end_line, sig, recv, bases = d
        while stack and stack[-1][0] <= start:
            stack.pop()
        parent = stack[-1][1] if stack else 0
        parent_kind = symbols[parent].kind
        if kind == "function" and parent_kind in CLASS_KINDS:
            kind = "method"
        if recv:
            qname = f"{key}.{recv}.{name}"
        else:
            qname = f"{symbols[parent].qname}.{name}"
        index = len(symbols)
        symbols.append(_symbol((name, qname, kind, line, end_line, sig, parent)))
        for base in bases:
            receiver, _, base_name = base.rpartition(".")
            base_refs.append(_ref(("base", index, base_name, base_name, receiver or None, line)))
        stack.append((end, index))
    out_refs.extend(base_refs)


def _py_imports(data: bytes, node, path: str, key: str) -> list[ParsedImport]:
    line = node.start_point[0] + 1
    out: list[ParsedImport] = []
    if node.type == "import_statement":
        for child in node.named_children:
            if child.type == "dotted_name":
                module = _text(data, child)
                out.append(ParsedImport(module, module, None, "module", line))
            elif child.type == "aliased_import":
                module = _text(data, child.child_by_field_name("name"))
                out.append(
                    ParsedImport(_text(data, child.child_by_field_name("alias")), module, None, "module", line)
                )
        return out
    module_node = node.child_by_field_name("module_name")
    if module_node is None:
        return out
    module = _text(data, module_node)
    if module.startswith("."):
        rest = module.lstrip(".")
        level = len(module) - len(rest)
        package = key.split(".")
        if not path.endswith("__init__.py") and not path.endswith("__init__.pyi"):
            package = package[:-1]
        package = package[: len(package) - (level - 1)] if level > 1 else package
        module = ".".join([*package, rest] if rest else package)
    if any(c.type == "wildcard_import" for c in node.named_children):
        return [ParsedImport(None, module, None, "star", line)]
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name = _text(data, child.child_by_field_name("name"))
            out.append(
                ParsedImport(_text(data, child.child_by_field_name("alias")), module, name, "from", line)
            )
        else:
            name = _text(data, child)
            out.append(ParsedImport(name, module, name, "from", line))
    return out


def _js_module(path: str, source: str, aliases: tuple[Alias, ...]) -> str:
    """The module key an import source names: a root-relative path without extension for
    a relative or aliased source, else the source itself (a package)."""
    if source.startswith("."):
        target = posixpath.normpath(posixpath.join(posixpath.dirname(path), source))
    else:
        aliased = rewrite(source, aliases) if aliases else None
        if aliased is None:
            return source
        target = aliased
    for ext in _TS_EXTS:
        if target.endswith(ext):
            target = target[: -len(ext)]
            break
    return target[: -len("/index")] if target.endswith("/index") else target


def _js_require(data: bytes, node, source, path: str, aliases: tuple[Alias, ...]) -> list[ParsedImport]:
    """``const x = require("./m")`` binds a module; ``const {a, b: c} = require(...)`` names."""
    module = _js_module(path, _text(data, source).strip("'\"`"), aliases)
    line = node.start_point[0] + 1
    target = node.child_by_field_name("name")
    if target is None:
        return []
    if target.type == "identifier":
        return [ParsedImport(_text(data, target), module, None, "module", line)]
    out: list[ParsedImport] = []
    if target.type == "object_pattern":
        for child in target.named_children:
            if child.type == "shorthand_property_identifier_pattern":
                name = _text(data, child)
                out.append(ParsedImport(name, module, name, "from", line))
            elif child.type == "pair_pattern":
                key, value = child.child_by_field_name("key"), child.child_by_field_name("value")
                if key is not None and value is not None and value.type == "identifier":
                    out.append(ParsedImport(_text(data, value), module, _text(data, key), "from", line))
    return out


def _js_imports(data: bytes, node, path: str, aliases: tuple[Alias, ...]) -> list[ParsedImport]:
    source = node.child_by_field_name("source")
    if source is None:
        return []
    module = _js_module(path, _text(data, source).strip("'\"`"), aliases)
    line = node.start_point[0] + 1
    out: list[ParsedImport] = []
    clause = next(
        (
            c
            for c in node.named_children
            if c.type in ("import_clause", "export_clause", "namespace_export")
        ),
        None,
    )
    if clause is None:
        return [ParsedImport(None, module, None, "star" if node.type == "export_statement" else "module", line)]
    if clause.type == "namespace_export":
        ident = next((c for c in clause.named_children), None)
        return [ParsedImport(_text(data, ident) if ident else None, module, None, "module", line)]
    for child in clause.named_children if clause.type == "import_clause" else [clause]:
        if child.type == "identifier":
            out.append(ParsedImport(_text(data, child), module, "default", "from", line))
        elif child.type == "namespace_import":
            ident = next((c for c in child.named_children), None)
            if ident is not None:
                out.append(ParsedImport(_text(data, ident), module, None, "module", line))
        elif child.type in ("named_imports", "export_clause"):
            for spec in child.named_children:
                if spec.type not in ("import_specifier", "export_specifier"):
                    continue
                name = _text(data, spec.child_by_field_name("name"))
                alias = spec.child_by_field_name("alias")
                out.append(ParsedImport(_text(data, alias) if alias else name, module, name, "from", line))
    return out
