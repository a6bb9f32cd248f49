"""The language table: file extension -> grammar, and the tree-sitter queries marm runs.

Each query captures definitions (``@def.<kind>`` with ``@name``), calls
(``@callee`` with an optional ``@receiver``; the call node itself is not captured:
nothing reads it, and every capture costs a node object), import statements
(``@import``), typed variables (``@var`` with ``@type``) and typed fields (``@field``
with ``@type``, ``self.x = T()`` / ``private x: T``) for typed receivers.
Python, TypeScript/TSX and JavaScript get imports and typed receivers; Go, Rust, Java,
C and C++ get definitions and calls (their calls resolve by file, class and name).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import Any

_PY = r"""
(function_definition name: (identifier) @name) @def.function
(class_definition name: (identifier) @name superclasses: (argument_list)? @bases) @def.class
(call function: (identifier) @callee)
(call function: (attribute object: (_) @receiver attribute: (identifier) @callee))
(import_statement) @import
(import_from_statement) @import
(assignment left: (identifier) @var right: (call function: (identifier) @type))
(assignment left: (identifier) @var type: (type (identifier) @type))
(typed_parameter (identifier) @var type: (type (identifier) @type))
(typed_default_parameter name: (identifier) @var type: (type (identifier) @type))
(module (expression_statement (assignment left: (identifier) @all.name right: [(list) (tuple)] @all)))
(assignment left: (attribute object: (identifier) @field.self attribute: (identifier) @field)
   right: (call function: (identifier) @type))
(assignment left: (attribute object: (identifier) @field.self attribute: (identifier) @field)
   type: (type (identifier) @type))
(class_definition body: (block (expression_statement
   (assignment left: (identifier) @field type: (type (identifier) @type)))))
"""

_JS_COMMON = r"""
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @def.method
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.function
(call_expression function: (identifier) @callee)
(call_expression function: (member_expression object: (_) @receiver property: (property_identifier) @callee))
(new_expression constructor: (identifier) @callee)
(import_statement) @import
(export_statement source: (_)) @import
(variable_declarator name: (identifier) @var value: (new_expression constructor: (identifier) @type))
(variable_declarator value: (call_expression function: (identifier) @require.fn
   arguments: (arguments . (string) @require.source))) @require
"""

_JS = (
    _JS_COMMON
    + r"""
(class_declaration name: (identifier) @name (class_heritage)? @bases) @def.class
"""
)

_TS = (
    _JS_COMMON
    + r"""
(class_declaration name: (type_identifier) @name (class_heritage)? @bases) @def.class
(abstract_class_declaration name: (type_identifier) @name (class_heritage)? @bases) @def.class
(interface_declaration name: (type_identifier) @name) @def.interface
(variable_declarator name: (identifier) @var type: (type_annotation (type_identifier) @type))
(required_parameter pattern: (identifier) @var type: (type_annotation (type_identifier) @type))
(public_field_definition name: (property_identifier) @field type: (type_annotation (type_identifier) @type))
(required_parameter (accessibility_modifier) pattern: (identifier) @field
   type: (type_annotation (type_identifier) @type))
(assignment_expression left: (member_expression object: (this) @field.self property: (property_identifier) @field)
   right: (new_expression constructor: (identifier) @type))
(optional_parameter pattern: (identifier) @var type: (type_annotation (type_identifier) @type))
"""
)

_GO = r"""
(function_declaration name: (identifier) @name) @def.function
(method_declaration receiver: (parameter_list (parameter_declaration
   type: [(type_identifier) @recv (pointer_type (type_identifier) @recv)])) name: (field_identifier) @name) @def.method
(type_declaration (type_spec name: (type_identifier) @name)) @def.type
(call_expression function: (identifier) @callee)
(call_expression function: (selector_expression operand: (_) @receiver field: (field_identifier) @callee))
"""

_RUST = r"""
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.function
(struct_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(trait_item name: (type_identifier) @name) @def.trait
(impl_item type: (type_identifier) @name) @def.impl
(call_expression function: (identifier) @callee)
(call_expression function: (field_expression value: (_) @receiver field: (field_identifier) @callee))
(call_expression function: (scoped_identifier path: (_) @receiver name: (identifier) @callee))
"""

_JAVA = r"""
(class_declaration name: (identifier) @name (superclass (type_identifier) @bases)?) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(record_declaration name: (identifier) @name) @def.class
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
(method_invocation name: (identifier) @callee)
(method_invocation object: (_) @receiver name: (identifier) @callee)
(object_creation_expression type: (type_identifier) @callee)
(local_variable_declaration type: (type_identifier) @type declarator: (variable_declarator name: (identifier) @var))
"""

_C = r"""
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @def.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @def.function
(struct_specifier name: (type_identifier) @name body: (_)) @def.struct
(call_expression function: (identifier) @callee)
(call_expression function: (field_expression argument: (_) @receiver field: (field_identifier) @callee))
"""

_CPP = (
    _C
    + r"""
(function_definition declarator: (function_declarator declarator: (field_identifier) @name)) @def.function
(function_definition declarator: (function_declarator
   declarator: (qualified_identifier scope: (_) @recv name: (identifier) @name))) @def.method
(class_specifier name: (type_identifier) @name (base_class_clause)? @bases body: (_)) @def.class
(namespace_definition name: (namespace_identifier) @name) @def.namespace
(call_expression function: (qualified_identifier scope: (_) @receiver name: (identifier) @callee))
"""
)


@dataclass(frozen=True, slots=True)
class Lang:
    name: str
    module: str  # the grammar wheel's module
    function: str  # its function returning the language pointer
    query: str
    self_names: tuple[str, ...]  # receivers that mean "this object"
    module_sep: str  # how module keys are joined ("." for Python, "/" for path-keyed)


LANGS: dict[str, Lang] = {
    lang.name: lang
    for lang in (
        Lang("python", "tree_sitter_python", "language", _PY, ("self", "cls"), "."),
        Lang("javascript", "tree_sitter_javascript", "language", _JS, ("this",), "/"),
        Lang("typescript", "tree_sitter_typescript", "language_typescript", _TS, ("this",), "/"),
        Lang("tsx", "tree_sitter_typescript", "language_tsx", _TS, ("this",), "/"),
        Lang("go", "tree_sitter_go", "language", _GO, (), "/"),
        Lang("rust", "tree_sitter_rust", "language", _RUST, ("self", "Self"), "/"),
        Lang("java", "tree_sitter_java", "language", _JAVA, ("this",), "."),
        Lang("c", "tree_sitter_c", "language", _C, (), "/"),
        Lang("cpp", "tree_sitter_cpp", "language", _CPP, ("this",), "/"),
    )
}

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
}


def language_of(path: str) -> str | None:
    dot = path.rfind(".")
    return EXTENSIONS.get(path[dot:].lower()) if dot > path.rfind("/") else None


@cache
def load(name: str) -> tuple[Any, Any, Any]:
    """(Language, Parser, Query) for a language, built once per process."""
    import tree_sitter as ts

    lang = LANGS[name]
    language = ts.Language(getattr(importlib.import_module(lang.module), lang.function)())
    return language, ts.Parser(language), ts.Query(language, lang.query)
