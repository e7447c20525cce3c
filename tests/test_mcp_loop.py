"""A conversation driven through the MCP tools (the SDK's client, both backends, the real model):
context -> reply -> end_session becomes a summarised episode with its turns; user_id is honoured
within what the key may do; the resources read the caller's identity, episodes and censors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from nous import Nous, Settings
from nous.embeddings.base import EmbeddingProvider
from nous.models import Decision, Episode, Fact
from nous.server.mcp import create_mcp_server
from nous.server.scope import Caller

REPLY = (
    "For a week in Verbier in March, book the lift pass online a week ahead: the six-day pass is "
    "the cheapest per day, and the Mont-Fort area stays open late in the season."
)


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def _data(result: Any) -> Any:
    assert not result.is_error, _text(result)
    content = result.structured_content
    return content.get("result", content) if isinstance(content, dict) else content


async def test_an_mcp_conversation_becomes_a_summarised_episode(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    def open_nous() -> Nous:
        return Nous(settings, database_url=database_url, embedding_provider=provider)

    async with Client(create_mcp_server(open_nous)) as client:
        first = _data(
            await client.call_tool(
                "context",
                {
                    "session_id": "trip",
                    "user_text": "Help me plan the ski trip to Verbier in March",
                    "user_id": "alice",
                },
            )
        )
        assert first["turn"] == 1 and first["episode_id"] and first["session_id"] == "trip"
        fact = _data(
            await client.call_tool(
                "remember",
                {
                    "content": "Alice wants a six-day ski pass for Verbier",
                    "subject": "Alice",
                    "category": "preference",
                    "session_id": "trip",
                    "user_id": "alice",
                },
            )
        )
        decision = _data(
            await client.call_tool(
                "record_decision",
                {
                    "description": "Book the Verbier lift pass online a week ahead",
                    "confidence": 0.8,
                    "category": "process",
                    "stakes": "low",
                    "context": "Planning Alice's ski trip in March",
                    "reasons": [
                        {"type": "empirical", "text": "online passes were cheaper last season"},
                        {"type": "constraint", "text": "the trip is in high season"},
                    ],
                    "session_id": "trip",
                    "user_id": "alice",
                },
            )
        )
        assert fact["type"] == "fact" and fact["at"] and decision["type"] == "decision" and decision["at"]
        done = _data(
            await client.call_tool(
                "reply",
                {
                    "session_id": "trip",
                    "text": REPLY,
                    "tools_used": ["remember", "record_decision"],
                    "decision_ids": [decision["id"]],
                    "fact_ids": [fact["id"]],
                },
            )
        )
        assert done["turns"] == 1 and done["episode_id"] == first["episode_id"]
        second = _data(
            await client.call_tool("context", {"session_id": "trip", "user_text": "What about ski passes?"})
        )
        assert second["turn"] == 2
        await client.call_tool("reply", {"session_id": "trip", "text": "A six-day pass is cheapest."})
        ended = _data(
            await client.call_tool(
                "end_session", {"session_id": "trip", "reflection": "Book ski passes online, a week ahead."}
            )
        )
        assert ended["ended_now"] and ended["turns"] == 2 and ended["ended_at"]
        assert ended["episode"]["id"] == first["episode_id"] and ended["episode"]["type"] == "episode"
        assert ended["episode"]["summary"] is None  # the event pipeline writes it
        assert [(lesson["type"], lesson["content"]) for lesson in ended["lessons"]] == [
            ("fact", "Book ski passes online, a week ahead.")
        ]
        again = _data(await client.call_tool("end_session", {"session_id": "trip"}))
        assert again["ended_now"] is False  # ending twice changes nothing
        late = await client.call_tool("context", {"session_id": "trip", "user_text": "One more thing"})
        assert late.is_error and "ended" in _text(late)

    async with open_nous() as nous:
        report = await nous.process_events()  # the event pipeline summarises the ended session
        assert report.dead == 0
        episode = await nous.get(first["episode_id"])
        assert isinstance(episode, Episode) and episode.summary and episode.ended_at
        assert episode.user_id == "alice"
        turns = await nous.memories("turn")
        assert {t.content for t in turns} >= {
            "user: Help me plan the ski trip to Verbier in March",
            f"assistant: {REPLY}",
            "assistant: A six-day pass is cheapest.",
        }
        assert {t.user_id for t in turns} == {"alice"}
        stored = await nous.get(decision["id"])
        assert isinstance(stored, Decision) and stored.stakes == "low" and stored.category == "process"
        assert [(r.type, r.text) for r in stored.reasons] == [
            ("empirical", "online passes were cheaper last season"),
            ("constraint", "the trip is in high season"),
        ]  # typed as given, no "empirical:" left in the text
        assert stored.context == "Planning Alice's ski trip in March"
        edges = await nous.store.edges(nous.agent_id, [episode.id])
        linked = {e.source_id for e in edges if e.target_id == episode.id and e.relation == "part_of"}
        assert {decision["id"], fact["id"]} <= linked  # what the turn wrote belongs to its episode

    async with Client(create_mcp_server(open_nous)) as client:
        recent = _data(await client.call_tool("recall_recent", {"limit": 5, "user_id": "alice"}))
        assert [(r["id"], r["type"]) for r in recent] == [(episode.id, "episode")]
        assert recent[0]["summary"] == episode.summary and recent[0]["at"]


async def test_user_id_is_honoured_within_what_the_key_may_do(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with Nous(settings, database_url=database_url, embedding_provider=provider) as nous:
        agent, alice = Caller(agent_id=nous.agent_id), Caller(agent_id=nous.agent_id, user_id="alice")

        def server_for(who: Caller) -> Any:
            async def resolve(ctx: Any) -> tuple[Nous, Caller]:
                return nous, who

            return create_mcp_server(resolve=resolve)

        async with Client(server_for(agent)) as as_agent, Client(server_for(alice)) as as_alice:
            # An agent's key acts for any of its users.
            bobs = _data(
                await as_agent.call_tool(
                    "remember", {"content": "Bob's desk is on floor 3", "user_id": "bob"}
                )
            )
            assert (await nous.get(bobs["id"])).user_id == "bob"
            for_bob = _data(
                await as_agent.call_tool("recall", {"query": "which floor is the desk on?", "user_id": "bob"})
            )
            assert [h["id"] for h in for_bob][:1] == [bobs["id"]]
            for_alice = _data(
                await as_agent.call_tool(
                    "recall", {"query": "which floor is the desk on?", "user_id": "alice"}
                )
            )
            assert bobs["id"] not in {h["id"] for h in for_alice}
            # A user-bound key acts only as its own user: another user_id is refused, not replaced.
            shared = await as_alice.call_tool(
                "create_censor", {"pattern": "desk swap", "reason": "ask first"}
            )
            assert shared.is_error and "agent's key" in _text(shared)  # censors bind every user
            made = _data(
                await as_agent.call_tool("create_censor", {"pattern": "desk swap", "reason": "ask first"})
            )
            assert made["status"] == "created" and made["type"] == "censor"
            verdict = _data(await as_alice.call_tool("check_action", {"action": "do a desk swap with Bob"}))
            assert verdict["decision"] == "warn" and verdict["censors"][0]["id"] == made["id"]
            assert (
                verdict["censors"][0]["reason"] == "ask first" and verdict["censors"][0]["action"] == "warn"
            )
            refused = await as_alice.call_tool(
                "remember", {"content": "Alice's desk is on floor 5", "user_id": "bob"}
            )
            assert refused.is_error and "own user" in _text(refused)
            own = _data(
                await as_alice.call_tool(
                    "remember", {"content": "Alice's desk is on floor 5", "user_id": "alice"}
                )
            )
            implied = _data(await as_alice.call_tool("remember", {"content": "Alice drinks green tea"}))
            assert {(await nous.get(i)).user_id for i in (own["id"], implied["id"])} == {"alice"}
            assert not any(isinstance(f, Fact) and f.user_id is None for f in await nous.memories("fact"))
            hits = _data(await as_alice.call_tool("recall", {"query": "which floor is the desk on?"}))
            assert bobs["id"] not in {h["id"] for h in hits}
            # Her sessions are hers: the agent's "s1" and hers are two conversations.
            await as_alice.call_tool("context", {"session_id": "s1", "user_text": "Where is my desk?"})
            unknown = await as_agent.call_tool("reply", {"session_id": "s1", "text": "On floor 5."})
            assert unknown.is_error
            mine = _data(await as_alice.call_tool("reply", {"session_id": "s1", "text": "On floor 5."}))
            assert mine["turns"] == 1


async def test_resources_read_the_callers_identity_episodes_and_censors(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with Nous(settings, database_url=database_url, embedding_provider=provider) as nous:
        await nous.set_identity("character", "A careful release engineer")
        censor = await nous.add_censor(r"DROP\s+TABLE", action="block", reason="never drop production tables")
        await nous.pre_turn("s1", "Plan the database migration for the billing ledger", user_id="bob")
        await nous.post_turn("s1", REPLY)
        await nous.end_session("s1")
        agent, alice = Caller(agent_id=nous.agent_id), Caller(agent_id=nous.agent_id, user_id="alice")

        def server_for(who: Caller) -> Any:
            async def resolve(ctx: Any) -> tuple[Nous, Caller]:
                return nous, who

            return create_mcp_server(resolve=resolve)

        async with Client(server_for(agent)) as as_agent, Client(server_for(alice)) as as_alice:
            listed = {str(r.uri) for r in (await as_agent.list_resources()).resources}
            assert listed == {"nous://identity", "nous://episodes/recent", "nous://censors"}

            async def read(client: Client, uri: str) -> Any:
                result = await client.read_resource(uri)
                return json.loads(result.contents[0].text)  # type: ignore[union-attr]

            identity = await read(as_agent, "nous://identity")
            assert [(s["section"], s["content"]) for s in identity] == [
                ("character", "A careful release engineer")
            ]
            assert identity[0]["at"]
            censors = await read(as_agent, "nous://censors")
            assert [(c["id"], c["action"], c["type"]) for c in censors] == [(censor.id, "block", "censor")]
            episodes = await read(as_agent, "nous://episodes/recent")
            assert len(episodes) == 1 and episodes[0]["type"] == "episode" and episodes[0]["at"]
            # A user-bound key: the identity is refused; the censors read are those binding alice
            # (here the agent's shared one); bob's episode is not alice's.
            with pytest.raises(MCPError, match="agent's key"):
                await as_alice.read_resource("nous://identity")
            assert await read(as_alice, "nous://censors") == censors
            assert await read(as_alice, "nous://episodes/recent") == []
