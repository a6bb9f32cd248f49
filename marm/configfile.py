"""Edit the agents' own config files the way a person would: in place.

Claude Code and Gemini CLI keep JSON files that people write by hand, comments and
trailing commas included (Gemini reads JSON with comments); Codex keeps TOML. marm reads
them with libraries made for the format (json-five for JSON with comments, tomlkit for
TOML) and changes only the members it owns: an edit splices new text at the member's
place (found through json-five's parse tree, which knows where each value starts and
ends), so every other byte (comments, order, indentation) stays as it was. TOML goes
through tomlkit's style-preserving document, which updates a table, an inline table or
dotted keys in whatever form the user wrote them.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import tomlkit
from json5.loader import DefaultLoader
from json5.model import JSONArray, JSONObject, Node
from json5.parser import parse_source
from tomlkit.exceptions import TOMLKitError

from marm.errors import BadInput

Path_ = tuple[str | int, ...]


class Jsonc:
    """A JSON (or JSON-with-comments) document edited by splicing text.

    ``data`` is the parsed value; ``set``, ``append`` and ``delete`` change one member
    and leave the rest of the text alone. New members are written in the file's own
    indentation. The text is parsed once: each edit moves the places of the members
    after it by what it changed (and knows the places of the text it wrote itself), so
    an ``init`` that makes a dozen edits to a settings file still reads it only once.
    """

    def __init__(self, text: str | None) -> None:
        self.existed = text is not None and bool(text.strip())
        self.text = text if self.existed and text is not None else "{}"
        try:
            model = parse_source(self.text)
            self.data: Any = DefaultLoader().load(model)
        except Exception as exc:  # noqa: BLE001 - json-five raises several types
            raise BadInput(f"it is not valid JSON ({exc}); marm leaves it alone") from None
        if not isinstance(self.data, dict):
            raise BadInput("it does not hold a JSON object; marm leaves it alone")
        self._root = _place(model.value, _line_starts(self.text))
        self.unit = _indent_unit(self.text)

    def reread(self, text: str) -> Jsonc:
        """This document as ``Jsonc(text)`` would read it, for ``text`` = ``dumps()``
        (which only adds a final newline to a new file): the next edit of the same file
        starts from here instead of parsing it again."""
        assert text.rstrip("\n") == self.text.rstrip("\n"), "reread is for this document's own text"
        self.existed, self.text, self.unit = True, text, _indent_unit(text)
        return self

    # --- edits ---------------------------------------------------------------------

    def set(self, path: Path_, value: Any) -> None:
        """Set ``path`` (object keys, or an item of a list; a last key may be new) to ``value``."""
        parent = self._node(path[:-1])
        last = path[-1]
        if parent.keys is None and parent.values is not None and isinstance(last, int) \
                and 0 <= last < len(parent.values):
            old = parent.values[last]
            text, node = self._dump(value, len(path))
            self._splice(old.start, old.end, text)
            parent.values[last] = node.moved(old.start)
            self._data(path[:-1])[last] = copy.deepcopy(value)
            return
        if parent.keys is None or parent.values is None:
            raise BadInput(f"its {_dotted(path[:-1])} is not an object; fix it by hand first")
        key = str(last)
        index = _key_index(parent, key)
        if index is None:
            name = json.dumps(key)
            text, node = self._dump(value, len(path))
            at = self._insert(parent, f"{name}: {text}", len(path))
            parent.keys.append(_Place(at, at + len(name), name=key))
            parent.values.append(node.moved(at + len(name) + 2))
        else:
            old = parent.values[index]
            text, node = self._dump(value, len(path))
            self._splice(old.start, old.end, text)
            parent.values[index] = node.moved(old.start)
        self._data(path[:-1])[key] = copy.deepcopy(value)

    def append(self, path: Path_, value: Any) -> None:
        """Append ``value`` to the array at ``path``."""
        array = self._node(path)
        if array.keys is not None or array.values is None:
            raise BadInput(f"its {_dotted(path)} is not a list; fix it by hand first")
        text, node = self._dump(value, len(path) + 1)
        at = self._insert(array, text, len(path) + 1)
        array.values.append(node.moved(at))
        self._data(path).append(copy.deepcopy(value))

    def delete(self, path: Path_) -> None:
        """Remove the member at ``path`` (an object key or an array index)."""
        parent = self._node(path[:-1])
        key = path[-1]
        if parent.keys is not None:
            index = _key_index(parent, str(key))
            if index is None:
                return
            items = [(k.start, v.end) for k, v in zip(parent.keys, parent.values or [])]
            del parent.keys[index]
            del self._data(path[:-1])[str(key)]
        elif parent.values is not None and isinstance(key, int):
            index = key
            items = [(v.start, v.end) for v in parent.values]
            del self._data(path[:-1])[index]
        else:
            return
        assert parent.values is not None
        del parent.values[index]
        if len(items) == 1:
            start, end = parent.start + 1, parent.end - 1  # the only member: leave `{}` / `[]`
            parent.trailing_comma = False
        elif index == 0:
            start, end = items[0][0], items[1][0]   # up to the next member
        else:
            start, end = items[index - 1][1], items[index][1]  # from the comma before it
        self._splice(start, end, "")

    def dumps(self) -> str:
        return self.text if self.existed else self.text + "\n"

    # --- helpers -------------------------------------------------------------------

    def _node(self, path: Path_) -> _Place:
        node = self._root
        for i, key in enumerate(path):
            if node.keys is not None:
                index = _key_index(node, str(key))
                if index is None:
                    raise BadInput(f"it has no {_dotted(path[:i + 1])}")
                assert node.values is not None
                node = node.values[index]
            elif node.values is not None and isinstance(key, int) and key < len(node.values):
                node = node.values[key]
            else:
                raise BadInput(f"its {_dotted(path[:i + 1])} is not what marm expects; fix it by hand")
        return node

    def _data(self, path: Path_) -> Any:
        """The parsed value at ``path`` (which ``_node`` found already)."""
        value = self.data
        for key in path:
            value = value[key if isinstance(value, list) else str(key)]
        return value

    def _insert(self, container: _Place, text: str, depth: int) -> int:
        """Write ``text`` as the container's new last member; where it starts now."""
        open_, close = container.start, container.end
        inner, outer = self.unit * depth, self.unit * (depth - 1)
        if not container.values:
            between = self.text[open_ + 1:close - 1].rstrip()
            self._splice(open_ + 1, close - 1, f"{between}\n{inner}{text}\n{outer}")
            return open_ + 1 + len(between) + 1 + len(inner)
        last_end = container.values[-1].end
        between = self.text[last_end:close - 1].rstrip()
        comma = "" if container.trailing_comma else ","
        self._splice(last_end, close - 1, f"{comma}{between}\n{inner}{text}\n{outer}")
        container.trailing_comma = False
        return last_end + len(comma) + len(between) + 1 + len(inner)

    def _dump(self, value: Any, depth: int) -> tuple[str, _Place]:
        """``value`` as ``json.dumps`` with the file's indentation writes it at ``depth``,
        and the places of what it wrote in that text."""
        parts: list[str] = []
        pos = 0

        def emit(piece: str) -> None:
            nonlocal pos
            parts.append(piece)
            pos += len(piece)

        def walk(v: Any, level: int) -> _Place:
            start = pos
            if isinstance(v, dict) and v:
                keys, values = [], []
                emit("{")
                for i, (k, item) in enumerate(v.items()):
                    emit(("," if i else "") + "\n" + self.unit * (level + 1))
                    name = json.dumps(str(k), ensure_ascii=False)
                    keys.append(_Place(pos, pos + len(name), name=str(k)))
                    emit(name + ": ")
                    values.append(walk(item, level + 1))
                emit("\n" + self.unit * level + "}")
                return _Place(start, pos, keys=keys, values=values)
            if isinstance(v, (list, tuple)) and v:
                items = []
                emit("[")
                for i, item in enumerate(v):
                    emit(("," if i else "") + "\n" + self.unit * (level + 1))
                    items.append(walk(item, level + 1))
                emit("\n" + self.unit * level + "]")
                return _Place(start, pos, values=items)
            emit(json.dumps(v, ensure_ascii=False))
            if isinstance(v, dict):
                return _Place(start, pos, keys=[], values=[])
            return _Place(start, pos, values=[] if isinstance(v, (list, tuple)) else None)

        node = walk(value, depth)
        return "".join(parts), node

    def _splice(self, start: int, end: int, text: str) -> None:
        """Replace ``[start, end)`` with ``text`` and move every place after it. The
        members inside the span are the caller's to drop (or replace)."""
        self.text = self.text[:start] + text + self.text[end:]
        self._root.shift(start, end, len(text) - (end - start))


@dataclass(slots=True, eq=False)
class _Place:
    """Where a parsed value (or an object's key) is in the text: ``[start, end)``; an
    object's member names and values, or an array's items, in order."""
    start: int
    end: int
    name: str | None = None             # a key's name
    keys: list[_Place] | None = None    # an object's keys (None: not an object)
    values: list[_Place] | None = None  # an object's values, an array's items (None: a scalar)
    trailing_comma: bool = False

    def children(self) -> list[_Place]:
        return [*(self.keys or ()), *(self.values or ())]

    def moved(self, by: int) -> _Place:
        """This place and all inside it, ``by`` characters on (in place)."""
        self.start += by
        self.end += by
        for child in self.children():
            child.moved(by)
        return self

    def shift(self, start: int, end: int, delta: int) -> None:
        """``[start, end)`` of the text became ``delta`` characters longer."""
        if self.end <= start:
            return                      # wholly before the change
        if self.start >= end:
            self.moved(delta)           # wholly after it
            return
        if self.start <= start and self.end >= end:
            self.end += delta           # around it: only its end moves
            for child in self.children():
                child.shift(start, end, delta)


def _place(node: Node, starts: list[int]) -> _Place:
    """The places of a json-five parse tree, as offsets into its text."""
    assert node.lineno is not None and node.col_offset is not None  # every parsed node has a place
    assert node.end_lineno is not None and node.end_col_offset is not None
    start = starts[node.lineno - 1] + node.col_offset
    end = starts[node.end_lineno - 1] + node.end_col_offset
    if isinstance(node, JSONObject):
        keys = [_place(k, starts) for k in node.keys]
        for place, k in zip(keys, node.keys):
            place.name = getattr(k, "characters", None) or getattr(k, "name", None)
        return _Place(start, end, keys=keys, values=[_place(v, starts) for v in node.values],
                      trailing_comma=node.trailing_comma is not None)
    if isinstance(node, JSONArray):
        return _Place(start, end, values=[_place(v, starts) for v in node.values],
                      trailing_comma=node.trailing_comma is not None)
    return _Place(start, end)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _key_index(obj: _Place, key: str) -> int | None:
    for i, k in enumerate(obj.keys or ()):
        if k.name == key:
            return i
    return None


def _indent_unit(text: str) -> str:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and line != stripped:
            return line[: len(line) - len(stripped)]
    return "  "


def _dotted(path: Path_) -> str:
    return ".".join(str(p) for p in path) or "top level"


def load_json(text: str | None) -> dict[str, Any]:
    """The object a JSON (with comments) file holds; ``{}`` for a missing or empty file."""
    return Jsonc(text).data


# --- TOML (Codex) --------------------------------------------------------------------

def toml_doc(text: str | None) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text or "")
    except TOMLKitError as exc:
        raise BadInput(f"it is not valid TOML ({exc}); marm leaves it alone") from None


def load_toml(text: str | None) -> dict[str, Any]:
    return toml_doc(text).unwrap()
