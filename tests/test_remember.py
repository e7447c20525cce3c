"""Facts from every conversation that states something lasting, on both backends with the real
model: what a user asks to be remembered is a fact in the turn it is said (``post_turn``, the REST
reply, MCP's ``reply``), a short chat of personal statements is never discarded as trivial and
yields its facts, a discarded episode says why, and a one-character fact is refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mcp import Client
from typer.testing import CliRunner

from nous import Nous, Settings
from nous.cli.app import app as cli_app
from nous.embeddings.base import EmbeddingProvider
from nous.errors import InvalidInputError
from nous.events.extraction import personal_statement, remembered
from nous.models import Episode, Fact
from nous.server.mcp import create_mcp_server
from tests.test_extraction import native, pipeline_facts
from tests.test_server import LiveServer, _client

T0 = datetime(2026, 3, 5, 9, 0, tzinfo=UTC)  # a Thursday
SHORT_CHAT = [
    ("user", "Hi! I live in Lyon."),
    ("assistant", "Nice to meet you! How can I help?"),
    ("user", "My favourite programming language is Rust."),
]


async def _facts(nous: Nous, **kw: object) -> list[Fact]:
    return [f for f in await nous.memories("fact", limit=100, **kw) if isinstance(f, Fact)]  # type: ignore[arg-type]


def test_what_asks_to_be_remembered() -> None:
    assert remembered("Remember that I hate long meetings") == ["I hate long meetings"]
    assert remembered("Please remember that my cat is called Quillon.") == ["My cat is called Quillon"]
    assert remembered("Don't forget that we deploy on Tuesdays.") == ["We deploy on Tuesdays"]
    assert remembered("Note that my sister lives in Oslo.") == ["My sister lives in Oslo"]
    assert remembered("keep in mind that I'm vegan") == ["I'm vegan"]
    for text in ["Remember to call Bob", "Can you remember my birthday?", "I remember that day well"]:
        assert remembered(text) == [], text
    assert personal_statement("I live in Lyon.") and personal_statement("We're vegan.")
    assert not personal_statement("Nice to meet you! How can I help?") and not personal_statement("thanks!")


async def test_remember_that_is_a_fact_in_the_turn_it_is_said(nous: Nous) -> None:
    await nous.pre_turn("s1", "Remember that I hate long meetings", user_id="alice")
    await nous.post_turn("s1", "Noted.")
    facts = await _facts(nous)  # the session has not ended
    assert [(f.content, f.subject, f.source, f.category) for f in facts] == [
        ("Alice hates long meetings.", "alice", "remember", "preference")
    ]
    state = await nous.cognitive.heart.sessions.get("s1")
    assert state.ended_at is None and facts[0].user_id == "alice"
    # Said again, it confirms the fact instead of storing it twice.
    await nous.pre_turn("s1", "Please remember that I hate long meetings.", user_id="alice")
    await nous.post_turn("s1", "I know.")
    assert len(await _facts(nous)) == 1


def test_remember_through_the_rest_reply(database_url: str, settings: Settings) -> None:
    from tests.test_server import _keys, live

    with live(settings.model_copy(update={"database_url": database_url}), _keys) as (server, keys):
        assert isinstance(server, LiveServer)
        with _client(server, keys["a_user"]) as alice:
            turn = alice.post("/v1/sessions/r1/turns", json={"text": "Remember that I hate long meetings"})
            assert turn.status_code == 200, turn.text
            assert alice.post("/v1/sessions/r1/reply", json={"text": "Noted."}).status_code == 200
            facts = alice.get("/v1/memories", params={"type": "fact"}).json()["items"]
            assert [f["content"] for f in facts] == ["Alice hates long meetings."]
            assert alice.get("/v1/sessions/r1").json()["ended_at"] is None


async def test_remember_through_mcp_reply(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    def open_nous() -> Nous:
        return Nous(settings, database_url=database_url, agent_id="agent-m", embedding_provider=provider)

    async with Client(create_mcp_server(open_nous)) as client:
        await client.call_tool(
            "context", {"session_id": "m1", "user_text": "Note that my sister lives in Oslo."}
        )
        await client.call_tool("reply", {"session_id": "m1", "text": "Got it."})
    async with open_nous() as nous:
        assert [f.content for f in await _facts(nous)] == ["The user's sister lives in Oslo."]


async def test_a_three_message_chat_yields_its_facts(nous: Nous) -> None:
    report = await nous.ingest(native(SHORT_CHAT, at=T0))
    assert report.episodes_trivial == 0 and report.discarded == []
    facts = await pipeline_facts(nous)
    assert sorted(f.content for f in facts) == [
        "The user lives in Lyon.",
        "The user's favourite programming language is Rust.",
    ]
    episode = next(e for e in await nous.memories("episode") if isinstance(e, Episode))
    assert episode.active and episode.outcome == "informational"
    assert episode.structured_summary and episode.structured_summary["outcome"] == "informational"


async def test_a_trivial_chat_is_discarded_and_says_why(nous: Nous) -> None:
    report = await nous.ingest(native([("user", "hello"), ("assistant", "Hi! How can I help?")], at=T0))
    assert report.episodes_trivial == 1 and report.discarded[0].startswith("s1: trivial: 1 turn")
    episode = next(e for e in await nous.memories("episode", include_inactive=True) if isinstance(e, Episode))
    history = await nous.history(episode.id)
    assert any("no statement about the person" in str(h.new_value) for h in history)
    # A live one-turn session too.
    await nous.pre_turn("live", "hello")
    await nous.post_turn("live", "Hi!")
    ended = await nous.end_session("live")
    assert ended.episode is not None and not ended.episode.active
    assert any("trivial" in str(h.new_value) for h in await nous.history(ended.episode.id))
    # ... but not one where the person said something about themselves.
    await nous.pre_turn("live2", "I'm allergic to cats.")
    await nous.post_turn("live2", "Noted.")
    kept = await nous.end_session("live2")
    assert kept.episode is not None and kept.episode.active


@pytest.mark.parametrize("content", ["x", " ok ", "?!"])
async def test_a_fact_too_short_to_state_anything_is_refused(nous: Nous, content: str) -> None:
    with pytest.raises(InvalidInputError, match="too short") as caught:
        await nous.learn(content)
    assert caught.value.field == "content"
    assert (await nous.learn("Uses uv")).memory.content == "Uses uv"


def test_ingest_says_what_it_discarded(cli: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(native([("user", "hello"), ("assistant", "Hi! How can I help?")], at=T0))
    result = cli.invoke(cli_app, ["ingest", str(path)])
    assert result.exit_code == 0, result.output
    assert "discarded 1 episode (turns kept):" in result.output
    assert "s1: trivial: 1 turn, " in result.output and "no statement about the person" in result.output
    shown = json.loads(cli.invoke(cli_app, ["ingest", str(path), "--json"]).stdout)  # progress: stderr
    assert shown["sessions_skipped"] == 1


async def test_one_subject_per_person(nous: Nous) -> None:
    """A user's facts are under their user id, their introduction ("I'm Alice, ...") is not a fact
    of its own; a speaker named like the user id is filed under the id ("Bob" with --user bob is
    "bob"), so one person has one subject."""
    chat = [
        ("user", "Hi, I'm Alice, I moved to Berlin last month and I work as a data engineer."),
        ("assistant", "Welcome to Berlin!"),
        ("user", "We switched our CI from Jenkins to GitHub Actions last week."),
        ("assistant", "Good choice."),
    ]
    await nous.ingest(native(chat, at=T0), user_id="alice")
    facts = await pipeline_facts(nous)
    assert {f.subject for f in facts} == {"alice"}
    texts = sorted(f.content for f in facts)
    assert "Alice moved to Berlin in February 2026 and works as a data engineer." in texts
    assert any(t.startswith("Alice and the team switched their CI") for t in texts), texts
    assert not any("family" in t for t in texts)

    named = json.dumps(
        {
            "id": "named",
            "sessions": [
                {
                    "id": "n1",
                    "started_at": T0.isoformat(),
                    "messages": [
                        {
                            "id": "n1:0",
                            "role": "user",
                            "name": "Bob",
                            "content": "I'm allergic to cats and dogs.",
                        },
                        {"id": "n1:1", "role": "assistant", "content": "Noted."},
                    ],
                }
            ],
        }
    )
    await nous.ingest(named, user_id="bob")
    bob = [f for f in await pipeline_facts(nous) if f.user_id == "bob"]
    assert not [f for f in await pipeline_facts(nous) if f.subject in ("Alice", "the user", "Bob")]
    assert [(f.subject, f.content) for f in bob] == [("bob", "Bob is allergic to cats and dogs.")]
