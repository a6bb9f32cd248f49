"""Dates a query mentions, for the hybrid lane's time term.

"What did we decide on 7 July 2023?", "the outage in March 2024", "2024-03-05": a
memory that was valid then is more likely the one meant. Day, month and year
mentions become intervals; ``closeness`` scores a memory's validity time against
them (1 inside, decaying with distance). English month names and ISO dates only;
relative phrases ("last week") are left alone.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MON = r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"  # noqa: E501
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS = (
    re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<m>\d\d)-(?P<d>\d\d)\b"),
    re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON}\.?,?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b{_MON}\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b{_MON}\.?,?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b(?:in|of|during|since|before|after)\s+{_YEAR}\b", re.I),
)
#: Words that say when something happened, for questions that ask "when". Month and
#: day names count only capitalised ("May", not "may").
_UNITS = r"(?:week|month|year|night|weekend|morning|evening|summer|winter|spring|fall|quarter|sprint|release)"
_DAYS = r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day"
_MONTH_NAMES = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_TIME_WORDS = re.compile(
    rf"\b(?:(?i:yesterday|today|tonight|tomorrow|ago|(?:last|next|this|past)\s+(?:{_UNITS}|{_DAYS}))|"
    rf"{_DAYS}|{_MONTH_NAMES}|(?:19|20)\d\d)\b")
_ASKS_WHEN = re.compile(r"^\W*(?:when|since when|how long ago|what (?:date|day|time|year|month))\b", re.I)

#: How fast closeness falls off outside an interval, in days.
DECAY_DAYS = 10.0

Interval = tuple[datetime, datetime]


def _day(y: int, m: int, d: int) -> Interval | None:
    try:
        start = datetime(y, m, d, tzinfo=timezone.utc)
    except ValueError:
        return None
    return start, start + timedelta(days=1)


def _month(y: int, m: int) -> Interval:
    start = datetime(y, m, 1, tzinfo=timezone.utc)
    end = datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=timezone.utc)
    return start, end


def intervals(query: str) -> list[Interval]:
    """The time intervals ``query`` names (each span of text is used once)."""
    out: list[Interval] = []
    taken: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for m in pattern.finditer(query):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            g = m.groupdict()
            if g.get("y"):
                found = _day(int(g["y"]), int(g["m"]), int(g["d"]))
            elif g.get("day"):
                found = _day(int(g["year"]), _MONTHS[g["mon"].lower()[:3]], int(g["day"]))
            elif g.get("mon"):
                found = _month(int(g["year"]), _MONTHS[g["mon"].lower()[:3]])
            else:
                y = int(g["year"])
                found = (datetime(y, 1, 1, tzinfo=timezone.utc), datetime(y + 1, 1, 1, tzinfo=timezone.utc))
            if found:
                out.append(found)
                taken.append((m.start(), m.end()))
    return out


def asks_when(query: str) -> bool:
    """Does the query ask for a time ("When did we ...?", "What date ...")?"""
    return bool(_ASKS_WHEN.match(query))


def says_when(text: str) -> bool:
    """Does the text say when something happened (a date, a weekday, "last week", ...)?"""
    return bool(_TIME_WORDS.search(text))


def parse_stamp(stamp: str) -> datetime | None:
    """A stored time (fixed-width ISO-8601 UTC) as an aware datetime; None if unreadable."""
    try:
        return datetime.fromisoformat(stamp[:19]).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def closeness(stamp: str | None, spans: list[Interval]) -> float:
    """1 when ``stamp`` (a stored time) lies in one of ``spans``, decaying with distance."""
    if not spans or not stamp:
        return 0.0
    when = parse_stamp(stamp)
    if when is None:
        return 0.0
    best = 0.0
    for start, end in spans:
        if start <= when < end:
            return 1.0
        gap = (start - when if when < start else when - end).total_seconds() / 86400
        best = max(best, 0.5 ** (gap / DECAY_DAYS))
    return best
