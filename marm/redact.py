"""Secret redaction: detect-secrets' maintained rules plus the shapes they miss.

Why a library: a hand list of token regexes only grows and still lags every new
provider. detect-secrets (Yelp, offline, pure Python) keeps one regex plugin per
provider; its patterns are read from the plugins themselves, so upgrading the pinned
package brings new rules with no change here. Its high-entropy plugins are not used
(a git hash or a UUID is high-entropy and not a secret), nor the public-IP one (an
address is not a credential).

What detect-secrets leaves to the caller, kept here:

- ``key=value`` (and ``key: value``, ``"key": "value"``) where the key names a secret
  (``password``, ``token``, ``AWS_SECRET_ACCESS_KEY``, ``api_key`` ...): the value is
  redacted whatever its length; a reference to one (``$DB_PASSWORD``,
  ``os.environ[...]``) or a type annotation (``token: str``) is left alone.
- credentials in a URL (``postgres://user:pw@host``): the password part.
- a whole PEM private key block (detect-secrets matches only its first line), bearer
  tokens, and the key formats its 1.5 rules do not know (``sk-ant-``, ``sk-proj-``,
  ``github_pat_``, Google ``AIza``, Stripe test keys).

detect-secrets' rules are read from ``redact_rules.json``, written from the installed
package by ``python -m marm.redact`` and checked against it by a test, and compiled
once per process on first use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

_KEYWORD = (
    r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|auth[_-]?key|client[_-]?secret|credentials?)"
)
#: A key naming a secret: any dotted/underscored prefix, the keyword, optionally ``_key``
#: (``AWS_SECRET_ACCESS_KEY``, ``db.password``, ``GITHUB_TOKEN``). ``tokens``,
#: ``bypass`` and ``secret_id`` are other words.
_KEY_VALUE = re.compile(
    r"(?i)(?<![A-Za-z0-9])((?:[A-Za-z0-9]+[_.-])*" + _KEYWORD + r"(?:[_.-]?(?:access[_-]?)?key(?:[_.-]base)?)?"
    r"[\"']?\s{0,3}(?::|=(?!=))\s{0,3}[\"']?)"
    r"(?!\$|\{|<|%|\[REDACTED|os\.|process\.env|getenv|env\(|(?:none|null|nil|true|false|"
    r"str|int|bytes|bool|float|optional|dict|list|any)\b)"
    r"([^\s\"',;)\]}]+)"
)
#: ``scheme://user:password@host``: the password.
_URL_CREDENTIALS = re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s:/?#@\"']*:)([^\s/?#@\"']+)(?=@)")

_OWN_RULES: tuple[tuple[str, str], ...] = (
    ("private_key", r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|\Z)"),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    ("stripe_key", r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}\b"),
    ("bearer_token", r"(?i)\bbearer\s+([A-Za-z0-9_\-\.=~+/]{16,})"),
)

#: detect-secrets plugins not used, and why (see the module docstring).
_SKIPPED_PLUGINS = {"IPPublicDetector"}
#: Patterns whose last group is the secret and the rest its label (kept).
_GROUP_IS_SECRET: set[re.Pattern[str]] = {_KEY_VALUE, _URL_CREDENTIALS, re.compile(_OWN_RULES[-1][1])}
#: Characters a detect-secrets pattern may match around the secret itself.
_EDGE = " \t\r\n=:\"'"


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


#: detect-secrets' rules as of the pinned version, written by ``python -m marm.redact``
#: (a test checks the file against the installed package). Read from this file, a
#: process pays nothing for the library: importing it costs ~0.1 s (it brings requests),
#: which fifty parallel hooks on a small machine cannot afford.
RULES_FILE = Path(__file__).with_name("redact_rules.json")


def library_rules() -> list[dict[str, Any]]:
    """detect-secrets' regex rules, read from the installed plugins themselves."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    plugins: dict[str, Any] = dict(get_mapping_from_secret_type_to_class())
    out = []
    for secret_type, plugin in sorted(plugins.items()):
        if not issubclass(plugin, RegexBasedDetector) or plugin.__name__ in _SKIPPED_PLUGINS:
            continue
        denylist: Iterable[re.Pattern[str]] = plugin.denylist  # a class attribute on every plugin
        for pattern in denylist:
            out.append({"kind": _slug(secret_type), "plugin": plugin.__name__, "pattern": pattern.pattern,
                        "flags": int(pattern.flags & ~re.UNICODE)})
    return out


@lru_cache(maxsize=1)
def rules() -> tuple[Rule, ...]:
    """Every rule, in the order they run: whole blocks first, then keyed values, then
    token shapes (a token already inside ``[REDACTED:...]`` is not matched again)."""
    out = [Rule(kind, re.compile(p)) for kind, p in _OWN_RULES]
    out.insert(1, Rule("password", _KEY_VALUE))
    out.insert(2, Rule("url_credentials", _URL_CREDENTIALS))
    for r in orjson.loads(RULES_FILE.read_bytes())["rules"]:
        out.append(Rule(r["kind"], re.compile(r["pattern"], r["flags"])))
    return tuple(out)


def write_rules_file() -> None:
    """Regenerate ``RULES_FILE`` from the installed detect-secrets."""
    from importlib.metadata import version

    doc = {"source": f"detect-secrets {version('detect-secrets')}", "rules": library_rules()}
    RULES_FILE.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


def _span(m: re.Match[str]) -> tuple[int, int]:
    """The part of a match that is the secret: its last group when that group is the
    secret (keyed values, URL passwords, bearer tokens, a detect-secrets group of 16+
    characters; a short group is a prefix such as ``ghp``), else the whole match
    without the delimiters some patterns include around it."""
    g = m.re.groups
    if g and m.group(g) is not None and (m.re in _GROUP_IS_SECRET or len(m.group(g)) >= 16):
        return m.start(g), m.end(g)
    start, end = m.span()
    while start < end and m.string[start] in _EDGE:
        start += 1
    while end > start and m.string[end - 1] in _EDGE:
        end -= 1
    return start, end


def redact(text: str) -> tuple[str, dict[str, int]]:
    """``text`` with every secret replaced by ``[REDACTED:kind]``, and the count by kind."""
    counts: dict[str, int] = {}
    for rule in rules():
        if not rule.pattern.search(text):
            continue
        mark = f"[REDACTED:{rule.kind}]"
        pieces: list[str] = []
        last = 0
        for m in rule.pattern.finditer(text):
            start, end = _span(m)
            if end <= start or start < last or text.startswith("[REDACTED:", start):
                continue
            pieces += [text[last:start], mark]
            last = end
            counts[rule.kind] = counts.get(rule.kind, 0) + 1
        if pieces:
            text = "".join(pieces) + text[last:]
    return text, counts


if __name__ == "__main__":
    write_rules_file()
