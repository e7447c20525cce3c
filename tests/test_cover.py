"""Covering recall and the "In order" section: questions whose evidence is spread over sessions
(an order, a summary, everything so far) get one memory per session, in time order."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from nous import Nous
from nous.cognitive.context import Context, ContextInputs, build_context
from nous.cognitive.frames import FRAMES
from nous.errors import InvalidInputError
from nous.ingest import parse_conversation
from nous.models import RecallHit, Turn
from nous.retrieval.intent import asks_to_cover

# A user sets up four things in four sessions a week apart, with small talk between.
STEPS = [
    ("2026-03-02", "I set up the PostgreSQL database for the shop today, version 16 with pgvector."),
    ("2026-03-09", "I set up continuous integration on GitHub Actions for the shop: tests on every push."),
    ("2026-03-16", "I set up the deploy to Fly.io for the shop, with a staging app first."),
    ("2026-03-23", "I set up monitoring for the shop with Grafana dashboards and alerts."),
]
ASKED = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


def _chat() -> str:
    sessions = []
    for n, (day, step) in enumerate(STEPS):
        sessions.append(
            {
                "id": f"s{n}",
                "started_at": f"{day}T09:00:00+00:00",
                "messages": [
                    {"id": f"s{n}:0", "role": "user", "content": step},
                    {"id": f"s{n}:1", "role": "assistant", "content": "Noted, that sounds solid."},
                    {"id": f"s{n}:2", "role": "user", "content": "The weather has been lovely this week."},
                    {"id": f"s{n}:3", "role": "assistant", "content": "Glad to hear it!"},
                ],
            }
        )
    return json.dumps({"id": "setup-chat", "sessions": sessions})


async def _ingested(nous: Nous) -> None:
    await nous.ingest(parse_conversation(_chat()), user_id="dana")


def test_cover_cues_are_questions_about_many_memories() -> None:
    for question in (
        "In what order did I set things up?",
        "Can you summarise how my thesis plan changed?",
        "What have we tried so far for the flaky test?",
        "How has my training progressed over time?",
    ):
        assert asks_to_cover(question), question
    for question in (
        "How many different libraries did I mention across our conversations?",  # a count: see intent.py
        "What database did I pick?",
        "Where does Dana live?",
        "What is the painting a reminder for him to be in everything he does?",
    ):
        assert not asks_to_cover(question), question


async def test_covering_recall_gives_one_per_session_in_time_order(nous: Nous) -> None:
    await _ingested(nous)
    hits = await nous.recall(
        "In what order did I set things up for the shop?", limit=4, now=ASKED, user_id="dana"
    )
    assert [h.memory.content.removeprefix("user: ") for h in hits] == [step for _, step in STEPS]
    assert [h.signals["cover"] for h in hits] == [1, 2, 3, 4]
    assert [h.occurred_at for h in hits] == sorted(h.occurred_at for h in hits)


async def test_cover_false_keeps_the_best_first(nous: Nous) -> None:
    await _ingested(nous)
    hits = await nous.recall(
        "In what order did I set things up for the shop?", limit=4, now=ASKED, user_id="dana", cover=False
    )
    assert all("cover" not in h.signals for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # An ordinary question is not covered unless asked to be.
    plain = await nous.recall("Which cloud do I deploy the shop to?", limit=3, now=ASKED, user_id="dana")
    assert "Fly.io" in plain[0].content and all("cover" not in h.signals for h in plain)
    forced = await nous.recall(
        "Which cloud do I deploy the shop to?", limit=3, now=ASKED, user_id="dana", cover=True
    )
    assert forced and all("cover" in h.signals for h in forced)


async def test_cover_must_be_a_boolean(nous: Nous) -> None:
    with pytest.raises(InvalidInputError, match="cover"):
        await nous.recall("anything", cover="yes")  # type: ignore[arg-type]


async def test_context_lists_the_steps_in_order_with_dates(nous: Nous) -> None:
    await _ingested(nous)
    ctx = await nous.pre_turn(
        "ask", "In what order did I set things up for the shop?", user_id="dana", at=ASKED
    )
    section = ctx.section("in_order")
    assert section is not None and section.title == "In order"
    lines = [item.text for item in section.items]
    steps = [next(i for i, line in enumerate(lines) if step in line) for _, step in STEPS]
    assert steps == sorted(steps), lines  # the four set-ups, oldest first
    for (day, _), index in zip(STEPS, steps, strict=True):
        assert lines[index].startswith(f"- [{day} 09:00]"), lines[index]
    assert "## In order" in ctx.text
    assert ctx.tokens <= ctx.budget
    shown = {item.id for item in section.items}
    later = [i.id for s in ctx.sections if s.name != "in_order" for i in s.items if i.id is not None]
    assert not shown & set(later)  # what the timeline shows is not repeated below it


async def test_a_plain_question_has_no_timeline(nous: Nous) -> None:
    await _ingested(nous)
    ctx = await nous.pre_turn("ask", "Which cloud do I deploy the shop to?", user_id="dana", at=ASKED)
    assert ctx.section("in_order") is None


def _hit(text: str, days_before: int, score: float) -> RecallHit:
    turn = Turn(agent_id="a", content=f"user: {text}", occurred_at=ASKED - timedelta(days=days_before))
    return RecallHit(
        id=turn.id,
        kind=turn.kind,
        content=turn.content,
        score=score,
        occurred_at=turn.occurred_at,
        memory=turn,
    )


def _covering_context(total: int, timeline: Sequence[RecallHit], hits: Sequence[RecallHit] = ()) -> Context:
    """The context of an "in what order" question at ``total`` tokens the caller chose."""
    question = FRAMES["question"]
    return build_context(
        ContextInputs(
            session_id="s",
            frame=question,
            frame_confidence=1.0,
            query="In what order did I set things up?",
            budget=question.budget.model_copy(update={"total": total}),
            hits=hits,
            timeline=timeline,
            fill=True,
        )
    )


def test_what_the_timeline_leaves_of_its_half_goes_to_the_retrieved_turns() -> None:
    """Two short steps use little of the half of the turns' room the timeline may take; the
    rest is the retrieved turns' again, so a budget that holds more turns shows them."""
    steps = [_hit("I set up the database.", 30, 0.9), _hit("I set up the deploy.", 10, 0.8)]

    def note(n: int) -> str:  # ~120 tokens, sharing no word with another note
        return " ".join(f"w{n}x{i}" for i in range(40))

    ctx = _covering_context(4000, steps, [_hit(note(n), 40 + n, 0.5 - n / 100) for n in range(30)])
    in_order, turns = ctx.section("in_order"), ctx.section("turns")
    assert in_order is not None and turns is not None
    assert [i.id for i in in_order.items] == [s.id for s in steps]
    # the timeline used a few dozen tokens of its ~1,700; the turns filled nearly all the rest
    assert in_order.tokens < 60
    assert ctx.tokens > 0.9 * ctx.budget, (ctx.tokens, turns.budget)
    assert ctx.tokens <= ctx.budget


async def test_a_chosen_total_is_filled_past_the_score_floor(nous: Nous) -> None:
    """With the frame's own budget a memory under SCORE_FLOOR is left out; when the caller chose
    the total, the next best memories fill it, however weak."""
    from nous.cognitive.context import SCORE_FLOOR

    await _ingested(nous)
    question = "Which cloud do I deploy the shop to?"
    hits = await nous.recall(question, limit=20, now=ASKED, user_id="dana", min_score=0)
    weak = [h.id for h in hits if h.score < SCORE_FLOOR]
    assert weak  # the small talk scores under the floor
    framed = await nous.preview_turn(question, user_id="dana", at=ASKED)
    chosen = await nous.preview_turn(question, user_id="dana", at=ASKED, budget=4000)
    assert not set(weak) & set(framed.included_ids())
    assert set(weak) & set(chosen.included_ids())
    assert chosen.tokens <= 4000


def test_a_timeline_that_does_not_fit_keeps_its_first_and_last_steps() -> None:
    """Twelve steps where five fit: the section shows five spread over the whole span, the first
    and the last included, in time order, so a small budget still tells the story to its end."""

    def words(n: int) -> str:  # ~80 tokens, no word shared with another step
        return " ".join(f"s{n}w{i}" for i in range(30))

    steps = [_hit(words(n), 60 - n, 0.5) for n in range(12)]
    ctx = _covering_context(1000, steps)
    section = ctx.section("in_order")
    assert section is not None and 2 <= len(section.items) < len(steps)
    order = [s.id for s in steps]
    shown = [order.index(str(i.id)) for i in section.items]
    assert shown[0] == 0 and shown[-1] == len(steps) - 1  # the first and the last
    assert shown == sorted(shown)
    assert ctx.tokens <= ctx.budget
