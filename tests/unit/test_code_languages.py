"""Every grammar in the language table parses, and gives definitions and calls."""

from __future__ import annotations

import pytest

from marm.code.extract import extract, module_key
from marm.code.languages import EXTENSIONS, LANGS, language_of

SAMPLES = {
    "go": (
        "cmd/app/main.go",
        b"package main\n\ntype Server struct{}\n\nfunc (s *Server) Start() { s.listen() }\n"
        b"\nfunc main() {\n\tsrv := &Server{}\n\tsrv.Start()\n\thelper()\n}\n",
        {
            ("cmd/app/main.Server.Start", "method"),
            ("cmd/app/main.main", "function"),
            ("cmd/app/main.Server", "type"),
        },
        {("listen", "s"), ("Start", "srv"), ("helper", None)},
    ),
    "rust": (
        "src/lib.rs",
        b"struct Point { x: i32 }\n\nimpl Point {\n    fn norm(&self) -> i32 { self.x.abs() }\n}\n"
        b"\nfn main() { let p = Point { x: 1 }; p.norm(); helper(); Point::new(); }\n",
        {
            ("src/lib.Point", "struct"),
            ("src/lib.Point.norm", "method"),
            ("src/lib.main", "function"),
        },
        {("norm", "p"), ("helper", None), ("new", "Point")},
    ),
    "java": (
        "src/App.java",
        b"class App extends Base {\n  void run() { helper(); this.stop(); new Worker(); }\n"
        b"  void stop() {}\n}\n",
        {("src.App.App", "class"), ("src.App.App.run", "method"), ("src.App.App.stop", "method")},
        {("helper", None), ("stop", "this"), ("Worker", None)},
    ),
    "c": (
        "src/main.c",
        b"#include <stdio.h>\nstruct pt { int x; };\nstatic int add(int a) { return a; }\n"
        b'int main(void) { add(1); printf("x"); return 0; }\n',
        {("src/main.add", "function"), ("src/main.main", "function"), ("src/main.pt", "struct")},
        {("add", None), ("printf", None)},
    ),
    "cpp": (
        "src/shape.cpp",
        b"namespace geo {\nclass Shape : public Base {\n public:\n  int area() { return calc(); }\n};\n}\n"
        b"int Shape::calc() { return helper(); }\nint main() { geo::Shape s; s.area(); std::sort(); }\n",
        {
            ("src/shape.geo.Shape", "class"),
            ("src/shape.geo.Shape.area", "method"),
            ("src/shape.Shape.calc", "method"),
            ("src/shape.main", "function"),
        },
        {("calc", None), ("helper", None), ("area", "s"), ("sort", "std")},
    ),
    "javascript": (
        "lib/util.js",
        b"const { x } = require('./x');\nclass A extends B { m() { return this.n(); } }\n"
        b"function f() { return new A().m(); }\nconst g = () => f();\n",
        {
            ("lib/util.A", "class"),
            ("lib/util.A.m", "method"),
            ("lib/util.f", "function"),
            ("lib/util.g", "function"),
        },
        {("n", "this"), ("A", None), ("f", None), ("require", None)},
    ),
}


@pytest.mark.parametrize("lang", sorted(SAMPLES))
def test_definitions_and_calls(lang):
    path, data, symbols, calls = SAMPLES[lang]
    assert language_of(path) == lang
    facts = extract(path, data, lang)
    assert not facts.partial
    got = {(qname, kind) for _, qname, kind, *_ in facts.symbols}
    assert symbols <= got, got
    refs = {(name, receiver) for kind, _, name, _, receiver, _ in facts.refs if kind == "call"}
    assert calls <= refs, refs


def test_every_extension_names_a_known_language():
    assert set(EXTENSIONS.values()) == set(LANGS)
    assert language_of("README") is None and language_of("a.b/c") is None
    assert language_of("web/App.TSX") == "tsx"


def test_module_keys():
    assert module_key("src/pkg/__init__.py", "python") == "src.pkg"
    assert module_key("src/pkg/mod.py", "python") == "src.pkg.mod"
    assert module_key("web/src/index.ts", "typescript") == "web/src"
    assert module_key("a/B.java", "java") == "a.B"


def test_commonjs_require_binds_like_an_import():
    facts = extract(
        "lib/a.js",
        b'const x = require("./x");\nconst { a, b: c } = require("../y");\n'
        b"function q() { x.run(); c(); }\n",
        "javascript",
    )
    assert [i[:4] for i in facts.imports] == [
        ("x", "lib/x", None, "module"),
        ("a", "y", "a", "from"),
        ("c", "y", "b", "from"),
    ]
    assert ("call", 1, "c", "b", None, 3) in facts.refs  # scope 1 = q; key = the original name
