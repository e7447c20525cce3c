"""Spec 000 Phase D: the 26 noise-reduction cases, on both backends with the real model.

1–8 episode significance, 9–15 episode dedup, 16–22 decision noise, 23–26 frame
instructions. Plus decision quality and guardrails (issue 4).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nous import Nous, Settings
from nous.brain.quality import Guardrail, is_noise_decision, quality_score
from nous.cognitive import TurnResult, get_frame
from nous.embeddings.base import EmbeddingProvider
from nous.errors import GuardrailError, InvalidInputError
from nous.heart import EpisodeAction
from nous.heart.sessions import should_create_episode
from nous.models import Decision, Episode, Reason, ReasonType, SessionState
from tests.openai_server import FakeOpenAI, openai_settings

GREETING = "Hello, what can you do?"
LONG_REPLY = "I can remember facts, decisions and procedures for you across sessions. " * 3
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _state(**counters: object) -> SessionState:
    """A session's state with the given counters (the state of turn N includes its user message)."""
    return SessionState(agent_id="a", session_id="s", started_at=T0, last_active_at=T0, **counters)  # type: ignore[arg-type]


# -- 1–8: significance ------------------------------------------------------------------------
def test_01_first_turn_always_creates() -> None:
    assert should_create_episode(None) and should_create_episode(_state())


def test_02_second_turn_short_without_tools_does_not() -> None:
    # During turn 2's pre_turn only turn 1 has completed (turn_count == 1).
    assert not should_create_episode(_state(turn_count=1, user_chars=30, assistant_chars=40))


def test_03_tools_used_creates() -> None:
    assert should_create_episode(_state(turn_count=1, tools_used=["bash"]))


def test_04_third_turn_creates() -> None:
    assert should_create_episode(_state(turn_count=2, user_chars=10, assistant_chars=10))


def test_05_long_content_creates() -> None:
    assert should_create_episode(_state(turn_count=1, user_chars=150, assistant_chars=80))


async def test_06_explicit_remember_creates(nous: Nous) -> None:
    start = await nous.pre_turn("s6", "Please REMEMBER THIS: the garage code is 4471", at=T0)
    assert start.episode_action == EpisodeAction.CREATED
    assert (await nous.session("s6")).remember
    await nous.post_turn("s6", "Saved.")
    ended = (await nous.end_session("s6")).episode
    assert ended is not None and ended.active  # a remember request is never trivial


async def test_07_trivial_episode_discarded_at_end(nous: Nous) -> None:
    start = await nous.pre_turn("s7", GREETING, at=T0)
    assert start.episode_action == EpisodeAction.CREATED and start.episode_id
    await nous.post_turn("s7", "Hi! I'm a memory agent.")
    ended = (await nous.end_session("s7")).episode
    assert ended is not None and not ended.active  # soft-deleted, restorable
    assert await nous.memories("episode") == []
    assert (await nous.restore(start.episode_id)).active


async def test_08_non_trivial_episode_kept(nous: Nous) -> None:
    start = await nous.pre_turn("s8", "Help me plan the database migration", at=T0)
    await nous.post_turn("s8", TurnResult(reply=LONG_REPLY, tools_used=["recall"]))
    assert (
        await nous.pre_turn("s8", "What about downtime?", at=T0)
    ).episode_action == EpisodeAction.ALREADY_OPEN
    await nous.post_turn("s8", "Use dual writes.")
    end = await nous.end_session("s8", reflection="Dual writes avoid downtime.")
    ended = end.episode
    assert ended is not None and ended.active and ended.id == start.episode_id
    assert ended.lessons == ["Dual writes avoid downtime."] and ended.ended_at is not None
    assert [f.memory.content for f in end.facts] == ["Dual writes avoid downtime."]  # learned as a lesson


async def test_turns_after_a_skipped_first_episode(nous: Nous) -> None:
    """With no episode open, turn 2 of a short chat opens none; turn 3 does (live hooks)."""
    await nous.pre_turn("warm", GREETING, at=T0)  # an earlier identical greeting...
    first = await nous.pre_turn("s2", GREETING, at=T0)
    assert first.episode_action == EpisodeAction.DUPLICATE  # ...so this session's first turn opens none
    await nous.post_turn("s2", "Hi!")
    second = await nous.pre_turn("s2", "ok thanks", at=T0)
    assert second.episode_action == EpisodeAction.NOT_SIGNIFICANT
    await nous.post_turn("s2", "Sure.")
    third = await nous.pre_turn("s2", "Actually, can you track my running plan?", at=T0)
    assert third.episode_action == EpisodeAction.CREATED and third.episode_id


# -- 9–15: episode dedup ------------------------------------------------------------------------
async def test_09_no_similar_episode(nous: Nous) -> None:
    await nous.pre_turn("a", "Plan the quarterly budget review", at=T0)
    assert await nous.heart.sessions.find_duplicate_episode("Fix the flaky login test", around=T0) is None


async def test_10_similar_episode_is_duplicate(nous: Nous) -> None:
    first = await nous.pre_turn("a", GREETING, at=T0)
    found = await nous.heart.sessions.find_duplicate_episode("Hello! What can you do?", around=T0)
    assert found is not None and found[0] == first.episode_id and found[1] > 0.85


async def test_11_below_threshold_is_not(nous: Nous) -> None:
    """A pair just under the threshold (the spec's 0.80): alike in words, another trip."""
    first, second = "Book flights to Lisbon for the conference", "Book flights to Porto for the conference"
    a, b = await nous.embedder.embed_many([first, second])
    assert 0.78 <= float(a @ b) < 0.85  # the pair really sits near 0.80 with the shipped model
    await nous.pre_turn("a", first, at=T0)
    assert await nous.heart.sessions.find_duplicate_episode(second, around=T0) is None


async def test_12_embedding_failure_is_not_duplicate(
    fake_openai: FakeOpenAI, tmp_path: Path, database_url: str
) -> None:
    async with Nous(openai_settings(fake_openai, tmp_path), database_url=database_url) as nous:
        await nous.pre_turn("a", GREETING, at=T0)
        fake_openai.failing = True
        assert await nous.heart.sessions.find_duplicate_episode(GREETING + " again", around=T0) is None
        start = await nous.pre_turn("b", "Hello there, what are you able to do?", at=T0)
        assert start.episode_action == EpisodeAction.CREATED  # created anyway, embedding pending


async def test_13_empty_store_is_not_duplicate(nous: Nous) -> None:
    assert await nous.heart.sessions.find_duplicate_episode(GREETING, around=T0) is None


async def test_14_duplicate_skips_creation_including_closed(nous: Nous) -> None:
    first = await nous.pre_turn("a", GREETING, at=T0)
    await nous.post_turn("a", LONG_REPLY)
    await nous.post_turn("a", "Anything else?")
    closed = (await nous.end_session("a")).episode
    assert closed is not None and closed.active and closed.ended_at is not None
    again = await nous.pre_turn("b", "Hello! What can you do?", at=T0 + timedelta(hours=3))
    assert again.episode_action == EpisodeAction.DUPLICATE and again.duplicate_of == first.episode_id
    assert again.episode_id is None and (await nous.session("b")).episode_id is None
    assert len(await nous.memories("episode")) == 1


async def test_14b_a_summarised_episode_still_deduplicates_a_repeat(nous: Nous) -> None:
    """The pipeline re-embeds a closed episode with its summary (the opening line alone is then
    about 0.70 to it); a repeat of the opening is still recognised, by the stored opening."""
    opening = "Help me plan a solo ski trip to Breckenridge in March on a budget"
    first = await nous.pre_turn("a", opening, at=T0)
    await nous.post_turn("a", "Sure: lift tickets, lodging and gear rental are the big costs." + LONG_REPLY)
    await nous.end_session("a", at=T0 + timedelta(minutes=20))
    report = await nous.process_events()
    assert report.handled >= 1
    summarised = await nous.get(first.episode_id or "")
    assert isinstance(summarised, Episode) and summarised.summary and summarised.opening == opening
    (vector,) = (await nous.store.vectors(nous.agent_id, [summarised.id])).values()
    assert float(vector @ await nous.embedder.embed_one(opening)) < 0.85  # its vector moved away
    again = await nous.pre_turn("b", opening, at=T0 + timedelta(hours=2))
    assert again.episode_action == EpisodeAction.DUPLICATE and again.duplicate_of == summarised.id


async def test_15_old_duplicate_outside_48h_not_matched(nous: Nous) -> None:
    await nous.pre_turn("a", GREETING, at=T0)
    later = await nous.pre_turn("b", GREETING, at=T0 + timedelta(hours=49))
    assert later.episode_action == EpisodeAction.CREATED


# -- 16–22: decision noise --------------------------------------------------------------------
WHY = [Reason(type=ReasonType.ANALYSIS, text="Postgres gives us transactions and pgvector")]


def test_16_short_status_without_reasons_is_noise() -> None:
    assert is_noise_decision("Git clone success", [])


def test_17_real_decision_with_alternatives_is_not() -> None:
    assert not is_noise_decision("Use PostgreSQL instead of MongoDB for the orders service", WHY)


def test_18_mostly_noise_keywords_without_reasons() -> None:
    assert is_noise_decision("Status update: build completed, tests done", [])


def test_19_noise_keywords_with_reasons_are_not_noise() -> None:
    assert not is_noise_decision("Status update: build completed, tests done", WHY)


def test_20_empty_description_is_noise() -> None:
    assert is_noise_decision("   ", [])


def test_21_normal_description_with_reasons() -> None:
    assert not is_noise_decision("Adopt trunk-based development for the mobile team", WHY)


def test_22_punctuation_attached_keywords() -> None:
    assert is_noise_decision("completed. done! finished, status.", [])


async def test_noise_decision_is_recorded_with_a_flag(nous: Nous) -> None:
    noisy = await nous.record_decision("Build completed, status: done.", confidence=0.9)
    assert any(f.startswith("possible_noise") for f in noisy.flags)
    stored = await nous.get(noisy.id)
    assert isinstance(stored, Decision) and stored.flags == noisy.flags  # recorded, not dropped


# -- 23–26: frame instructions ------------------------------------------------------------------
def test_23_decision_frame_says_what_is_a_decision() -> None:
    assert "What IS a decision" in get_frame("decision").instructions


def test_24_decision_frame_says_what_is_not() -> None:
    assert "What is NOT a decision" in get_frame("decision").instructions


def test_25_task_frame_warns_against_routine_completions() -> None:
    text = get_frame("task").instructions
    assert "Do NOT record routine task completions" in text


def test_26_debug_frame_warns_against_routine_steps() -> None:
    assert "Do NOT record routine debug steps" in get_frame("debug").instructions
    with pytest.raises(InvalidInputError, match="known: conversation"):
        get_frame("dance")


# -- quality and guardrails ---------------------------------------------------------------------
def test_quality_score_rewards_reasons_context_pattern_tags() -> None:
    bare = quality_score(reasons=[], context=None, pattern=None, tags=[])
    rich = quality_score(
        reasons=[*WHY, Reason(type=ReasonType.EMPIRICAL, text="the pilot ran for a month")],
        context="orders service rewrite",
        pattern="prefer boring tech",
        tags=["db"],
    )
    assert bare == 0.0 and rich > 0.9


async def test_guardrails_warn_and_block(nous: Nous) -> None:
    risky = await nous.record_decision(
        "Move all customer data to the new cluster", stakes="high", confidence=0.3
    )
    assert any("high-stakes-low-confidence" in f for f in risky.flags)
    assert any("no-reasons" in f for f in risky.flags)
    before = len(await nous.memories("decision"))
    with pytest.raises(GuardrailError, match="critical-needs-reasons"):
        await nous.record_decision("Drop the legacy billing database", stakes="critical", confidence=0.9)
    assert len(await nous.memories("decision")) == before  # nothing half-written
    good = await nous.record_decision(
        "Drop the legacy billing database",
        stakes="critical",
        confidence=0.9,
        reasons=WHY,
        context="migration done",
    )
    assert good.flags == [] and good.quality is not None and good.quality > 0.4


async def test_guardrails_are_configurable(
    tmp_path: Path, database_url: str, provider: EmbeddingProvider
) -> None:
    rails = [Guardrail(name="no-low-confidence", action="block", min_confidence=0.2, message="too unsure")]
    settings = Settings(
        home=tmp_path, events_worker="off", decision_guardrails=[r.model_dump() for r in rails]
    )
    async with Nous(settings, database_url=database_url, embedding_provider=provider) as nous:
        with pytest.raises(GuardrailError, match="too unsure"):
            await nous.record_decision("Pick the vendor by coin flip", confidence=0.1)
        ok = await nous.record_decision("Pick the cheaper vendor for now", confidence=0.6)
        assert ok.flags == []  # the defaults are replaced
    bad = Settings(
        home=tmp_path,
        events_worker="off",
        decision_guardrails=[{"name": "x", "action": "explode", "message": "m"}],
    )
    with pytest.raises(InvalidInputError, match="NOUS_DECISION_GUARDRAILS"):
        async with Nous(bad, database_url=database_url, embedding_provider=provider):
            pass
