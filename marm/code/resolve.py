"""Link refs to symbols, import-first, and say which rule made each link.

Order of rules for a call ``name(...)`` in file F, scope S:
  local / same-class / same-file   a definition visible from S in F
  import / import-alias            F's import binding of ``name``, followed into the
                                   target module (through its re-exports)
  star-import                      a ``from m import *`` whose target exports ``name``
                                   (its ``__all__`` when it has one)
  name-only                        otherwise, the few symbols anywhere with that name
                                   (the original name of an alias), kept as
                                   low-confidence edges
For ``recv.name(...)``: ``self``/``this`` walks the enclosing class and its bases
(self-method, base-method), ``super()`` the bases (super-method), an imported module
its top level (module-attr), a class its members (class-attr), a variable with a known
type (annotation or constructor) that type's members (typed-receiver).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from functools import partial
from typing import Any

import orjson

from marm.code.extract import CLASS_KINDS
from marm.code.languages import LANGS
from marm.store import code_graph
from marm.store.code_graph import CodeGraph, NewEdge, RefRow

#: An edge row made without NewEdge's Python-level ``__new__`` (a build makes ~one per ref).
_edge: Any = partial(tuple.__new__, NewEdge)

CONFIDENCE = {
    "local": 1.0,
    "same-file": 1.0,
    "same-class": 0.9,
    "import": 1.0,
    "import-alias": 1.0,
    "star-import": 0.9,
    "module-attr": 0.95,
    "self-method": 0.95,
    "base-method": 0.9,
    "super-method": 0.9,
    "class-attr": 0.9,
    "typed-receiver": 0.85,
}
#: Languages where a bare call inside a class may mean a member of that class.
_IMPLICIT_THIS = frozenset({"java", "cpp"})
_NAME_ONLY_MAX = 3
_SELF_NAMES = {name: lang.self_names for name, lang in LANGS.items()}


def _python_builtins() -> frozenset[str]:
    import builtins

    names = set(dir(builtins))
    for t in (str, bytes, list, dict, set, tuple, int, float, object):
        names.update(dir(t))
    return frozenset(names)


_JS_BUILTINS = frozenset(
    """String Number Boolean Object Array Map Set WeakMap Promise Symbol Error TypeError Date
    JSON Math RegExp parseInt parseFloat isNaN setTimeout clearTimeout setInterval
    clearInterval require console log warn error info debug push pop shift unshift slice
    splice concat join map filter reduce forEach find findIndex some every includes indexOf
    keys values entries get set has delete add clear then catch finally resolve reject
    toString valueOf hasOwnProperty call apply bind split replace trim toLowerCase
    toUpperCase startsWith endsWith match test exec stringify parse assign freeze create
    sort reverse fill from of isArray length charAt substring padStart padEnd""".split()
)
#: Names a call without a resolvable target most likely means the language's own
#: (``str()``, ``x.append()``, ``arr.map()``): no name-only guess is made for them.
_BUILTINS: dict[str, frozenset[str]] = {
    "python": _python_builtins(),
    "javascript": _JS_BUILTINS,
    "typescript": _JS_BUILTINS,
    "tsx": _JS_BUILTINS,
}
_CALLABLE = frozenset(
    {"function", "class", "method", "struct", "interface", "trait", "enum", "type"}
)


class _Complete(dict):
    """A preloaded, complete table: a missing key answers ``default()`` without storing
    it. ``get`` stays dict's own (a full build calls it about a million times); every
    caller passes an empty default or treats None as empty."""

    def __init__(self, default) -> None:
        super().__init__()
        self._default = default

    def __missing__(self, key):
        return self._default()


class _Lazy(_Complete):
    """A table that fills a missing key from ``load`` (an incremental run)."""

    def __init__(self, load, default) -> None:
        super().__init__(default)
        self._load = load

    def __missing__(self, key):
        value = self[key] = self._load(key)
        return value

    def get(self, key, default=None):  # noqa: ARG002 - a table always has an answer
        return self[key]


def _table(load, default) -> _Complete:
    return _Complete(default) if load is None else _Lazy(load, default)


class Resolver:
    """A view of one tree's symbols and imports. ``lazy`` loads only what the refs being
    resolved touch (an incremental run over a few files); otherwise everything is read
    at once (a full build), or taken from ``written``, what a full build just wrote
    (no read-back). All answer identically."""

    def __init__(
        self,
        graph: CodeGraph,
        tree_id: int,
        lazy: bool = False,
        written: code_graph.Written | None = None,
    ) -> None:
        self.graph = graph
        self.tree_id = tree_id
        self.written = written
        self.file_lang: dict[int, str] = {}
        self.exports: dict[int, set[str] | None] = {}
        self.file_module: dict[int, str] = {}
        # key or key suffix -> (parts dropped, path, file): ties break on the path, never on ids
        self.modules: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
        files = written.files if written else graph.files_for_resolver(tree_id)
        for f in files:
            fid, path, lang, module, exports = f.id, f.path, f.lang, f.module, f.exports
            self.file_lang[fid] = lang
            self.file_module[fid] = module or ""
            self.exports[fid] = None if exports is None else set(orjson.loads(exports))
            if module:
                sep = LANGS[lang].module_sep
                parts = module.split(sep)
                for i in range(len(parts)):
                    self.modules[sep.join(parts[i:])].append((i, path, fid))
        pick = (lambda loader: loader) if lazy else (lambda loader: None)
        self.sym = _table(pick(self._load_symbol), lambda: None)
        self._named = _table(pick(self._load_named), list)
        self.children = _table(
            pick(
                lambda key: [
                    s for s, _, p, k in self._named[key[1]] if p == key[0] and k != "module"
                ]
            ),
            list,
        )
        self.functions = _table(
            pick(
                lambda name: [
                    s for s, _, _, k in self._named[name] if k in _CALLABLE and k != "method"
                ]
            ),
            list,
        )
        self.methods = _table(
            pick(lambda name: [s for s, _, _, k in self._named[name] if k == "method"]), list
        )
        self.module_sym = _table(
            pick(lambda fid: graph.module_symbol(fid)), lambda: None
        )
        self.bindings = _table(pick(lambda fid: self._load_imports(fid)[0]), dict)
        self.stars = _table(pick(lambda fid: self._load_imports(fid)[1]), list)
        self.base_refs = _table(pick(self._load_bases), list)
        self._base_files: set[int] = set()  # files whose base refs base_refs holds (lazy)
        # file -> its top-level classes and functions (preloaded; lazy asks SQL)
        self.tops: dict[int, list[int]] | None = None
        # file -> names defined below its top level (preloaded only)
        self.nested: dict[int, set[str]] | None = None
        if not lazy:
            self._preload()
        self._bases: dict[int, list[int]] = {}
        self._members: dict[tuple[int, str], tuple[int, int] | None] = {}
        self._file_names: dict[tuple[int, str], tuple[int, str] | None] = {}
        self.types: dict[tuple[int, str], str] = {}
        self.typed: dict[int, set[str]] = {}  # file -> its variables with a known type
        self._plain: dict[tuple[int, str], tuple[int, str] | None] = {}
        self._meanings: dict[tuple[int, str], tuple[str, int] | None] = {}
        self._guesses: dict[tuple[str, str, bool], list[tuple[int, str, float]]] = {}
        self._self_calls: dict[tuple, tuple[bool, list[tuple[int, str, float]]]] = {}
        self._file_calls: dict[tuple, tuple[bool, list[tuple[int, str, float]]]] = {}

    def _preload(self) -> None:
        w = self.written
        symbols: Iterable[tuple[int, int, int | None, str, str]]
        imports: Iterable[tuple[int, str | None, str, str | None, str]]
        if w is not None:
            symbols = [(r.id, r.file_id, r.parent_id, r.name, r.kind) for r in w.symbols]
            # statement order within a file, as imports_for_resolver sorts them
            imports = [
                (r.file_id, r.local, r.module, r.name, r.kind)
                for r in sorted(w.imports, key=lambda r: (r.file_id, r.line))
            ]
        else:
            symbols = self.graph.symbols_for_resolver(self.tree_id)
            imports = self.graph.imports_for_resolver(self.tree_id)
        tops: dict[int, list[int]] = {}
        nested: dict[int, set[str]] = {}
        for sid, fid, parent, name, kind in symbols:
            self.sym[sid] = (fid, parent, name, kind)
            if kind == "module":
                self.module_sym[fid] = sid
                continue
            self.children.setdefault((parent, name), []).append(sid)
            if parent != self.module_sym.get(fid):
                nested.setdefault(fid, set()).add(name)
            if kind == "method":
                self.methods.setdefault(name, []).append(sid)
            elif kind in _CALLABLE:
                self.functions.setdefault(name, []).append(sid)
                if kind in ("class", "function") and parent == self.module_sym.get(fid):
                    tops.setdefault(fid, []).append(sid)
        self.tops = tops
        self.nested = nested
        for fid, local, module, imported, kind in imports:
            if kind == "star":
                self.stars.setdefault(fid, []).append(module)
            elif local:
                self.bindings.setdefault(fid, {})[local] = (module, imported, kind)
        if w is None:
            for cid, name, receiver in self.graph.bases_for_resolver(self.tree_id):
                self.base_refs.setdefault(cid, []).append((name, receiver))

    def _load_symbol(self, sid: int) -> tuple[int, int | None, str, str] | None:
        found = self.graph.symbol_brief(sid)
        return None if found is None else (found.file_id, found.parent_id, found.name, found.kind)

    def _load_named(self, name: str) -> list[tuple[int, int, int | None, str]]:
        rows = [(r.id, r.file_id, r.parent_id, r.kind) for r in self.graph.symbols_with_name(self.tree_id, name)]
        for sid, fid, parent, kind in rows:
            dict.setdefault(self.sym, sid, (fid, parent, name, kind))
        return rows

    def _load_bases(self, cid: int) -> list[tuple[str, str | None]]:
        """Base refs of a class, loading those of its whole file at once (lazy)."""
        fid = self.sym[cid][0]
        if fid not in self._base_files:
            self._base_files.add(fid)
            for ref in self.graph.bases_in_file(fid):
                dict.setdefault(self.base_refs, ref.class_id, []).append((ref.name, ref.receiver))
        return dict.get(self.base_refs, cid, [])

    def _load_imports(self, fid: int) -> tuple[dict, list]:
        bindings: dict[str, tuple[str, str | None, str]] = {}
        stars: list[str] = []
        for imp in self.graph.imports_of(fid):
            if imp.kind == "star":
                stars.append(imp.module)
            elif imp.local:
                bindings[imp.local] = (imp.module, imp.name, imp.kind)
        dict.__setitem__(self.bindings, fid, bindings)
        dict.__setitem__(self.stars, fid, stars)
        return bindings, stars

    # -- modules and names ------------------------------------------------------

    def module_file(self, module: str) -> int | None:
        """The file a module name means: an exact key, else the shortest key ending in it."""
        found = self.modules.get(module)
        if not found:
            return None
        return min(found)[2]

    def top(self, fid: int, name: str) -> int | None:
        msym = self.module_sym.get(fid)
        found = self.children.get((msym, name)) if msym is not None else None
        return found[-1] if found else None  # the last definition wins, as at run time

    def exported(self, fid: int, name: str, depth: int = 0) -> int | None:
        """What ``from <fid> import name`` binds: a definition, a re-export, a submodule."""
        ex = self.exports.get(fid)
        if ex is not None and name not in ex and depth > 0:
            return None
        found = self.top(fid, name)
        if found is not None:
            return found
        if depth < 4:
            hit = self.name_in_file(fid, name, depth + 1)
            if hit is not None:
                return hit[0]
        return None

    def name_in_file(self, fid: int, name: str, depth: int = 0) -> tuple[int, str] | None:
        """Resolve a module-level ``name`` in file ``fid`` through its imports."""
        if depth:
            return self._name_in_file(fid, name, depth)
        key = (fid, name)
        if key not in self._file_names:
            self._file_names[key] = self._name_in_file(fid, name, 0)
        return self._file_names[key]

    def _name_in_file(self, fid: int, name: str, depth: int) -> tuple[int, str] | None:
        binding = self.bindings.get(fid, {}).get(name)
        if binding is not None:
            module, orig, kind = binding
            target = self.module_file(module)
            if kind == "module":
                return (self.module_sym[target], "import") if target is not None else None
            rule = "import" if orig == name else "import-alias"
            if target is not None:
                found = (
                    self.exported(target, orig, depth)
                    if orig != "default"
                    else self._default(target, name)
                )
                if found is not None:
                    return found, rule
            lang = self.file_lang[fid]
            sub = self.module_file(module + LANGS[lang].module_sep + (orig or ""))
            if sub is not None:
                return self.module_sym[sub], rule
            return None
        for module in self.stars.get(fid, ()):
            target = self.module_file(module)
            if target is None or target == fid:
                continue
            ex = self.exports.get(target)
            if ex is not None and name not in ex:
                continue
            if ex is None and name.startswith("_") and self.file_lang.get(target) == "python":
                continue
            found = self.exported(target, name, depth + 1) if depth < 4 else None
            if found is not None:
                return found, "star-import"
        return None

    def _default(self, target: int, local: str) -> int | None:
        """What a default import binds: the same name, else the file's only top-level
        class or function."""
        found = self.top(target, local)
        if found is not None:
            return found
        if self.tops is not None:
            tops = self.tops.get(target, [])
        else:
            tops = self.graph.top_level(target, ("class", "function"))
        return tops[0] if len(tops) == 1 else None

    def scoped(self, fid: int, scope: int, name: str) -> tuple[int, str] | None:
        """A definition visible from ``scope``: enclosing functions, then the file."""
        lang = self.file_lang[fid]
        current: int | None = scope
        while current is not None:
            _, parent, _, kind = self.sym[current]
            if kind == "module":
                found = self.children.get((current, name))
                return (found[-1], "same-file") if found else None
            if kind not in CLASS_KINDS or lang in _IMPLICIT_THIS:
                found = self.children.get((current, name))
                if found:
                    return found[-1], "same-class" if kind in CLASS_KINDS else "local"
            current = parent
        return None

    def resolve_name(self, fid: int, scope: int, name: str) -> tuple[int, str] | None:
        if (
            self.nested is not None
            and name not in self.nested.get(fid, ())
            and self.file_lang[fid] not in _IMPLICIT_THIS
        ):
            # no scope below the top level defines ``name``: every scope of the file
            # sees the module's binding (memoised per file)
            key = (fid, name)
            if key not in self._plain:
                self._plain[key] = self.scoped(fid, self.module_sym[fid], name) or self.name_in_file(fid, name)
            return self._plain[key]
        return self.scoped(fid, scope, name) or self.name_in_file(fid, name)

    # -- classes ----------------------------------------------------------------

    def enclosing_class(self, scope: int) -> int | None:
        current: int | None = scope
        while current is not None:
            _, parent, _, kind = self.sym[current]
            if kind in CLASS_KINDS:
                return current
            current = parent
        return None

    def bases(self, cid: int) -> list[int]:
        if cid in self._bases:
            return self._bases[cid]
        self._bases[cid] = []
        fid, parent, _, _ = self.sym[cid]
        out = []
        for name, receiver in self.base_refs.get(cid, ()):
            hit = self.resolve_ref_target(
                fid, parent if parent is not None else cid, name, receiver
            )
            if hit is not None and self.sym[hit[0]][3] in CLASS_KINDS:
                out.append(hit[0])
        self._bases[cid] = out
        return out

    def member(self, cid: int, name: str, depth: int = 0) -> tuple[int, int] | None:
        """(symbol, inheritance depth) of ``name`` on class ``cid`` or its bases."""
        if depth:
            return self._member(cid, name, depth)
        key = (cid, name)
        if key not in self._members:
            self._members[key] = self._member(cid, name, 0)
        return self._members[key]

    def _member(self, cid: int, name: str, depth: int) -> tuple[int, int] | None:
        found = self.children.get((cid, name))
        if found:
            return found[-1], depth
        if depth < 8:
            for base in self.bases(cid):
                hit = self._member(base, name, depth + 1)
                if hit is not None:
                    return hit
        return None

    # -- refs -------------------------------------------------------------------

    def resolve_ref_target(
        self, fid: int, scope: int, name: str, receiver: str | None
    ) -> tuple[int, str] | None:
        """Resolve ``receiver.name`` / ``name`` as a value (no name-only fallback)."""
        if receiver is None:
            return self.resolve_name(fid, scope, name)
        lang = self.file_lang[fid]
        if receiver in LANGS[lang].self_names:
            cid = self.enclosing_class(scope)
            hit = self.member(cid, name) if cid is not None else None
            return (hit[0], "self-method" if hit[1] == 0 else "base-method") if hit else None
        if receiver in ("super()", "super"):
            cid = self.enclosing_class(scope)
            for base in self.bases(cid) if cid is not None else ():
                hit = self.member(base, name)
                if hit is not None:
                    return hit[0], "super-method"
            return None
        key = (scope, receiver)
        if key not in self._meanings:
            self._meanings[key] = self._meaning(fid, scope, receiver)
        meaning = self._meanings[key]
        if meaning is None:
            return None
        how, target = meaning
        if how == "module":
            found = self.top(self.sym[target][0], name)
            if found is None:
                sub = self.module_file(self._module_of(target) + LANGS[lang].module_sep + name)
                found = self.module_sym.get(sub) if sub is not None else None
            return (found, "module-attr") if found is not None else None
        member = self.member(target, name)
        return (member[0], how) if member else None

    def _meaning(self, fid: int, scope: int, receiver: str) -> tuple[str, int] | None:
        """What a receiver (not self/this, not super) names in ``scope``, as (how, symbol):
        a module ("module"), a class ("class-attr"), or the class of an instance
        ("typed-receiver": ``T()`` or a variable of known type). It does not depend on
        the name called on it: ``resolve_ref_target`` memoises it per (scope, receiver)."""
        if receiver.endswith("()") and receiver[:-2].isidentifier():
            made = self.resolve_name(fid, scope, receiver[:-2])
            if made is not None and self.sym[made[0]][3] in CLASS_KINDS:
                return "typed-receiver", made[0]
            return None
        target = self._receiver(fid, scope, receiver)
        if target is not None:
            kind = self.sym[target][3]
            if kind == "module":
                return "module", target
            if kind in CLASS_KINDS:
                return "class-attr", target
        typ = self._type_of(fid, scope, receiver)
        if typ is not None:
            cls = self.resolve_name(fid, scope, typ)
            if cls is not None and self.sym[cls[0]][3] in CLASS_KINDS:
                return "typed-receiver", cls[0]
        return None

    def _module_of(self, msym: int) -> str:
        return self.file_module[self.sym[msym][0]]

    def _receiver(self, fid: int, scope: int, receiver: str) -> int | None:
        """The module or class a receiver expression names, if any."""
        binding = self.bindings.get(fid, {})
        if receiver in binding and binding[receiver][2] == "module":
            target = self.module_file(binding[receiver][0])
            return self.module_sym.get(target) if target is not None else None
        head, _, rest = receiver.partition(".")
        if not head.isidentifier() or self._type_of(fid, scope, head) is not None:
            return None
        hit = self.resolve_name(fid, scope, head)
        if hit is None:
            return None
        target = hit[0]
        lang = self.file_lang[fid]
        for part in rest.split(".") if rest else ():
            if self.sym[target][3] == "module":
                sub = self.module_file(self._module_of(target) + LANGS[lang].module_sep + part)
                nxt = (
                    self.top(self.sym[target][0], part) if sub is None else self.module_sym.get(sub)
                )
            else:
                nxt = (self.children.get((target, part)) or [None])[-1]
            if nxt is None:
                return None
            target = nxt
        return target

    def _type_of(self, fid: int, scope: int, var: str) -> str | None:
        if var not in self.typed.get(fid, ()):  # most receivers have no known type
            return None
        current: int | None = scope
        while current is not None:
            typ = self.types.get((current, var))
            if typ is not None:
                return typ
            current = self.sym[current][1]
        return None

    def _name_only(self, fid: int, name: str, methods: bool) -> list[tuple[int, str, float]]:
        """Low-confidence guesses for an unresolved call (memoised: they depend only on
        the language, the name and whether it had a receiver)."""
        lang = self.file_lang[fid]
        key = (lang, name, methods)
        found = self._guesses.get(key)
        if found is None:
            found = self._guesses[key] = self._guess(lang, name, methods)
        return found

    def _guess(self, lang: str, name: str, methods: bool) -> list[tuple[int, str, float]]:
        if name in _BUILTINS.get(lang, ()):
            return []
        if methods:
            cands = self.methods.get(name, ())
        else:
            cands = self.functions.get(name, ())
            if lang in _IMPLICIT_THIS:
                cands = [*cands, *self.methods.get(name, ())]
        if not cands or len(cands) > _NAME_ONLY_MAX:
            return []
        return [(s, "name-only", round(0.5 / len(cands), 3)) for s in cands]

    def edges(self, refs: list[RefRow]) -> list[NewEdge]:
        """The edges of ``refs`` (with ``written``: every ref of the build, in id order)."""
        if self.written is not None:
            types = self.written.types
            for cid, name, receiver in self.written.bases:
                self.base_refs.setdefault(cid, []).append((name, receiver))
        else:
            types = self.graph.types_for_files({r.file_id for r in refs})
        for fid, scope, var, typ in types:
            self.types[scope, var] = typ
            self.typed.setdefault(fid, set()).add(var)
        out: list[NewEdge] = []
        # The same call in the same scope (``self.assertEqual`` all over one test) resolves
        # the same way: every lookup is a pure or memoised function of these four fields.
        calls: dict[tuple, list[tuple[int, str, float]]] = {}
        known, append, targets_of = calls.get, out.append, self._call_targets
        for ref_id, fid, src, kind, name, key, receiver, line in refs:
            if kind == "call":
                memo = (src, name, key, receiver)
                targets = known(memo)
                if targets is None:
                    targets = calls[memo] = targets_of(fid, src, name, key, receiver)
                for dst, rule, conf in targets:
                    append(_edge((ref_id, src, dst, "call", rule, conf, fid, line)))
            elif kind == "base":
                hit = self.resolve_ref_target(fid, self.sym[src][1] or src, name, receiver)
                if hit is not None and self.sym[hit[0]][3] in CLASS_KINDS:
                    append(_edge((ref_id, src, hit[0], "inherit", hit[1], CONFIDENCE[hit[1]], fid, line)))
            else:
                imported = self._import_target(fid, kind, name, key, receiver)
                if imported is not None and imported != src:
                    append(_edge((ref_id, src, imported, "import", "import", 1.0, fid, line)))
        return out

    def _call_targets(
        self, fid: int, src: int, name: str, key: str, receiver: str | None
    ) -> list[tuple[int, str, float]]:
        """(target, rule, confidence) of a call: its resolution, else name-only guesses."""
        if receiver is not None and receiver in _SELF_NAMES[self.file_lang[fid]]:
            # ``self.name()`` means the same in every method of a class: memoised per class
            cid = self.enclosing_class(src)
            memo = (cid, name, key)
            found = self._self_calls.get(memo)
            if found is None:
                member = self.member(cid, name) if cid is not None else None
                if member is not None:
                    rule = "self-method" if member[1] == 0 else "base-method"
                    found = (True, [(member[0], rule, CONFIDENCE[rule])])
                else:
                    found = (False, self._name_only(fid, key, True))
                self._self_calls[memo] = found
            resolved, targets = found
            return targets if resolved else [t for t in targets if t[0] != src]
        if (
            receiver is None
            and self.nested is not None
            and name not in self.nested.get(fid, ())
            and self.file_lang[fid] not in _IMPLICIT_THIS
        ):
            # no enclosing function defines ``name``: a bare call means the same from
            # every scope of the file, memoised per file
            memo = (fid, name, key)
            found = self._file_calls.get(memo)
            if found is None:
                hit = self.resolve_name(fid, self.module_sym[fid], name)
                if hit is not None:
                    found = (True, [(hit[0], hit[1], CONFIDENCE[hit[1]])])
                else:
                    found = (False, self._name_only(fid, key, False))
                self._file_calls[memo] = found
            resolved, targets = found
            return targets if resolved else [t for t in targets if t[0] != src]
        hit = self.resolve_ref_target(fid, src, name, receiver)
        if hit is not None:
            return [(hit[0], hit[1], CONFIDENCE[hit[1]])]
        return [t for t in self._name_only(fid, key, receiver is not None) if t[0] != src]

    def _import_target(
        self, fid: int, kind: str, local: str, orig: str, module: str | None
    ) -> int | None:
        if module is None:
            return None
        target = self.module_file(module)
        if kind == "import-from" and local != "*":
            hit = self.name_in_file(fid, local)
            if hit is not None:
                return hit[0]
        return self.module_sym.get(target) if target is not None else None
