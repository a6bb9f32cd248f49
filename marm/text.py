"""Text rules shared by every write: normalisation, hashing, secret redaction,
``<private>`` spans, and the size and character limits.

Redaction runs before anything is stored, embedded or indexed, so a secret pasted into
a memory never reaches the database. The result says what was removed, by kind and
count, never the secret itself.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone

from marm.config import MAX_CONTENT_CHARS
from marm.errors import BadInput
from marm.redact import redact

_SPACE = re.compile(r"\s+")

#: The one form every stored time takes: UTC, fixed width, so text order is time order.
STAMP = "%Y-%m-%dT%H:%M:%S.%fZ"


def stamp(when: datetime) -> str:
    """``when`` (aware; a naive time is taken as UTC) in the stored form ``STAMP``."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).strftime(STAMP)


def normalise(text: str) -> str:
    """The form hashes are taken of: NFC, whitespace runs collapsed, ends stripped."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def content_hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.DOTALL | re.IGNORECASE)

@dataclass(frozen=True, slots=True)
class Cleaned:
    text: str
    redacted: dict[str, int]
    private_spans: int


def clean(text: str) -> Cleaned:
    """Drop ``<private>`` spans and redact secrets (``marm.redact``); say what was removed."""
    text, private = _PRIVATE.subn("", text)
    text, redacted = redact(text)
    return Cleaned(text=text, redacted=redacted, private_spans=private)


def clean_name(name: str) -> str:
    """A name marm stores (a session, a notebook entry) with any secret in it redacted."""
    return redact(name)[0]


def check_content(text: str) -> str:
    """Refuse text no memory may hold; return it unchanged otherwise."""
    if "\x00" in text:
        raise BadInput("the text contains a NUL byte; memories must be plain text")
    if len(text) > MAX_CONTENT_CHARS:
        raise BadInput(
            f"the text is {len(text):,} characters; the limit is {MAX_CONTENT_CHARS:,} characters"
        )
    if not text.strip():
        raise BadInput("the text is empty")
    return text


_KIND_LABEL = re.compile(
    r"^\s*(?:\*\*)?(decision|decided|fix|fixed|bug|bugfix|note|todo|research|summary|idea|"
    r"question|lesson|learned|error|incident|plan|config)\b\s*(?:\*\*)?\s*[:\-]",
    re.IGNORECASE,
)
_KIND_OF_LABEL = {
    "decided": "decision", "fixed": "fix", "bugfix": "fix", "bug": "fix", "learned": "lesson",
    "error": "fix", "incident": "fix",
}
_DECISION_WORDS = re.compile(
    r"\b(?:we decided|decided to|decision|we will use|we chose|chose to|going with|settled on|"
    r"switch(?:ed)? to|instead of)\b",
    re.IGNORECASE,
)
_FIX_WORDS = re.compile(
    r"\b(?:fixed|fixes|fix for|root cause|workaround|resolved|the bug|regression|patched)\b",
    re.IGNORECASE,
)

KINDS = (
    "decision", "fix", "note", "log", "summary", "todo", "research", "idea", "question",
    "lesson", "plan", "config", "capture", "episode", "convention",
)


def labelled_kind(text: str) -> str | None:
    """The kind a leading label names (``DECISION: ...``, ``**Fix** - ...``), or None."""
    m = _KIND_LABEL.match(text)
    if m is None:
        return None
    label = m.group(1).lower()
    return _KIND_OF_LABEL.get(label, label)


def classify(text: str) -> str:
    """Guess a memory's kind from a leading label or a few telling words."""
    m = _KIND_LABEL.match(text)
    if m:
        label = m.group(1).lower()
        return _KIND_OF_LABEL.get(label, label)
    head = text[:400]
    if _DECISION_WORDS.search(head):
        return "decision"
    if _FIX_WORDS.search(head):
        return "fix"
    return "note"


def to_timestamp(value: str) -> str:
    """Parse a user's date or time (``YYYY-MM-DD``, ISO-8601 with optional zone) into the
    stored fixed-width UTC form; a bare date means its midnight UTC."""
    raw = value.strip()
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadInput(f"cannot read {value!r} as a date; use YYYY-MM-DD or ISO-8601") from None
    return stamp(parsed)
