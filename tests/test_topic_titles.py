"""Conversation titles read as a topic: no chat slang, no phrasal verb, short acronyms kept."""

from __future__ import annotations

import pytest

from nous.language.topics import conversation_title


@pytest.mark.parametrize(
    ("messages", "title"),
    [
        (  # slang ("gotta", "haha", "yup", "lol") and a phrasal verb ("figure out") are no topic
            [
                ("Jon", "Gotta figure out the biz and store."),
                ("Gina", "Haha yup. Gotta figure out the biz and store for sure."),
                ("Jon", "Lol, the biz is growing."),
            ],
            "Biz and store",
        ),
        (  # a two-letter acronym names the topic
            [
                ("user", "How do I set up the CI pipeline? The CI pipeline keeps failing."),
                ("assistant", "Set up a cache for the CI pipeline."),
            ],
            "CI pipeline",
        ),
        (
            [
                ("user", "I need to sort out the backup script, it backs up the wrong folder"),
                ("assistant", "Sort out the paths in the backup script first."),
            ],
            "Backup script",
        ),
        (  # a month or a weekday is a date, not a topic
            [
                ("Jon", "Jonas has his piano recital in April. April is busy."),
                ("Gina", "Good luck with the piano recital in April! Is it on a Friday?"),
                ("Jon", "The recital is on a Friday in April."),
            ],
            "Piano recital",
        ),
        (  # a march is a topic
            [
                ("Jon", "The climate march is on Saturday. I made a sign for the march."),
                ("Gina", "See you at the climate march on Saturday!"),
            ],
            "Climate march",
        ),
    ],
)
def test_a_title_names_the_topic(messages: list[tuple[str, str]], title: str) -> None:
    assert conversation_title(messages, people=["Jon", "Gina"]) == title
