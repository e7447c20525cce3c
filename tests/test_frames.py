"""Frames that fit and contexts that serve the asker, on both backends with the real model:
initiation only opens a session of an agent without identity, "why did we …" is a decision,
"remember that …" is not creative, the labelled messages keep their accuracy (``nous bench
frames``), the current question never comes back as a memory, and a user's "what do you know
about me?" shows the facts whose subject is that user and not someone else's conversation."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nous import Nous
from nous.bench.frames import load_frames, run_frames
from nous.embeddings.base import EmbeddingProvider
from nous.ingest import Conversation, ConversationMessage, ConversationSession
from tests.cli_support import ok

T0 = datetime(2026, 2, 28, 12, 0, tzinfo=UTC)
DATA = Path(__file__).parent / "data"


async def test_initiation_only_opens_a_session_of_an_agent_without_identity(nous: Nous) -> None:
    first = await nous.pre_turn("s", "Hi there!", at=T0)
    assert first.frame == "initiation"
    await nous.post_turn("s", "Hello! What would you like to call me?", at=T0 + timedelta(seconds=20))
    second = await nous.pre_turn(
        "s",
        "I'm Alice, I moved to Berlin last month and I work as a data engineer.",
        at=T0 + timedelta(minutes=1),
    )
    assert second.turn == 2 and second.frame == "conversation"
    await nous.post_turn("s", "Nice to meet you, Alice.", at=T0 + timedelta(minutes=2))
    third = await nous.pre_turn("s", "Hey, nice to meet you too.", at=T0 + timedelta(minutes=3))
    assert third.greeting and third.frame == "conversation"
    # a second message before any reply is not the session's first either
    await nous.pre_turn("t", "Hello!", at=T0)
    assert (
        await nous.pre_turn("t", "Hi again, are you there?", at=T0 + timedelta(seconds=5))
    ).frame != "initiation"

    # initiation retrieves nothing: a first message asking for something keeps its memories
    for session, text in (
        ("w", "Walk me through swapping out the Adyen credentials."),
        ("x", "There's a famous crab restaurant near Tsukiji, can you add it for our second dinner?"),
    ):
        assert (await nous.pre_turn(session, text, at=T0)).frame != "initiation"
    assert (await nous.pre_turn("y", "I'm Alice and I work as a data engineer.", at=T0)).frame == "initiation"

    await nous.set_identity("character", "Nia, a patient research assistant.")
    for session, text in (("u", "Hi there!"), ("v", "I'm Bob and I teach maths in Leeds.")):
        assert (await nous.pre_turn(session, text, at=T0)).frame == "conversation"


@pytest.mark.parametrize(
    ("text", "frame"),
    [
        ("Why did we move the ledger to Postgres?", "decision"),
        ("Why did we pick Postgres?", "decision"),
        ("What made us decide on quarterly releases?", "decision"),
        ("Please remember that my cat is called Quillon.", "conversation"),
        ("Can you remember that my flight number is BA117?", "conversation"),
        ("Write a limerick about our flaky test suite.", "creative"),
        ("How often should I water the tomatoes?", "question"),
        ("Why did Gina decide to start her own clothing store?", "question"),
    ],
)
async def test_frames_that_fit(nous: Nous, text: str, frame: str) -> None:
    await nous.set_identity("character", "A careful, friendly assistant.")
    assert (await nous.pre_turn("s", text, at=T0)).frame == frame


async def test_frame_accuracy_on_the_labelled_messages(provider: EmbeddingProvider) -> None:
    """Floors well below what was measured (docs/cognitive.md: 0.960 on the set, 0.955 held out by
    5-fold, 0.846 on the messages written after tuning): a change that loses them regresses."""
    result = await run_frames(load_frames(DATA / "frames.jsonl"), provider)
    assert result["messages"] >= 150 and set(result["per_frame"]) == {
        "conversation",
        "question",
        "task",
        "decision",
        "creative",
        "debug",
        "initiation",
    }
    assert result["accuracy"] >= 0.88 and result["k_fold_accuracy"] >= 0.85
    assert all(f["recall"] >= 0.7 for f in result["per_frame"].values())
    assert result["per_frame"]["initiation"] == {"messages": 14, "recall": 1.0, "precision": 1.0}
    held_out = await run_frames(load_frames(DATA / "frames_holdout.jsonl"), provider, folds=2)
    assert held_out["accuracy"] >= 0.7


def test_bench_frames_prints_figures(cli: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "frames.json"
    result = ok(cli, "bench", "frames", "--data", str(DATA / "frames_holdout.jsonl"), "--json", str(out))
    assert "embedding the 65 labelled messages" in result.stderr
    assert "accuracy" in result.stdout and "held-out" in result.stdout
    figures = json.loads(out.read_text())
    assert figures["messages"] == 65 and len(figures["k_fold"]) == 5


async def test_the_current_question_never_comes_back_as_a_memory(nous: Nous) -> None:
    await nous.set_identity("character", "A careful, friendly assistant.")
    question = "What did the landlord say about the deposit?"
    await nous.pre_turn("earlier", question, user_id="alice", at=T0)
    await nous.post_turn(
        "earlier", "He said the deposit comes back within 30 days.", at=T0 + timedelta(seconds=30)
    )
    await nous.end_session("earlier", at=T0 + timedelta(minutes=1))
    await nous.pre_turn("other", "what did the landlord say about the deposit", user_id="alice", at=T0)
    await nous.post_turn("other", "That it comes back in a month.", at=T0 + timedelta(seconds=30))
    later = T0 + timedelta(days=3)
    for ctx in (
        await nous.preview_turn(question, user_id="alice", at=later),
        await nous.pre_turn("now", question, user_id="alice", at=later),
    ):
        turns = ctx.section("turns")
        assert turns is not None
        shown = [i.text for i in turns.items]
        assert not any("landlord say about the deposit" in t.lower() for t in shown), shown
        assert any("30 days" in t for t in shown)  # the answer stays
        # nowhere else either: the unsummarised episode of the second asking is titled by it
        assert "landlord say about the deposit" not in ctx.text.lower(), ctx.text
        assert any(d.reason == "question" for section in ctx.sections for d in section.dropped)


async def test_what_do_you_know_about_me_shows_the_facts_about_the_user(nous: Nous) -> None:
    await nous.set_identity("character", "A careful, friendly assistant.")
    await nous.learn("Alice moved to Berlin in January and works as a data engineer.", subject="Alice")
    await nous.learn("Bob prefers window seats on long flights.", subject="Bob", category="preference")
    await nous.learn("The staging database lives on db-stage-2.", subject="staging database")
    await nous.learn(
        "The user is training for the Berlin marathon in September.", subject="the user", user_id="alice"
    )
    await nous.learn("The user prefers aisle seats on every flight.", subject="the user", user_id="bob")
    someone_else = Conversation(
        id="chat",
        source_format="test",
        sessions=[
            ConversationSession(
                id="s1",
                started_at=T0 - timedelta(days=30),
                messages=[
                    ConversationMessage(
                        id=str(i),
                        role="user" if i % 2 == 0 else "assistant",
                        content=text,
                        occurred_at=T0 - timedelta(days=30, minutes=-i),
                    )
                    for i, text in enumerate(
                        [
                            "Let me know what you think about my user registration form.",
                            "Sure, tell me about the fields it has and I will review them.",
                            "It has a username, an email and a password with a strength meter.",
                            "Looks good; hash the password with Argon2 before you store it.",
                        ]
                    )
                ],
            )
        ],
    )
    await nous.ingest(someone_else)
    ctx = await nous.preview_turn("What do you know about me?", user_id="alice", at=T0)
    profile = ctx.section("user_profile")
    assert profile is not None
    assert [i.text for i in profile.items] == [
        "- The user is training for the Berlin marathon in September.",
        "- Alice moved to Berlin in January and works as a data engineer.",
    ]
    assert "Bob" not in ctx.text and "registration" not in ctx.text and "Argon2" not in ctx.text
    # the same chat is still shown when it answers the question
    answer = await nous.preview_turn(
        "How should I hash passwords for the registration form?", user_id="alice", at=T0
    )
    assert "Argon2" in answer.text
    # the user's id in another case: the same fact
    upper = await nous.preview_turn("What do you know about me?", user_id="ALICE", at=T0)
    assert (
        "Alice moved to Berlin" in upper.text and "marathon" not in upper.text
    )  # "the user" is alice's only
