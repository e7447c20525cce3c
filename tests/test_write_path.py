"""Search-before-store (spec 001 test tables), supersession and the lifecycle, on both backends
with the real embedding model."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from nous import InvalidInputError, Nous
from nous._time import utcnow
from nous.memory.conflict import ConflictKind, find_conflict
from nous.memory.dedup import Recommendation, Tier
from nous.models import EdgeRelation, Fact, HistoryAction, LifecycleState, WriteStatus
from tests.openai_server import FakeOpenAI, openai_settings

RULE = "Never trade during low-volume weekends."
RULE_PARAPHRASE = "Don't place trades on weekends when volume is low."
RULE_RELATED = "Weekend trading volume is usually thin on crypto exchanges."
UNRELATED = "My daughter's piano recital is on Friday evening."


async def _facts(nous: Nous) -> list[Fact]:
    return [f for f in await nous.memories("fact") if isinstance(f, Fact)]


# -- check_similar (server-side and client tables) -------------------------------------------
async def test_check_similar_finds_exact_duplicate(nous: Nous) -> None:
    stored = await nous.learn(RULE)
    check = await nous.check_similar(RULE, "fact")
    assert check.recommendation == Recommendation.DUPLICATE_FOUND
    top = check.matches[0]
    assert (top.id, top.tier, top.lifecycle) == (stored.id, Tier.DUPLICATE, LifecycleState.ACTIVE)
    assert top.similarity == pytest.approx(1.0, abs=1e-4) and top.content == RULE


async def test_check_similar_near_duplicate_paraphrase(nous: Nous) -> None:
    stored = await nous.learn(RULE)
    check = await nous.check_similar(RULE_PARAPHRASE, "fact")
    assert check.recommendation == Recommendation.DUPLICATE_FOUND
    assert check.duplicate is not None and check.duplicate.id == stored.id


async def test_a_progress_report_on_one_thing_is_kept_beside_the_first(nous: Nous) -> None:
    """Two reports share the thing's words ("the checkout bug", "the payment service") and differ in
    what happened: the second is stored and connected, not swallowed; a rewording whose other words
    mean the same is still a duplicate (docs/dedup.md, "What the rest of the words say")."""
    first = await nous.learn("We traced the checkout bug to a race condition in the payment service.")
    later = await nous.learn("The checkout bug fix for the payment service is deployed to staging.")
    assert later.status == WriteStatus.CONNECTED and first.id in later.related_ids
    assert len(await _facts(nous)) == 2

    advice = await nous.learn("Doctor told me to cut back on salt.")
    again = await nous.learn("My doctor advised me to reduce my sodium intake.")
    assert again.status == WriteStatus.DUPLICATE and again.existing_id == advice.id


async def test_check_similar_connect_tier_for_related(nous: Nous) -> None:
    stored = await nous.learn(RULE)
    check = await nous.check_similar(RULE_RELATED, "fact")
    assert check.recommendation == Recommendation.SIMILAR_FOUND
    assert [(m.id, m.tier) for m in check.matches] == [(stored.id, Tier.CONNECT)]
    assert 0.5 <= check.matches[0].similarity < 1.0


async def test_check_similar_unique_has_no_matches(nous: Nous) -> None:
    await nous.learn(RULE)
    check = await nous.check_similar(UNRELATED, "fact")
    assert check.recommendation == Recommendation.UNIQUE and check.matches == []


async def test_check_similar_is_kind_isolated(nous: Nous) -> None:
    await nous.add_procedure("Weekend rule", RULE)
    check = await nous.check_similar(RULE, "fact")
    assert check.recommendation == Recommendation.UNIQUE


async def test_check_similar_rejects_bad_input(nous: Nous) -> None:
    with pytest.raises(InvalidInputError):
        await nous.check_similar("   ", "fact")
    with pytest.raises(InvalidInputError):
        await nous.check_similar(RULE, "lesson-ish")


# -- full store flow ---------------------------------------------------------------------------
async def test_duplicate_is_blocked_and_reinforces_existing(nous: Nous) -> None:
    first = await nous.learn(RULE)
    second = await nous.learn(RULE_PARAPHRASE)
    assert second.status == WriteStatus.DUPLICATE and second.existing_id == first.id
    assert second.similarity is not None and second.similarity >= 0.62
    assert [f.id for f in await _facts(nous)] == [first.id]
    existing = await nous.get(first.id)
    assert isinstance(existing, Fact) and existing.confirmation_count == 1
    assert existing.review_count == 1 and existing.stability > first.memory.stability
    trail = await nous.history(first.id)
    assert any((e.new_value or {}).get("duplicate_content") == RULE_PARAPHRASE for e in trail)
    third = await nous.learn(RULE)  # a duplicate of a duplicate is blocked too
    assert third.status == WriteStatus.DUPLICATE and third.existing_id == first.id
    assert len(await _facts(nous)) == 1


async def test_unique_is_created_without_edges(nous: Nous) -> None:
    await nous.learn(RULE)
    result = await nous.learn(UNRELATED)
    assert result.status == WriteStatus.CREATED and result.related_ids == []
    assert await nous.store.edges(nous.agent_id, [result.id]) == []


async def test_connect_tier_links_once(nous: Nous) -> None:
    first = await nous.learn(RULE)
    result = await nous.learn(RULE_RELATED)
    assert result.status == WriteStatus.CONNECTED and result.related_ids == [first.id]
    edges = await nous.store.edges(nous.agent_id, [result.id])
    assert [(e.source_id, e.target_id, e.relation) for e in edges] == [
        (result.id, first.id, EdgeRelation.RELATES_TO)
    ]
    # Linking the same pair again, either way round, does not add a second edge.
    assert await nous.link(first.id, result.id, "relates_to") is False
    assert len(await nous.store.edges(nous.agent_id, [result.id])) == 1


async def test_embedding_outage_stores_without_check(
    fake_openai: FakeOpenAI, tmp_path: Path, database_url: str
) -> None:
    async with Nous(openai_settings(fake_openai, tmp_path), database_url=database_url) as nous:
        await nous.learn(RULE)
        fake_openai.failing = True
        before = len(fake_openai.requests)
        result = await nous.learn(RULE_PARAPHRASE)  # a duplicate, but the check cannot run
        assert len(fake_openai.requests) - before == 1  # one failed call, not a retry per step
        assert result.status == WriteStatus.CREATED and result.warnings
        assert len(await _facts(nous)) == 2 and (await nous.stats()).missing_embeddings == 1
        fake_openai.failing = False
        report = await nous.maintain()
        assert report.embedded == 1 and (await nous.stats()).missing_embeddings == 0


async def test_dedup_can_be_skipped_and_is_per_kind(nous: Nous) -> None:
    await nous.learn(RULE)
    assert (await nous.learn(RULE, dedup=False)).status == WriteStatus.CREATED
    first = await nous.add_censor("rm -rf /", reason="destroys the host")
    again = await nous.add_censor("rm -rf /", reason="destroys the host")
    assert again.status == WriteStatus.DUPLICATE and again.existing_id == first.id


# -- change over time ------------------------------------------------------------------------
async def test_update_supersedes_old_fact(nous: Nous) -> None:
    old = await nous.learn("The API rate limit is 100 requests per minute.", subject="api rate limit")
    new = await nous.learn("The API rate limit is 1,000 requests per minute.", subject="api rate limit")
    assert new.status == WriteStatus.SUPERSEDED and new.superseded_id == old.id
    before = await nous.get(old.id)
    assert before.superseded_by == new.id and before.valid_to is not None
    assert (await nous.get(new.id)).valid_from == before.valid_to
    hits = await nous.recall("what is the API rate limit?", limit=5)
    assert new.id in [h.id for h in hits] and old.id not in [h.id for h in hits]
    chain = await nous.recall("what is the API rate limit?", limit=5, include_superseded=True)
    assert {new.id, old.id} <= {h.id for h in chain}
    actions = [e.action for e in await nous.history(old.id)]
    assert HistoryAction.SUPERSEDE in actions
    edges = await nous.store.edges(nous.agent_id, [new.id])
    assert (new.id, old.id, EdgeRelation.SUPERSEDES) in {
        (e.source_id, e.target_id, e.relation) for e in edges
    }


async def test_change_marker_supersedes_without_subject(nous: Nous) -> None:
    old = await nous.learn("My favourite colour is green.")
    new = await nous.learn("My favourite colour used to be green, but now it's blue.")
    assert new.status == WriteStatus.SUPERSEDED and new.superseded_id == old.id


async def test_contradiction_is_flagged_not_dropped(nous: Nous) -> None:
    old = await nous.learn("I need a visa to visit India.")
    new = await nous.learn("I don't need a visa to visit India.")
    assert new.status == WriteStatus.CONNECTED and new.related_ids == [old.id]
    assert new.warnings and "contradiction" in new.warnings[0]
    assert len(await _facts(nous)) == 2
    edges = await nous.store.edges(nous.agent_id, [new.id])
    assert [e.relation for e in edges] == [EdgeRelation.CONTRADICTS]


async def test_explicit_supersedes(nous: Nous) -> None:
    old = await nous.learn("Standup is at 9:30.")
    new = await nous.learn("We dropped the daily standup meeting.", supersedes=old.id)
    assert new.status == WriteStatus.SUPERSEDED and new.superseded_id == old.id


def test_conflict_checks_catch_edits_cosine_cannot() -> None:
    assert find_conflict("The trip is 7 days.", "The trip is 10 days.").kind == ConflictKind.NUMBER  # type: ignore[union-attr]
    assert find_conflict("I love dogs.", "I don't love dogs.").kind == ConflictKind.NEGATION  # type: ignore[union-attr]
    assert find_conflict("I always stretch first.", "I rarely stretch first.").kind == ConflictKind.QUANTIFIER  # type: ignore[union-attr]
    swap = find_conflict("We migrate from MongoDB to Postgres.", "We migrate from Postgres to MongoDB.")
    assert swap is not None and swap.kind == ConflictKind.ORDER
    assert find_conflict("I prefer aisle seats.", "I prefer window seats.") is not None
    assert find_conflict("Flight at 7:05 am", "Our flight leaves at 07:05 am") is None
    assert find_conflict("My favourite colour is green", "my favorite color is green") is None
    assert find_conflict("Jonas is married to Lena.", "Lena is Jonas's wife.") is None


# -- lifecycle -------------------------------------------------------------------------------
async def test_decay_moves_states_and_recall_revives(nous: Nous) -> None:
    fact = (await nous.learn("The office wifi password rotates every quarter.")).memory
    censor = (await nous.add_censor("DROP TABLE", reason="never in production")).memory
    assert fact.stability == 30.0 and censor.stability > 10_000
    report = await nous.maintain(now=utcnow() + timedelta(days=150))  # R = 0.64
    assert report.lifecycle_changes == {"weak": 1}
    assert (await nous.get(fact.id)).lifecycle == LifecycleState.WEAK
    await nous.maintain(now=utcnow() + timedelta(days=2000))  # R = 0.12
    assert (await nous.get(fact.id)).lifecycle == LifecycleState.ARCHIVED
    assert (await nous.get(censor.id)).lifecycle == LifecycleState.ACTIVE  # guardrails never fade
    trail = [e for e in await nous.history(fact.id) if e.action == HistoryAction.LIFECYCLE]
    assert [e.new_value["lifecycle"] for e in trail] == ["weak", "archived"]  # type: ignore[index]
    hits = await nous.recall("how often does the wifi password change?", limit=3)
    assert hits[0].id == fact.id and hits[0].signals["lifecycle"] == 0.5  # archived ranks lower
    await nous.repo.flush_reviews()
    revived = await nous.get(fact.id)
    assert revived.lifecycle == LifecycleState.ACTIVE and revived.review_count == 1
    assert revived.stability > fact.stability


async def test_dormant_memory_ranks_below_active_equal(nous: Nous) -> None:
    a = await nous.learn("Project Falcon uses Redis for its job queue.", dedup=False)
    b = await nous.learn("Project Falcon uses Redis for its job queue.", dedup=False)
    await nous.update(a.id, lifecycle="dormant")
    hits = await nous.recall("Falcon job queue", limit=2, reinforce=False)
    assert hits[0].id == b.id
    assert (await nous.get(a.id)).lifecycle == LifecycleState.DORMANT  # no reinforcement


async def test_short_texts_and_function_word_edits(nous: Nous) -> None:
    """ "second fact" after "first fact ever" is a new memory (it was once merged as a duplicate at
    cosine 0.72); a preposition swap is the same rule, confirmed rather than flagged."""
    first = await nous.learn("first fact ever")
    second = await nous.learn("second fact")
    assert second.status != WriteStatus.DUPLICATE and second.memory.id != first.memory.id
    rule = await nous.learn("Never trade during low-volume weekends.")
    again = await nous.learn("Never trade on low-volume weekends.")
    assert again.status == WriteStatus.DUPLICATE and again.existing_id == rule.memory.id
    assert (
        find_conflict("Never trade on low-volume weekends.", "Never trade during low-volume weekends.")
        is None
    )
    assert find_conflict("Run migrations after deploying.", "Run migrations before deploying.") is not None


async def test_a_changed_detail_of_an_event_is_another_event(nous: Nous) -> None:
    """Events in someone's life are additive: a second event never supersedes the first, and two
    events of one person that share only a name and a topic are not duplicates."""
    camping = await nous.learn(
        "Melanie took her kids camping in the mountains.", subject="Melanie", category="event"
    )
    pottery = await nous.learn(
        "Melanie took her kids to a pottery class.", subject="Melanie", category="event"
    )
    assert pottery.status not in (WriteStatus.DUPLICATE, WriteStatus.SUPERSEDED)
    lucky = await nous.learn(
        "Melanie is lucky to have her husband and kids.", subject="Melanie", category="event"
    )
    assert lucky.status != WriteStatus.DUPLICATE
    current = {f.id for f in await nous.memories("fact")}
    assert {camping.memory.id, pottery.memory.id, lucky.memory.id} <= current


async def test_a_stated_change_replaces_a_same_subject_fact_of_the_same_matter_only(nous: Nous) -> None:
    """With its subject named, "was pushed back" replaces the deadline however differently it is
    worded (cosine 0.32); "moved to Berlin" does not replace an unrelated fact about Alice."""
    due = await nous.learn(
        "Assignment 3 (hash tables) is due on Friday 27 February at 23:59.", subject="A3 deadline"
    )
    moved = await nous.learn(
        "The A3 deadline was pushed back to Monday 2 March at 23:59 after the autograder outage.",
        subject="A3 deadline",
    )
    assert moved.status == WriteStatus.SUPERSEDED and moved.superseded_id == due.id
    tea = await nous.learn("Alice prefers green tea in the morning", subject="Alice")
    berlin = await nous.learn("Alice moved to Berlin last year", subject="Alice")
    assert berlin.superseded_id is None and (await nous.get(tea.id)).superseded_by is None


async def test_a_number_on_one_side_only_connects_without_a_warning(nous: Nous) -> None:
    """One statement gives a detail (a number) the other lacks: both kept, linked, no
    contradiction warning, and with one subject no replacement that drops the detail."""
    full = await nous.learn("Maya is vegetarian, as are two other team members.", subject="Maya")
    short = await nous.learn("Maya is vegetarian.", subject="Maya")
    assert short.status == WriteStatus.CONNECTED and full.id in short.related_ids
    assert short.warnings == [] and short.superseded_id is None
    check = await nous.check_similar("Maya is vegetarian.", "fact", subject="Maya")
    (match,) = [m for m in check.matches if m.id == full.id]
    assert match.tier == Tier.CONNECT and match.conflict == "number_on_one_side: 2"
