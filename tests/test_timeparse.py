"""Time expressions resolved against a fixed reference time (a Sunday)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nous.retrieval.timeparse import parse_time_expression

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def d(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "since", "until", "rest"),
    [
        ("what happened yesterday", d(2026, 11, 21), d(2026, 11, 22), "what happened"),
        ("what did we decide last week?", d(2026, 11, 9), d(2026, 11, 16), "what did we decide ?"),
        ("we met two days ago", d(2026, 11, 20), d(2026, 11, 21), "we met"),
        ("a couple of days ago", d(2026, 11, 20), d(2026, 11, 21), "a couple of days ago"),
        ("what did Maya do in May 2023?", d(2023, 5, 1), d(2023, 6, 1), "what did Maya do ?"),
        ("on 8 May, 2023 what happened", d(2023, 5, 8), d(2023, 5, 9), "what happened"),
        ("the March 5, 2024 meeting", d(2024, 3, 5), d(2024, 3, 6), "the meeting"),
        ("notes from 2024-02-29", d(2024, 2, 29), d(2024, 3, 1), "notes from"),
        ("what did I say last Tuesday", d(2026, 11, 17), d(2026, 11, 18), "what did I say"),
        ("budget talks last month", d(2026, 10, 1), d(2026, 11, 1), "budget talks"),
        ("plans in May", d(2026, 5, 1), d(2026, 6, 1), "plans"),
        ("plans in December", d(2025, 12, 1), d(2026, 1, 1), "plans"),
        ("trips in 2023", d(2023, 1, 1), d(2024, 1, 1), "trips"),
        ("errors in the past 3 days", d(2026, 11, 19, 10), None, "errors"),
        ("what did we do this week", d(2026, 11, 16), d(2026, 11, 23), "what did we do"),
    ],
)
def test_windows(query: str, since: datetime, until: datetime | None, rest: str) -> None:
    parsed = parse_time_expression(query, NOW)
    assert parsed.window is not None
    assert parsed.window.since == since
    if until is not None:
        assert parsed.window.until == until
    assert parsed.text == rest


def test_anchor_is_left_for_the_retriever() -> None:
    parsed = parse_time_expression("what did we buy before the trip?", NOW)
    assert parsed.window is not None and parsed.window.since is None and parsed.window.until is None
    assert (parsed.window.anchor, parsed.window.anchor_direction) == ("trip", "before")
    after = parse_time_expression("how have things been since the move", NOW)
    assert after.window is not None and after.window.anchor_direction == "after"


@pytest.mark.parametrize(
    ("query", "recap"),
    [
        ("what did we talk about recently?", True),
        ("Can you catch me up?", True),
        ("Give me a recap", True),
        ("what did Maya talk about with Jonas in May?", False),
        ("what is the budget", False),
    ],
)
def test_recap_detection(query: str, recap: bool) -> None:
    assert parse_time_expression(query, NOW).recap is recap


def test_no_expression_leaves_the_query_alone() -> None:
    parsed = parse_time_expression("What is Caroline's identity?", NOW)
    assert parsed.window is None and parsed.text == "What is Caroline's identity?"
