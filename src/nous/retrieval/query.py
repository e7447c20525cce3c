"""What a recall asks: the query, its scope and the checks on it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from nous._time import as_utc
from nous.errors import InvalidInputError
from nous.models import MemoryKind
from nous.models.metadata import MetaFilter

MAX_LIMIT = 1000


# Questions about what is current or recent: only these (and time windows, recaps) use recency.
_RECENCY_CUES = re.compile(
    r"\b(recent|recently|latest|lately|newest|current|currently|now|nowadays|these days|"
    r"anymore|still|so far|updated?|last time|most recent|at the moment|right now)\b",
    re.IGNORECASE,
)


def asks_about_recency(text: str) -> bool:
    """Whether a query is about what is current or recent (not merely about a time)."""
    return _RECENCY_CUES.search(text) is not None


@dataclass(slots=True)
class RecallQuery:
    """What to look for and where."""

    text: str
    limit: int = 10
    kinds: tuple[MemoryKind, ...] | None = None
    user_id: str | None = None
    shared: bool = True  # with user_id: also the memories that belong to no user
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_inactive: bool = False
    include_superseded: bool = False
    frame: str | None = None
    active_censors: tuple[str, ...] | None = None
    now: datetime | None = None  # reference time for "yesterday", "last week", recency
    # The store as it stood at this time: later memories unseen, a fact superseded after it current.
    as_of: datetime | None = None
    parse_time: bool = True
    preset: str | None = None  # a named RetrievalWeights preset (None: the retriever's own)
    min_score: float = 0.0  # results scoring below this are left out
    where: MetaFilter | None = None  # conditions on the memories' metadata
    # A covering set in time order instead of the best few (None: when the question's wording
    # asks for an order, a summary, a change over time or everything so far).
    cover: bool | None = None


def validate_limit_and_window(limit: object, since: object, until: object) -> None:
    """Check a result limit (1..MAX_LIMIT) and an optional [since, until) window."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(f"limit must be an integer from 1 to {MAX_LIMIT}", field="limit")
    for name, value in (("since", since), ("until", until)):
        if value is not None and not isinstance(value, datetime):
            raise InvalidInputError(f"{name} must be a datetime", field=name)
    if isinstance(since, datetime) and isinstance(until, datetime) and as_utc(since) >= as_utc(until):
        raise InvalidInputError("since must be before until", field="since")


def validate_min_score(value: object) -> float:
    """A minimum score: a number from 0 to 1."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise InvalidInputError("min_score must be a number from 0 to 1", field="min_score")
    return float(value)
