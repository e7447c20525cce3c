"""Bad input gets a typed error and nothing is half-written."""

from __future__ import annotations

import math

import pytest

from nous import InvalidInputError, NotFoundError, Nous, NousError
from nous.models import Fact


async def _count(nous: Nous) -> int:
    stats = await nous.stats()
    return sum(stats.active_by_kind.values()) + stats.inactive


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("", "empty"),
        ("   \n\t ", "empty"),
        ("x" * 100_001, "limit"),
        ("bell \x07 character", "control character"),
        ("null \x00 byte", "control character"),
        ("lone surrogate \udcff from bad bytes", "UTF-8"),
        (123, "string"),
        (None, "content"),
    ],
)
async def test_bad_content_is_rejected(nous: Nous, content: object, needle: str) -> None:
    with pytest.raises(InvalidInputError, match=needle):
        await nous.learn(content)  # type: ignore[arg-type]
    assert await _count(nous) == 0


async def test_content_at_the_limit_is_accepted(nous: Nous) -> None:
    result = await nous.learn("y" * 100_000)
    assert len((await nous.get(result.id)).content) == 100_000


@pytest.mark.parametrize("confidence", [math.nan, math.inf, -0.1, 1.5, "high"])
async def test_bad_confidence_is_rejected(nous: Nous, confidence: object) -> None:
    with pytest.raises(InvalidInputError, match="confidence"):
        await nous.learn("A fact", confidence=confidence)  # type: ignore[arg-type]  # a bad value on purpose
    with pytest.raises(InvalidInputError, match="confidence"):
        await nous.record_decision("A decision", confidence=confidence)  # type: ignore[arg-type]  # a bad value on purpose
    assert await _count(nous) == 0


async def test_bad_enums_name_the_choices(nous: Nous) -> None:
    with pytest.raises(InvalidInputError, match="category must be one of: preference"):
        await nous.learn("A fact", category="feelings")
    with pytest.raises(InvalidInputError, match="stakes must be one of"):
        await nous.record_decision("A decision", stakes="enormous")
    with pytest.raises(InvalidInputError, match="reasons"):
        await nous.record_decision("A decision", reasons=[{"type": "vibes", "text": "x"}])
    assert await _count(nous) == 0


async def test_unknown_ids_raise_not_found(nous: Nous) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    for call in (
        nous.get(missing),
        nous.forget(missing),
        nous.update(missing, content="x"),
        nous.history(missing),
        nous.review_decision(missing, "success"),
        nous.get("abcdef"),
    ):
        with pytest.raises(NotFoundError):
            await call
    fact = await nous.learn("Real fact")
    with pytest.raises(NotFoundError, match="decision"):
        await nous.review_decision(fact.id, "success")


async def test_update_rejects_bad_changes_and_keeps_the_old_value(nous: Nous) -> None:
    result = await nous.learn("Original content")
    with pytest.raises(InvalidInputError):
        await nous.update(result.id, content="   ")
    with pytest.raises(InvalidInputError, match="cannot change id"):
        await nous.update(result.id, id="other")
    with pytest.raises(InvalidInputError, match="no field"):
        await nous.update(result.id, colour="blue")
    with pytest.raises(InvalidInputError, match="confidence"):
        await nous.update(result.id, confidence=float("nan"))
    assert (await nous.get(result.id)).content == "Original content"
    assert len(await nous.history(result.id)) == 1


async def test_a_batch_with_one_bad_memory_stores_nothing(nous: Nous) -> None:
    good = Fact(agent_id=nous.agent_id, content="fine")
    bad = Fact(agent_id=nous.agent_id, content="fine")
    bad.content = "\x01 control"
    with pytest.raises(InvalidInputError):
        await nous.add_many([good, bad])
    assert await _count(nous) == 0


async def test_recall_rejects_bad_queries(nous: Nous) -> None:
    with pytest.raises(InvalidInputError, match="query is empty"):
        await nous.recall("  ")
    for limit in (0, -1, 10_001):
        with pytest.raises(InvalidInputError, match="limit"):
            await nous.recall("anything", limit=limit)
    with pytest.raises(InvalidInputError, match="kinds"):
        await nous.recall("anything", kinds=["gossip"])


def test_every_error_is_a_nous_error() -> None:
    assert issubclass(InvalidInputError, NousError) and issubclass(InvalidInputError, ValueError)
    assert issubclass(NotFoundError, NousError) and issubclass(NotFoundError, LookupError)


def test_a_storage_error_is_one_line() -> None:
    """A driver's message may span lines; the error a user sees never does."""
    from nous.errors import StorageError

    message = "lost the connection: server closed the connection unexpectedly\n\tThis probably means..."
    assert str(StorageError(message)) == (
        "lost the connection: server closed the connection unexpectedly This probably means..."
    )
