"""The offline event pipeline on user–assistant chats, on both backends with the real model: facts
come only from a person's own prose (never an assistant's turn, code, a request or a question),
carry a category by content, the person's subject and the episode's frame and censors, and do
not restate what the store holds; the summary is a title and sentences, not a transcript."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from nous import Nous
from nous.cli.demo import load_sample, store_sample
from nous.events.extraction import candidate_clauses, statements_of
from nous.events.rewrite import third_person
from nous.models import Episode, Fact

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
CODE = "Here's my app so far:\n```python\nfrom flask import Flask\napp = Flask(__name__)\n```"
CHAT = [
    ("user", "I'm building a personal budget tracker in Flask, and I deploy it on Render with Gunicorn."),
    (
        "assistant",
        "Great choice! I love Flask for small apps; I recommend you pin Flask 2.3.1 in production.",
    ),
    ("user", CODE),
    (
        "assistant",
        "```python\n@app.route('/health')\ndef health():\n    return 'ok'\n```\nThat adds a route.",
    ),
    ("user", "Can you help me prepare questions for my interview with the payments team next week?"),
    ("assistant", "Sure: ask about their on-call rotation, their deploy cadence and how they review code."),
    ("user", "I've been vegetarian since I moved to Lisbon in 2016, so the team dinner needs real options."),
    ("user", "Always include version numbers when I ask about libraries."),
    ("assistant", "Noted, I will always include version numbers."),
]


def native(messages: list[tuple[str, str]], session: str = "s1", at: datetime = T0) -> str:
    return json.dumps(
        {
            "id": "chat",
            "sessions": [
                {
                    "id": session,
                    "started_at": at.isoformat(),
                    "messages": [
                        {"id": f"{session}:{i}", "role": role, "content": text}
                        for i, (role, text) in enumerate(messages)
                    ],
                }
            ],
        }
    )


async def pipeline_facts(nous: Nous) -> list[Fact]:
    report = await nous.process_events()
    assert report.dead == 0
    return [
        f for f in await nous.memories("fact", limit=500) if isinstance(f, Fact) and f.source == "extraction"
    ]


async def test_facts_come_from_the_persons_prose_only(nous: Nous) -> None:
    await nous.ingest(native(CHAT))
    facts = await pipeline_facts(nous)
    texts = " | ".join(f.content for f in facts)
    assistant_ids = {f"s1:{i}" for i, (role, _) in enumerate(CHAT) if role == "assistant"}
    assert facts and all(not set(f.provenance.turn_ids) & assistant_ids for f in facts)
    assert "```" not in texts and "Flask(__name__)" not in texts and "health" not in texts  # no code
    assert "interview" not in texts and "?" not in texts and " you" not in texts  # no request
    assert "pin Flask" not in texts and "love" not in texts  # not the assistant's words
    by_text = {f.content: f for f in facts}
    tracker = next(f for t, f in by_text.items() if "budget tracker" in t)
    assert tracker.content.startswith("The user is building a personal budget tracker in Flask")
    assert tracker.category == "technical" and tracker.subject == "the user"
    vegetarian = next(f for t, f in by_text.items() if "vegetarian" in t)
    assert vegetarian.category == "preference" and vegetarian.content.startswith(
        "The user has been vegetarian"
    )
    standing = next(f for t, f in by_text.items() if "version numbers" in t)
    assert standing.content == (
        "The user wants the assistant to always include version numbers when they ask about libraries."
    )
    assert standing.category == "preference"


async def test_a_users_facts_are_about_their_user_id(nous: Nous) -> None:
    await nous.ingest(native(CHAT), user_id="lena")
    facts = await pipeline_facts(nous)
    assert facts and {f.subject for f in facts} == {"lena"} and {f.user_id for f in facts} == {"lena"}
    assert all(f.content.startswith("Lena ") for f in facts)


async def test_a_request_or_question_yields_no_fact() -> None:
    for text in [
        "Can you help me prepare questions for my interview?",
        "can you help me prepare questions for my interview",
        "How can I apply these new skills to my job search?",
        "I need help completing the password hashing logic.",
        "I'm not sure how to proceed with the migration script.",
        "Please write a function that parses the CSV file.",
        "Write a cover letter for my application to the bakery.",
        "Here's a sample implementation to get you started.",
        "I wonder whether I should learn Rust or Go first",
    ]:
        assert candidate_clauses(text, to_assistant=True) == [], text
    # The statement before a request is kept; the request is not.
    assert candidate_clauses(
        "I'm moving to Lisbon in May, can you help me find a flat near Alfama?", to_assistant=True
    ) == [("I'm moving to Lisbon in May", False)]
    messages = [("the user", "Can you help me prepare questions for my interview?", ["m1"])]
    assert statements_of(messages, T0, people={"the user"}, to_assistant=True) == []


def test_a_clause_that_names_not_what_it_speaks_of_or_only_a_feeling_yields_no_fact() -> None:
    """Out of its message, "I did it" or "I love this" says nothing a reader can use, and "I'm so
    excited!" is about nothing named; the same words with the thing named are kept."""
    for text in [
        "Yup, we just did it on Friday!",
        "I felt liberated and empowered doing it.",
        "I also use it to speak up for the community.",
        "I love this.",
        "I'm so excited and thankful!",
        "It has really helped my performances.",
        "Something exciting happened recently.",
    ]:
        assert candidate_clauses(text, to_assistant=False) == [], text
    for text in [
        "I bought a guitar and love playing it.",
        "I went to the pride parade and loved it.",
        "I'm so happy for my sister.",
        "That picture was from a trip we took in 2022.",
        "Something is wrong with my knee.",
        "I have lots of kids' books, classics and stories from different cultures, all of that.",
    ]:
        assert candidate_clauses(text, to_assistant=False) != [], text


def test_third_person_is_grammatical() -> None:
    at = datetime(2023, 5, 8, tzinfo=UTC)
    cases = {
        ("We're moving the ledger from MongoDB to PostgreSQL.", "Maya"): (
            "Maya and the team are moving the ledger from MongoDB to PostgreSQL."
        ),
        ("I really love my new job and I miss my old team", "Caroline"): (
            "Caroline really loves their new job and misses their old team."
        ),
        (
            "I went to a support group yesterday",
            "Caroline",
        ): "Caroline went to a support group on 7 May 2023.",
        ("I try to practice every day and I do my homework", "the user"): (
            "The user tries to practice every day and does their homework."
        ),
        ("I'd been to Paris before and I'd like to go again", "Jon"): (
            "Jon had been to Paris before and would like to go again."
        ),
        # "and I" joining a clause drops the repeated subject; joining a name names the person;
        # "we" is the team, the family only when family is named, else "and others".
        ("I moved to Berlin last month and I work as a data engineer.", "Alice"): (
            "Alice moved to Berlin in April 2023 and works as a data engineer."
        ),
        ("My partner Kim and I need to call the vet tomorrow.", "Alice"): (
            "Alice's partner Kim and Alice need to call the vet on 9 May 2023."
        ),
        ("We switched our CI from Jenkins to GitHub Actions.", "Alice"): (
            "Alice and the team switched their CI from Jenkins to GitHub Actions."
        ),
        ("We're vegan, and I'm allergic to cats.", "Alice"): (
            "Alice and others are vegan, and Alice is allergic to cats."
        ),
        ("We took the kids to the zoo.", "Ben"): "Ben and family took the kids to the zoo.",
        # Relative dates against the message's time (8 May 2023 is a Monday).
        ("Ben started a new job at Spotify on Friday.", "Ben"): (
            "Ben started a new job at Spotify on 5 May 2023."
        ),
        ("I'm flying to Rome on Friday.", "Ana"): "Ana is flying to Rome on 12 May 2023.",
        ("Last Fri I took my kids to a pottery workshop.", "Mel"): (
            "On 5 May 2023 Mel took their kids to a pottery workshop."
        ),
        ("I started playing guitar about five years ago.", "Mel"): "Mel started playing guitar around 2018.",
        (
            "We never deploy on Friday afternoons.",
            "Maya",
        ): "Maya and the team never deploy on Friday afternoons.",
        ("Much has happened since we last spoke.", "Mel"): "Much has happened.",
        ("I joined a new activist group last Tues.", "Caroline"): (
            "Caroline joined a new activist group on 2 May 2023."
        ),
        ("I'm hiking with some buddies this weekend.", "Joanna"): (
            "Joanna is hiking with some buddies the weekend of 13 May 2023."
        ),
    }
    for (sentence, name), expected in cases.items():
        assert third_person(sentence, name, at) == expected


async def test_a_restatement_of_a_stored_fact_confirms_it(nous: Nous) -> None:
    stored = await nous.learn(
        "Maya is vegetarian, as are two other team members; dinners need real vegetarian options.",
        subject="Maya",
        category="preference",
    )
    chat = [
        (
            "Maya",
            "I'm vegetarian and so are two others, so dinners need real vegetarian options, not just salad.",
        ),
        ("assistant", "Noted: vegetarian options for every dinner."),
        (
            "Maya",
            "We're moving the ledger from MongoDB to PostgreSQL before the summer, it is a big project.",
        ),
    ]
    await nous.ingest(
        json.dumps(
            {
                "id": "offsite",
                "sessions": [
                    {
                        "id": "s1",
                        "started_at": T0.isoformat(),
                        "messages": [
                            {
                                "id": f"m{i}",
                                "role": "assistant" if who == "assistant" else "user",
                                "content": text,
                            }
                            | ({} if who == "assistant" else {"name": who})
                            for i, (who, text) in enumerate(chat)
                        ],
                    }
                ],
            }
        )
    )
    facts = await pipeline_facts(nous)
    assert not [f for f in facts if "vegetarian" in f.content]  # not stored a second time
    confirmed = await nous.get(stored.memory.id)
    assert isinstance(confirmed, Fact) and confirmed.confirmation_count == 1
    (ledger,) = [f for f in facts if "ledger" in f.content]
    assert ledger.content.startswith("Maya and the team are moving the ledger") and ledger.subject == "Maya"


async def test_pipeline_facts_carry_the_episodes_frame_and_censors(nous: Nous) -> None:
    censor = (await nous.add_censor("drop table", action="block", reason="no destructive SQL")).memory
    await nous.pre_turn(
        "s", "I'm getting a KeyError when I run the import script, I maintain the nightly CSV import.", at=T0
    )
    await nous.post_turn("s", "Check that the header row has a 'sku' column before importing.", at=T0)
    await nous.pre_turn(
        "s", "I moved the import job to Airflow last month and it runs every night at two.", at=T0
    )
    ended = await nous.end_session("s", at=T0 + timedelta(minutes=5))
    assert ended.episode is not None
    episode = await nous.get(ended.episode.id)
    assert isinstance(episode, Episode) and episode.encoded_frame and episode.encoded_censors == [censor.id]
    facts = await pipeline_facts(nous)
    assert facts
    for f in facts:
        assert f.encoded_frame == episode.encoded_frame and f.encoded_censors == [censor.id]
        assert f.provenance.episode_id == episode.id


SKI = [
    ("user", "I'm planning a solo ski trip to Banff in February, and I've never skied off-piste."),
    (
        "assistant",
        "For a first solo trip, rent your skis in town and book a lesson on the first day. Off-piste "
        "terrain needs a guide and an avalanche course.",
    ),
    ("user", "Can you tell me what avalanche gear I need for the backcountry?"),
    (
        "assistant",
        "You need a transceiver, a probe and a shovel, and the avalanche course teaches how to use them.",
    ),
]


async def test_the_summary_of_a_short_chat_is_a_title_and_sentences(nous: Nous) -> None:
    report = await nous.ingest(native(SKI))
    await nous.process_events()
    episode = await nous.get(report.episode_ids[0])
    assert isinstance(episode, Episode) and episode.summary and episode.title
    summary, title = episode.summary, episode.title
    assert "ski" in title.lower() or "avalanche" in title.lower()
    assert not title.lower().startswith(("user", "the user", "conversation"))
    assert not re.search(
        r"(^|[.!?]\s)(the user|user|assistant):", summary, re.IGNORECASE
    )  # no transcript line
    sentences = re.split(r"(?<=[.!?])\s+", summary)
    assert 2 <= len(sentences) <= 4 and all(s[0].isupper() and s.endswith(".") for s in sentences)
    assert summary.startswith("The user is planning a solo ski trip to Banff in February")
    assert "avalanche" in summary.lower()


async def test_restatements_of_the_demo_facts_confirm_them(nous: Nous) -> None:
    """The sample conversation restates two facts stored beside it ("moving the ledger from
    MongoDB to PostgreSQL", "never on Friday afternoons"): the pipeline confirms them, and a name
    that begins like a month ("Maya") is not taken for one."""
    await store_sample(nous, load_sample())
    await nous.process_events()
    facts = [f for f in await nous.memories("fact", limit=100) if isinstance(f, Fact)]
    extracted = [f.content for f in facts if f.source == "extraction"]
    assert not [c for c in extracted if "ledger" in c or "Friday" in c], extracted
    confirmed = {f.content for f in facts if f.confirmation_count}
    assert any("ledger" in c for c in confirmed) and any("Friday" in c for c in confirmed)
