"""Time helpers: every timestamp Nous stores is timezone-aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from nous.errors import InvalidInputError

EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Interpret naive datetimes as UTC and convert aware ones to UTC.

    A time whose UTC equivalent falls outside years 1..9999 (year 1 at +05:00, year 9999 at
    -05:00) is an InvalidInputError, not an OverflowError."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidInputError(f"time {value.isoformat()} is outside years 1 to 9999 in UTC") from None


def shifted(value: datetime, delta: timedelta) -> datetime:
    """``value + delta``, held at the earliest or latest representable time instead of overflowing
    (a window around a time near year 1 or 9999)."""
    try:
        return value + delta
    except OverflowError:
        return EARLIEST if delta < timedelta(0) else LATEST
