"""Dates a query or a memory mentions, for the hybrid lane's time term.

"What did we decide on 7 July 2023?", "the outage in March 2024", "2024-03-05": a
memory that was valid then is more likely the one meant. Day, month and year
mentions become intervals; ``closeness`` scores a memory's validity time against
them (1 inside, decaying with distance).

People rarely write the date of the day they write on: "yesterday", "last Friday",
"two weeks ago", "next month". ``mentioned`` resolves such phrases (and dates written
without a year, "on 3 October") against the memory's own date when it is written, so
a question naming the day ("on 3 October 2023") finds the memory that said
"yesterday" on the 4th; ``overlap`` scores those resolved days against the query's.
A question asks for a time (``asks_when``) when it says so anywhere ("In which month
did ...", "How long ago ...", "... since when?"), not only by a leading "When".
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from marm.text import STAMP

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
_ASKS_WHEN = re.compile(
    r"\b(?:when|since when|how long(?: ago)?|how many (?:days|weeks|months|years)|"
    r"(?:what|which) (?:date|day|time|year|month|week|weekend|season|decade)|"
    r"in (?:what|which) (?:year|month|week|season))\b", re.I)

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
    """Does the query ask for a time ("When did we ...?", "In which month ...", "How long
    ago ...") or name one ("... on 3 May 2023")? Anywhere in it, not only at its start."""
    return bool(_ASKS_WHEN.search(query)) or bool(intervals(query))


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


# Relative phrases, resolved against the date a memory was written (``mentioned``).
_NUMBER = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_NUMBER.update({"a": 1, "an": 1, "a couple of": 2, "a few": 3, "several": 3})
_COUNT = r"(?P<n>\d{1,2}|a couple of|a few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_WEEKDAYS = {d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())}
_RELATIVE = re.compile(
    r"\b(?:(?P<dby>the day before yesterday)|(?P<yday>yesterday|last night)|"
    r"(?P<today>today|tonight|this (?:morning|afternoon|evening))|(?P<tmrw>tomorrow)|"
    rf"{_COUNT}\s+(?P<unit>day|week|month|year)s?\s+ago|"
    r"(?P<rel>last|past|previous|this|next|coming)\s+(?P<span>week(?:end)?|month|year)|"
    r"(?P<wrel>last|this past|this|next|on)?\s*(?P<wday>(?i:monday|tuesday|wednesday|thursday|friday|saturday|sunday))(?!s))\b",
    re.I,
)
_NO_YEAR = (
    re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON}\b(?!\.?,?\s+(?:19|20)\d\d)", re.I),
    re.compile(rf"\b{_MON}\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b(?!,?\s+(?:19|20)\d\d)(?!:)", re.I),
    re.compile(r"\b(?:in|during|since|until|by|early|late|mid|last|next|this|of)[\s-]+"
               r"(?P<mon>January|February|March|April|May|June|July|August|September|October|November|December)"
               r"\b(?!\s+\d)(?!,?\s+(?:19|20)\d\d)"),
)
#: At most this many dates are kept of one memory (a long text listing many days says
#: little about any one of them).
MAX_MENTIONS = 8


def _days(start: datetime, n: int) -> Interval:
    return start, start + timedelta(days=n)


def _shift_month(y: int, m: int, by: int) -> Interval:
    index = y * 12 + (m - 1) + by
    return _month(index // 12, index % 12 + 1)


def _year(y: int) -> Interval:
    return datetime(y, 1, 1, tzinfo=timezone.utc), datetime(y + 1, 1, 1, tzinfo=timezone.utc)


def _relative(g: dict[str, str | None], day: datetime) -> Interval | None:
    """The interval one match of ``_RELATIVE`` names, seen from ``day`` (a midnight)."""
    if g["dby"]:
        return _days(day - timedelta(days=2), 1)
    if g["yday"]:
        return _days(day - timedelta(days=1), 1)
    if g["today"]:
        return _days(day, 1)
    if g["tmrw"]:
        return _days(day + timedelta(days=1), 1)
    if g["unit"]:
        count = (g["n"] or "a").lower()
        n = int(count) if count.isdigit() else _NUMBER[count]
        unit = (g["unit"] or "").lower()
        if unit == "day":
            return _days(day - timedelta(days=n), 1)
        if unit == "week":
            return _days(day - timedelta(days=7 * n + 3), 7)
        if unit == "month":
            return _shift_month(day.year, day.month, -n)
        return _year(day.year - n)
    if g["span"]:
        rel, span = (g["rel"] or "").lower(), (g["span"] or "").lower()
        step = -1 if rel in ("last", "past", "previous") else 1 if rel in ("next", "coming") else 0
        if span == "week":
            if rel == "past":
                return _days(day - timedelta(days=7), 7)
            return _days(day - timedelta(days=day.weekday() - 7 * step), 7)
        if span == "weekend":  # the Saturday and Sunday of the week, a week before or after
            return _days(day + timedelta(days=5 - day.weekday() + 7 * step), 2)
        if span == "month":
            return _shift_month(day.year, day.month, step)
        return _year(day.year + step)
    wday = _WEEKDAYS[(g["wday"] or "").lower()]
    rel = (g["wrel"] or "").lower()
    if rel in ("next", "this"):
        ahead = (wday - day.weekday()) % 7 or (7 if rel == "next" else 0)
        return _days(day + timedelta(days=ahead), 1)
    if not rel and not (g["wday"] or " ")[0].isupper():
        return None  # a lower-case weekday alone is too weak a sign
    back = (day.weekday() - wday) % 7 or 7  # the last such day before the one written on
    return _days(day - timedelta(days=back), 1)


def mentioned(text: str, written: datetime) -> list[Interval]:
    """The days, weeks, months and years ``text`` names, relative ones resolved against
    ``written`` (the memory's own date): "yesterday" on 4 October is 3 October, "last
    month" is September, "on 5 May" is 5 May of the year it was written in."""
    day = datetime(written.year, written.month, written.day, tzinfo=timezone.utc)
    out = list(intervals(text))
    taken: list[tuple[int, int]] = []
    for m in _RELATIVE.finditer(text):
        found = _relative(m.groupdict(), day)
        if found:
            out.append(found)
            taken.append((m.start(), m.end()))
    for pattern in _NO_YEAR:
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            g = m.groupdict()
            month = _MONTHS[g["mon"].lower()[:3]]
            found = _day(day.year, month, int(g["day"])) if g.get("day") else _month(day.year, month)
            if found:
                out.append(found)
                taken.append((m.start(), m.end()))
    return list(dict.fromkeys(out))[:MAX_MENTIONS]


def overlap(named: list[tuple[str, str]], spans: list[Interval]) -> float:
    """How precisely a memory's ``named`` dates (stored [start, end) stamps) say one of
    the query's ``spans``: the largest share of a named interval that lies inside a
    span. 1 when the memory names the asked day (or a day inside an asked month);
    1/7 when it says "last week" of an asked day; 0 when they do not meet."""
    best = 0.0
    for raw_start, raw_end in named:
        start, end = parse_stamp(raw_start), parse_stamp(raw_end)
        if start is None or end is None or end <= start:
            continue
        for q_start, q_end in spans:
            inside = (min(end, q_end) - max(start, q_start)).total_seconds()
            if inside > 0:
                best = max(best, inside / (end - start).total_seconds())
    return best


def named_stamps(text: str, written: str | None) -> list[tuple[str, str]]:
    """``mentioned`` as stored [start, end) stamps, resolved against ``written`` (a stored
    time: the memory's ``valid_from`` or ``recorded_at``); now when it has none."""
    anchor = parse_stamp(written) if written else None
    found = mentioned(text, anchor or datetime.now(timezone.utc))
    return [(start.strftime(STAMP), end.strftime(STAMP)) for start, end in found]


def query_spans(query: str, now: datetime) -> list[Interval]:
    """The intervals a query names: dates with a year, and relative phrases seen from
    ``now`` ("what did we decide yesterday?"). A day or month without a year is left
    out: a query has no date of its own to place it in."""
    day = datetime(now.year, now.month, now.day, tzinfo=timezone.utc)
    out = intervals(query)
    for m in _RELATIVE.finditer(query):
        found = _relative(m.groupdict(), day)
        if found:
            out.append(found)
    return list(dict.fromkeys(out))
