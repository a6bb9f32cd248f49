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

import json
from collections.abc import Sequence
from typing import Any

import json5
import tomlkit
from json5.loader import ModelLoader
from json5.model import JSONArray, JSONObject, Node
from tomlkit.exceptions import TOMLKitError

from marm.errors import BadInput

Path_ = tuple[str | int, ...]


class Jsonc:
    """A JSON (or JSON-with-comments) document edited by splicing text.

    ``data`` is the parsed value; ``set``, ``append`` and ``delete`` change one member
    and leave the rest of the text alone. New members are written in the file's own
    indentation.
    """

    def __init__(self, text: str | None) -> None:
        self.existed = text is not None and bool(text.strip())
        self.text = text if self.existed and text is not None else "{}"
        self._parse()
        if not isinstance(self.data, dict):
            raise BadInput("it does not hold a JSON object; marm leaves it alone")
        self.unit = _indent_unit(self.text)

    def _parse(self) -> None:
        try:
            self.data: Any = json5.loads(self.text)
            self._model = json5.loads(self.text, loader=ModelLoader()).value
        except Exception as exc:  # noqa: BLE001 - json-five raises several types
            raise BadInput(f"it is not valid JSON ({exc}); marm leaves it alone") from None

    # --- edits ---------------------------------------------------------------------

    def set(self, path: Path_, value: Any) -> None:
        """Set ``path`` (object keys; the last may be new) to ``value``."""
        parent = self._node(path[:-1])
        if not isinstance(parent, JSONObject):
            raise BadInput(f"its {_dotted(path[:-1])} is not an object; fix it by hand first")
        key = path[-1]
        index = _key_index(parent, str(key))
        if index is None:
            member = f"{json.dumps(str(key))}: {self._dump(value, len(path))}"
            self._insert(parent, list(parent.values), member, len(path))
        else:
            start, end = _span(self.text, parent.values[index])
            self._splice(start, end, self._dump(value, len(path)))

    def append(self, path: Path_, value: Any) -> None:
        """Append ``value`` to the array at ``path``."""
        array = self._node(path)
        if not isinstance(array, JSONArray):
            raise BadInput(f"its {_dotted(path)} is not a list; fix it by hand first")
        self._insert(array, array.values, self._dump(value, len(path) + 1), len(path) + 1)

    def delete(self, path: Path_) -> None:
        """Remove the member at ``path`` (an object key or an array index)."""
        parent = self._node(path[:-1])
        key = path[-1]
        if isinstance(parent, JSONObject):
            index = _key_index(parent, str(key))
            if index is None:
                return
            items = [(_span(self.text, k)[0], _span(self.text, v)[1])
                     for k, v in zip(parent.keys, parent.values)]
        elif isinstance(parent, JSONArray) and isinstance(key, int):
            index = key
            items = [_span(self.text, v) for v in parent.values]
        else:
            return
        open_, close = _span(self.text, parent)
        if len(items) == 1:
            start, end = open_ + 1, close - 1       # the only member: leave `{}` / `[]`
        elif index == 0:
            start, end = items[0][0], items[1][0]   # up to the next member
        else:
            start, end = items[index - 1][1], items[index][1]  # from the comma before it
        self._splice(start, end, "")

    def dumps(self) -> str:
        return self.text if self.existed else self.text + "\n"

    # --- helpers -------------------------------------------------------------------

    def _node(self, path: Path_) -> Node:
        node: Node = self._model
        for i, key in enumerate(path):
            if isinstance(node, JSONObject):
                index = _key_index(node, str(key))
                if index is None:
                    raise BadInput(f"it has no {_dotted(path[:i + 1])}")
                node = node.values[index]
            elif isinstance(node, JSONArray) and isinstance(key, int) and key < len(node.values):
                node = node.values[key]
            else:
                raise BadInput(f"its {_dotted(path[:i + 1])} is not what marm expects; fix it by hand")
        return node

    def _insert(self, container: Node, members: Sequence[Node], text: str, depth: int) -> None:
        open_, close = _span(self.text, container)
        inner, outer = self.unit * depth, self.unit * (depth - 1)
        if not members:
            between = self.text[open_ + 1:close - 1].rstrip()
            self._splice(open_ + 1, close - 1, f"{between}\n{inner}{text}\n{outer}")
            return
        last_end = _span(self.text, members[-1])[1]
        between = self.text[last_end:close - 1].rstrip()
        comma = "" if getattr(container, "trailing_comma", None) else ","
        self._splice(last_end, close - 1, f"{comma}{between}\n{inner}{text}\n{outer}")

    def _dump(self, value: Any, depth: int) -> str:
        return json.dumps(value, indent=self.unit, ensure_ascii=False).replace(
            "\n", "\n" + self.unit * depth)

    def _splice(self, start: int, end: int, text: str) -> None:
        self.text = self.text[:start] + text + self.text[end:]
        self._parse()


def _span(text: str, node: Node) -> tuple[int, int]:
    """Where ``node`` starts and ends in ``text`` (end exclusive)."""
    starts = _line_starts(text)
    assert node.lineno is not None and node.col_offset is not None  # every parsed node has a place
    assert node.end_lineno is not None and node.end_col_offset is not None
    start = starts[node.lineno - 1] + node.col_offset
    end = starts[node.end_lineno - 1] + node.end_col_offset
    return start, end


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _key_index(obj: JSONObject, key: str) -> int | None:
    for i, k in enumerate(obj.keys):
        name = getattr(k, "characters", None) or getattr(k, "name", None)
        if name == key:
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
