"""Two-step questions: a question that describes someone instead of naming them ("the friend who
went to the concert") is answered from two facts, the one that names them and the one about them."""

from __future__ import annotations

import pytest

from nous import Nous
from nous.language.names import proper_names
from nous.retrieval.intent import describes_unnamed, second_step

FACTS = [
    "Priya went to the Radiohead concert at the Forum last Friday.",
    "Priya had dinner at Ippudo, a ramen place on Hollis Street, last Friday night.",
    "Marco is training for the Berlin marathon in September.",
    "Marco ate tacos at El Farolito after his long run.",
    "Jun went to a jazz gig at the Blue Note in March.",
    "The team lunch was at a sushi restaurant near the office.",
    "Dana bought tickets for the opera next month.",
    "Lena had brunch at a French bistro on Sunday.",
    "The concert venue changed its parking rules this year.",
]
ASKED = "Where did the friend who went to the concert eat afterwards?"


def test_questions_that_describe_instead_of_naming() -> None:
    for text in (
        ASKED,
        "What is the name of the pet that John had to say goodbye to?",
        "Did someone who works at the bakery come to the party?",
        "Which restaurant that we tried in May had the best noodles?",
    ):
        assert describes_unnamed(text), text
    for text in (
        "Where did Priya eat after the concert?",
        "Who went to the concert?",
        "What did I say about the deploy?",
        "in what order did I set things up?",
    ):
        assert not describes_unnamed(text), text


def test_the_second_step_asks_after_the_names_without_what_the_first_answered() -> None:
    asked = second_step(ASKED, FACTS[0], ["Priya"])
    assert asked.split()[:1] == ["Priya"]
    words = set(asked.lower().split())
    assert {"where", "eat", "afterwards"} <= words and not words & {"went", "concert"}


def test_proper_names_are_not_common_words_calendar_words_or_already_asked() -> None:
    assert proper_names(FACTS[0], besides=ASKED) == ["Priya", "Radiohead"]  # the question said neither
    assert proper_names(FACTS[0], besides="the Radiohead concert") == ["Priya"]
    assert proper_names("The Forum opens on Monday in March. Thanks, Jon!") == ["Jon"]


async def test_a_two_step_question_is_answered_from_two_facts(nous: Nous) -> None:
    ids = {f: (await nous.learn(f)).memory.id for f in FACTS}
    hits = await nous.recall(ASKED, limit=4)
    assert hits[0].id == ids[FACTS[0]]  # the best match for the question stays first
    assert hits[1].id == ids[FACTS[1]]  # the fact about who that is, found by the second step
    assert hits[1].signals.get("second_step") == 1.0
    assert "second_step" not in hits[0].signals


async def test_a_question_that_names_its_subject_takes_one_step(nous: Nous) -> None:
    for f in FACTS:
        await nous.learn(f)
    hits = await nous.recall("Where did Priya eat on Friday?", limit=4)
    assert hits and all("second_step" not in h.signals for h in hits)
    assert "Ippudo" in hits[0].content


@pytest.mark.parametrize("limit", [1, 2])
async def test_two_steps_keep_the_limit(nous: Nous, limit: int) -> None:
    for f in FACTS:
        await nous.learn(f)
    assert len(await nous.recall(ASKED, limit=limit)) == limit
