"""Search syntax in a query is text, never an operator: FTS5 and tsquery syntax, SQL fragments,
unicode edge cases. Recall answers (possibly nothing) and never raises."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nous import Nous

QUERIES = [
    '"a" OR b*',
    "NEAR(",
    "NEAR(a b, 3)",
    '"unbalanced',
    "it's 'quoted",
    "'; DROP TABLE memories; --",
    "a AND NOT b",
    "col:term",
    "^start",
    "(a | b) & !c",
    "a <-> b",
    "* * *",
    "\\",
    "%_%",
    "שלום עולם",  # right to left
    "e\u0301e\u0301",  # combining marks
    "x\u0000y",
]


@pytest.mark.parametrize("query", QUERIES)
async def test_search_syntax_is_just_text(nous: Nous, query: str) -> None:
    await nous.learn("The staging cluster runs in eu-west-1 and NEAR the OR gateway")
    try:
        hits = await nous.recall(query, limit=5)
    except Exception as exc:  # only a typed, clear refusal of the input is acceptable
        from nous import InvalidInputError

        assert isinstance(exc, InvalidInputError), exc
    else:
        assert isinstance(hits, list)


@given(query=st.text(min_size=1, max_size=200))
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
async def test_any_text_is_answered_or_refused_cleanly(nous: Nous, query: str) -> None:
    """Any other exception (a driver's syntax error above all) fails the property."""
    from nous import InvalidInputError

    with contextlib.suppress(InvalidInputError):  # empty, control characters, lone surrogates
        assert isinstance(await nous.recall(query, limit=3), list)
