"""Build the self-contained HTML page: template + CSS + JS + the data as a JSON block.

Escaping happens here and only here, and only for the one place where the data meets
HTML: the ``<script type="application/json">`` block. A non-executable block is parsed
as raw text up to the first ``</script``, so every ``<``, ``>`` and ``&`` in the JSON is
written as a ``\\u003c``-style escape (JSON.parse turns it back into the same
character), and so are U+2028/U+2029. The page then renders every stored value with
``textContent``; no stored text is ever parsed as markup.

A Content-Security-Policy with the hash of the one inline script stops anything else
from running (an injected ``<script>`` or ``onerror=`` would be refused by the browser
even if a rendering bug let one through) and allows no network at all, except, for a
served page, requests to its own origin.
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import resources
from typing import Any

import orjson

_JSON_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}

_MARKER = re.compile(r"\{\{(CSP|STYLE|SCRIPT|DATA)\}\}")


def _asset(name: str) -> str:
    return resources.files("marm.view").joinpath("static").joinpath(name).read_text(encoding="utf-8")


def json_block(data: Any) -> str:
    """``data`` as JSON that is inert inside a ``<script type="application/json">``."""
    text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    return text.translate(_JSON_ESCAPES)


def build(data: dict[str, Any]) -> str:
    """The whole page as one string."""
    script = _asset("page.js")
    style = _asset("page.css")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    connect = "'self'" if data.get("serve") else "'none'"
    csp = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline';"
           f" img-src data:; connect-src {connect}; form-action 'none'; base-uri 'none'")
    parts = {"CSP": csp, "STYLE": style, "SCRIPT": script, "DATA": json_block(data)}
    # One pass over the template: inserted text is never scanned for markers again.
    return _MARKER.sub(lambda m: parts[m.group(1)], _asset("page.html"))
