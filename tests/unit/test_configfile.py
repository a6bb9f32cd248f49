"""``Jsonc`` parses a file once and splices every edit into its text: after each edit
the document must be exactly what reading its new text afresh gives (same text, same
data, and the next edit lands in the same place as it would in a fresh read)."""

from __future__ import annotations

import json

import pytest

from marm.configfile import Jsonc, load_json
from marm.install import add_hooks, add_mcp, is_marm, remove_hooks, remove_mcp

TEXTS = [
    None,
    "{}",
    '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}\n',
    '{\n\t"theme": "dark", // tabs\n\t"hooks": {},\n}\n',
    '{\n  // notes\n  "hooks": {\n    "Stop": [ ],\n    "SessionStart": [\n      {"hooks": [{"command": "marm hook '
    'session-start"}, {"command": "x"}]},\n      {"hooks": [{"command": "/bin/marm hook session-start --agent claude"}]},'
    '\n    ],\n  },\n  "mcpServers": {"marm": {"command": "old", "trust": true}, /* inline */},\n}\n',
]


def _edits():
    yield lambda d: add_hooks(d, "claude", "marm")
    yield lambda d: add_mcp(d, "marm", "claude")
    yield lambda d: add_hooks(d, "gemini", "/other/marm")   # rewrites marm's handlers where they are
    yield lambda d: d.set(("extra",), {"a": [1, 2.5, None, True, "é \"q\""], "b": {}, "c": []})
    yield lambda d: d.append(("extra", "c"), {"x": [[]]})
    yield lambda d: d.set(("extra", "a", 1), "two")
    yield lambda d: d.delete(("extra", "a", 0))
    yield lambda d: d.delete(("extra", "b"))
    yield lambda d: remove_hooks(d)
    yield lambda d: remove_mcp(d)
    yield lambda d: d.delete(("extra",))


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_each_edit_leaves_what_a_fresh_read_of_its_text_gives(text):
    doc = Jsonc(text)
    for edit in _edits():
        fresh = Jsonc(doc.text)
        fresh.unit = doc.unit  # the indentation read from the text the document started from
        edit(doc)
        edit(fresh)
        assert doc.text == fresh.text
        assert doc.data == fresh.data == load_json(doc.text)
    assert "marm" not in json.dumps(doc.data)
    theirs = [h["command"] for gs in load_json(text).get("hooks", {}).values() for g in gs
              for h in g["hooks"] if not is_marm(h)]
    assert all(f'"command": "{c}"' in doc.text for c in theirs)  # the user's own handlers stay
