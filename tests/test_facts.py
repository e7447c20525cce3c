"""Facts: storing, reading, listing, scoping."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nous import Fact, NotFoundError, Nous, WriteStatus
from nous.models import FactCategory


async def test_learn_stores_a_fact_with_provenance_and_scope(nous: Nous) -> None:
    result = await nous.learn(
        "  The user prefers dark mode in every editor  ",
        subject="user",
        category="Preference",
        tags=["ui", "ui", " editor "],
        session_id="s1",
        user_id="u1",
        confidence=0.9,
        source="chat",
    )
    assert result.status is WriteStatus.CREATED
    fact = await nous.get(result.id)
    assert isinstance(fact, Fact)
    assert fact.content == "The user prefers dark mode in every editor"
    assert fact.category == FactCategory.PREFERENCE.value
    assert fact.tags == ["ui", "editor"]
    assert (fact.agent_id, fact.user_id, fact.session_id) == ("test-agent", "u1", "s1")
    assert fact.confidence == 0.9
    assert fact.provenance.source == "chat"
    assert fact.provenance.session_id == "s1"
    assert fact.active and fact.superseded_by is None
    assert fact.created_at.tzinfo is not None


async def test_get_by_unique_prefix(nous: Nous) -> None:
    result = await nous.learn("Deployments run on Tuesdays")
    assert (await nous.get(result.id[:8])).id == result.id


async def test_facts_are_scoped_per_agent(nous: Nous) -> None:
    mine = await nous.learn("Agent A's secret: the vault code is 1234")
    other = nous.for_agent("other-agent")
    with pytest.raises(NotFoundError):
        await other.get(mine.id)
    assert await other.memories("fact") == []
    assert [h.id for h in await other.recall("vault code")] == []
    await other.learn("Agent B knows about gardening")
    assert [f.content for f in await nous.memories("fact")] == ["Agent A's secret: the vault code is 1234"]


async def test_list_orders_newest_first_and_pages(nous: Nous) -> None:
    for day in (1, 3, 2):
        await nous.learn(f"Event on day {day}", occurred_at=datetime(2026, 1, day, tzinfo=UTC))
    listed = await nous.memories("fact")
    assert [f.content for f in listed] == ["Event on day 3", "Event on day 2", "Event on day 1"]
    assert [f.content for f in await nous.memories("fact", limit=1, offset=1)] == ["Event on day 2"]


async def test_confirm_counts_and_audits(nous: Nous) -> None:
    result = await nous.learn("Priya uses a wheelchair")
    confirmed = await nous.heart.facts.confirm(result.id)
    assert confirmed.confirmation_count == 1
    actions = [h.action.value for h in await nous.history(result.id)]
    assert actions == ["create", "confirm"]
