"""Time expressions in queries, resolved against a reference time.

``parse_time_expression("what did we decide last week?", now)`` gives a window
[since, until) and the query with the expression removed. Relative anchors
("before the trip", "after the launch") are returned unresolved: the retriever
resolves them by recalling the anchor event. Recap questions ("what did we talk
about recently?") are detected separately.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from nous._time import as_utc

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "couple of": 2,
    "few": 3,
    "several": 3,
}
_NUM = r"(\d+|a couple of|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_MONTH = r"(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_UNIT = r"(minute|hour|day|week|month|year)s?"

RECAP_PATTERNS = (
    "what did we talk about",
    "what have we talked about",
    "what did we discuss",
    "what have we discussed",
    "what did we do",
    "recent conversations",
    "catch me up",
    "what happened",
    "recap",
    "summary of recent",
    "summarize our",
    "summarise our",
    "where did we leave off",
    "what were we talking about",
)


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A resolved window [since, until), or an anchor to resolve."""

    since: datetime | None
    until: datetime | None
    expression: str
    anchor: str | None = None
    anchor_direction: str | None = None  # "before" | "after"


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    text: str
    window: TimeWindow | None
    recap: bool


def _day_start(t: datetime) -> datetime:
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_window(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def _shift_months(t: datetime, months: int) -> datetime:
    index = t.year * 12 + t.month - 1 + months
    year, month = divmod(index, 12)
    day = min(t.day, calendar.monthrange(year, month + 1)[1])
    return t.replace(year=year, month=month + 1, day=day)


def _amount(raw: str) -> int:
    return int(raw) if raw.isdigit() else NUMBER_WORDS[raw]


def _ago(n: int, unit: str, now: datetime) -> tuple[datetime, datetime]:
    """A window around 'n units ago', as wide as one unit."""
    if unit == "minute":
        point = now - timedelta(minutes=n)
        return point - timedelta(minutes=1), point + timedelta(minutes=1)
    if unit == "hour":
        point = now - timedelta(hours=n)
        return point - timedelta(minutes=30), point + timedelta(minutes=30)
    if unit == "day":
        start = _day_start(now) - timedelta(days=n)
        return start, start + timedelta(days=1)
    if unit == "week":
        start = _day_start(now) - timedelta(weeks=n)
        return start - timedelta(days=3), start + timedelta(days=4)
    if unit == "month":
        start = _shift_months(_day_start(now), -n)
        return start - timedelta(days=15), start + timedelta(days=15)
    return datetime(now.year - n, 1, 1, tzinfo=UTC), datetime(now.year - n + 1, 1, 1, tzinfo=UTC)


def _rules(now: datetime) -> list[tuple[re.Pattern[str], object]]:
    today = _day_start(now)
    week_start = today - timedelta(days=today.weekday())

    def last_weekday(m: re.Match[str]) -> tuple[datetime, datetime]:
        target = WEEKDAYS[m.group(1)]
        delta = (today.weekday() - target) % 7 or 7
        start = today - timedelta(days=delta)
        return start, start + timedelta(days=1)

    def month_year(m: re.Match[str]) -> tuple[datetime, datetime]:
        return _month_window(int(m.group(2)), MONTHS[m.group(1)])

    def month_only(m: re.Match[str]) -> tuple[datetime, datetime]:
        month = MONTHS[m.group(1)]
        year = now.year if month <= now.month else now.year - 1
        return _month_window(year, month)

    def day_month_year(m: re.Match[str]) -> tuple[datetime, datetime]:
        start = datetime(int(m.group(3)), MONTHS[m.group(2)], int(m.group(1)), tzinfo=UTC)
        return start, start + timedelta(days=1)

    def month_day_year(m: re.Match[str]) -> tuple[datetime, datetime]:
        start = datetime(int(m.group(3)), MONTHS[m.group(1)], int(m.group(2)), tzinfo=UTC)
        return start, start + timedelta(days=1)

    def iso_date(m: re.Match[str]) -> tuple[datetime, datetime]:
        start = datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), tzinfo=UTC)
        return start, start + timedelta(days=1)

    def year_only(m: re.Match[str]) -> tuple[datetime, datetime]:
        return datetime(int(m.group(1)), 1, 1, tzinfo=UTC), datetime(int(m.group(1)) + 1, 1, 1, tzinfo=UTC)

    def ago(m: re.Match[str]) -> tuple[datetime, datetime]:
        return _ago(_amount(m.group(1)), m.group(2), now)

    def past(m: re.Match[str]) -> tuple[datetime, datetime]:
        n = _amount(m.group(1)) if m.group(1) else 1
        unit = m.group(2)
        spans = {
            "minute": timedelta(minutes=n),
            "hour": timedelta(hours=n),
            "day": timedelta(days=n),
            "week": timedelta(weeks=n),
            "month": timedelta(days=30 * n),
            "year": timedelta(days=365 * n),
        }
        return now - spans[unit], now + timedelta(seconds=1)

    # Resolved only when matched: near year 1 or 9999 a window can overflow, and that must spoil
    # only the expression that needs it (it is then not a time window), not every query.
    fixed: dict[str, Callable[[], tuple[datetime, datetime]]] = {
        r"the day before yesterday": lambda: (today - timedelta(days=2), today - timedelta(days=1)),
        r"yesterday|last night": lambda: (today - timedelta(days=1), today),
        r"(?:earlier )?today|this morning|this afternoon|tonight|this evening": lambda: (
            today,
            today + timedelta(days=1),
        ),
        r"last week|the previous week": lambda: (week_start - timedelta(weeks=1), week_start),
        r"this week": lambda: (week_start, week_start + timedelta(weeks=1)),
        r"last month|the previous month": lambda: _month_window(*divmod_month(today, -1)),
        r"this month": lambda: _month_window(today.year, today.month),
        r"last year|the previous year": lambda: (
            datetime(now.year - 1, 1, 1, tzinfo=UTC),
            datetime(now.year, 1, 1, tzinfo=UTC),
        ),
        r"this year": lambda: (
            datetime(now.year, 1, 1, tzinfo=UTC),
            datetime(now.year + 1, 1, 1, tzinfo=UTC),
        ),
    }
    rules: list[tuple[re.Pattern[str], object]] = [
        (re.compile(r"\b(?:in |on |during )?(\d{4})-(\d{2})-(\d{2})\b"), iso_date),
        (
            re.compile(rf"\b(?:on )?(?:the )?(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH},? (\d{{4}})\b"),
            day_month_year,
        ),
        (re.compile(rf"\b(?:on )?{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b"), month_day_year),
        (re.compile(rf"\b(?:in |during )?{_MONTH},? (\d{{4}})\b"), month_year),
        (re.compile(rf"\b{_NUM} {_UNIT} ago\b"), ago),
        (re.compile(rf"\b(?:in |over |during )?(?:the )?(?:last|past) {_NUM} {_UNIT}\b"), past),
        (re.compile(rf"\b(?:in |over |during )?the past (){_UNIT}\b"), past),
        (
            re.compile(r"\b(?:on |last )(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"),
            last_weekday,
        ),
        *[(re.compile(rf"\b(?:{p})\b"), lambda _m, w=window: w()) for p, window in fixed.items()],
        (re.compile(rf"\b(?:in|during) {_MONTH}\b"), month_only),
        (re.compile(r"\b(?:in|during) ((?:19|20)\d{2})\b"), year_only),
    ]
    return rules


def divmod_month(t: datetime, shift: int) -> tuple[int, int]:
    """(year, month) of the month ``shift`` months from ``t``'s."""
    year, month = divmod(t.year * 12 + t.month - 1 + shift, 12)
    return year, month + 1


# "before the trip", "since our wedding": an event named by a determiner or a possessive. Without
# one ("before it rolls over", "after lunch") the words are not an event the store could date.
# "Who looks after the payroll file?" asks who cares for it: "look after", "take after", "named after",
# "ask after", "go after" and "run after" are verbs, not times.
_ANCHOR = re.compile(
    r"(?<!\blook )(?<!\blooks )(?<!\blooked )(?<!\blooking )(?<!\btake )(?<!\btakes )(?<!\btook )"
    r"(?<!\bnamed )(?<!\bask )(?<!\basks )(?<!\basked )(?<!\bgo )(?<!\bgoes )(?<!\bwent )(?<!\brun )"
    r"(?<!\bruns )\b(before|after|since) (?:the|our|my|his|her|their|your) ([a-z][a-z' -]{2,40}?)(?=[?.!,;]|$)"
)


def parse_time_expression(query: str, now: datetime | None = None) -> ParsedQuery:
    """Find the first time expression in ``query`` and resolve it against ``now``."""
    now = as_utc(now or datetime.now(UTC))
    lower = query.lower()
    recap = any(p in lower for p in RECAP_PATTERNS)
    for pattern, resolve in _rules(now):
        match = pattern.search(lower)
        if not match:
            continue
        try:
            window = resolve(match) if callable(resolve) else resolve
        except (KeyError, ValueError, OverflowError):  # no such date, or beyond years 1..9999
            continue
        since, until = window  # type: ignore[misc]
        text = _strip(query, match.start(), match.end())
        return ParsedQuery(text or query, TimeWindow(since, until, match.group(0)), recap)
    anchor = _ANCHOR.search(lower)
    if anchor:
        direction = "after" if anchor.group(1) in ("after", "since") else "before"
        window = TimeWindow(
            None, None, anchor.group(0), anchor=anchor.group(2).strip(), anchor_direction=direction
        )
        return ParsedQuery(_strip(query, anchor.start(), anchor.end()) or query, window, recap)
    return ParsedQuery(query, None, recap)


def _strip(query: str, start: int, end: int) -> str:
    return " ".join((query[:start] + " " + query[end:]).split()).strip(" ,")
