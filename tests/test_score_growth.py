"""A memory's score must not fall because the store grew with unrelated memories (issue 29):
a fact learned directly keeps its place and stays above the default minimum score after
conversations about other things are ingested beside it, with the real model on both backends."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nous import Nous
from nous.bench.labelled import from_locomo
from nous.ingest import Conversation

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo"
NOW = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)

# A fact learned directly and a question a user would ask of it, in words the fact does not all use.
LEARNED = (
    ("The on-call rotation changes every Monday at 9am", "when does on-call rotate?"),
    ("Priya is the new head of platform engineering", "who leads platform engineering?"),
    ("The staging database lives on db-stage-3 in eu-west-1", "where is the staging database?"),
    ("Invoices over 10,000 euros need the CFO's approval", "who has to approve a large invoice?"),
)


def _opening(name: str, sessions: int) -> Conversation:
    """The first sessions of a LoCoMo conversation: two friends talking about their lives."""
    conversation = from_locomo(LOCOMO / name).conversation
    return conversation.model_copy(update={"sessions": conversation.sessions[:sessions]})


async def test_a_learned_fact_comes_first_after_conversations_about_other_things(nous: Nous) -> None:
    learned = [await nous.learn(fact, occurred_at=NOW - timedelta(days=1)) for fact, _ in LEARNED]
    before = {q: await nous.recall(q, now=NOW) for _, q in LEARNED}
    for conversation in (_opening("26.json", 4), _opening("30.json", 4)):
        report = await nous.ingest(conversation)
        assert report.turns > 50
    for memory, (_, question) in zip(learned, LEARNED, strict=True):
        assert before[question][0].id == memory.id
        hits = await nous.recall(question, now=NOW)  # the default minimum score
        assert hits, f"nothing returned for {question!r} once the store grew"
        assert hits[0].id == memory.id, (question, [h.content[:60] for h in hits[:3]])
        assert hits[0].score >= nous.settings.recall_min_score


UNRELATED = [
    "Caroline went to an LGBTQ support group yesterday and found it really powerful.",
    "Melanie painted a sunrise over the lake last weekend.",
    "The kids loved the camping trip; we roasted marshmallows every night.",
    "I'm thinking about adopting a second dog from the shelter.",
    "Our book club is reading a novel about a lighthouse keeper.",
    "The pottery class taught us to center clay on the wheel.",
    "My sister's wedding is in a vineyard outside Porto.",
    "I ran my first half marathon in two hours and five minutes.",
    "The tomato plants on the balcony finally have fruit.",
    "We watched a documentary about octopuses and their camouflage.",
    "The bakery on the corner sells sourdough only on Saturdays.",
    "Grandma's lasagna recipe uses three kinds of cheese.",
    "The violin lessons moved to Thursday afternoons.",
    "I finished a 1,000-piece puzzle of the Alps.",
    "The museum has a new exhibit on Roman glassware.",
    "We are repainting the nursery a soft green.",
    "The hiking trail to the waterfall was closed after the storm.",
    "My cousin started a podcast about board games.",
    "I learned to make dumplings from a video last night.",
    "The concert in the park was cancelled because of rain.",
]


@given(
    picked=st.lists(st.sampled_from(UNRELATED), min_size=1, max_size=8, unique=True),
    as_turns=st.booleans(),
)
@settings(
    max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_adding_unrelated_memories_never_drops_a_first_hit_below_the_default(
    nous: Nous, picked: list[str], as_turns: bool
) -> None:
    """Property: a learned fact that comes first at or above the default minimum stays first and
    above it whatever unrelated memories are added (as facts or as conversation turns). One store
    serves every example, so it grows from one example to the next."""
    learned = {}
    for fact, question in LEARNED:
        result = await nous.learn(fact, occurred_at=NOW - timedelta(days=1))
        learned[question] = result.existing_id or result.id  # a later example confirms it
        hits = await nous.recall(question, now=NOW)
        assert hits and hits[0].id == learned[question]
    if as_turns:
        messages = [{"role": "user", "content": text} for text in picked]
        await nous.ingest(json.dumps({"id": f"other-{len(picked)}", "messages": messages}))
    else:
        for text in picked:
            await nous.learn(text, occurred_at=NOW - timedelta(hours=2))
    for question, memory_id in learned.items():
        hits = await nous.recall(question, now=NOW)
        assert hits and hits[0].id == memory_id, (question, picked)
        assert hits[0].score >= nous.settings.recall_min_score
