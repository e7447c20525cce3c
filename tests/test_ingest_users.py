"""An ingested session is its user's alone, on both backends, against a real server on loopback:
no conversation or session id spells another user's live or ingested session, a session row is
never taken over by another user, and an episode's summary gathers only its user's turns (issue
30, F2). Each attack is tried with alice's user-bound key against bob's side, which is checked
after it: his session, his turns, and no summary of alice's holding his words."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from nous import ConflictError, Nous, Settings
from nous.embeddings.base import EmbeddingProvider
from nous.events.summary import session_turns
from nous.heart.sessions import state_of
from nous.ingest import ingested_session_key
from nous.models import Episode, Turn
from nous.server import create_key
from nous.storage.base import PutSession
from tests.test_server import LiveServer, live

AGENT = "agent-a"
PIN = "my bank PIN is 4321"
PICNIC = "Alice plans a picnic by the lake on Sunday with her cousins and two dogs."
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def conversation(conversation_id: str, session_id: str, opening: str) -> dict[str, Any]:
    """A conversation of one session, long enough not to be trivial."""
    return {
        "id": conversation_id,
        "sessions": [
            {
                "id": session_id,
                "started_at": "2026-03-01T10:00:00Z",
                "messages": [
                    {"id": "m1", "role": "user", "content": opening},
                    {"id": "m2", "role": "assistant", "content": "Noted, that sounds like a lovely plan."},
                    {"id": "m3", "role": "user", "content": "Please remember the details for later."},
                    {"id": "m4", "role": "assistant", "content": "I will keep them in mind for you."},
                ],
            }
        ],
    }


async def _keys(settings: Settings) -> dict[str, str]:
    async with Nous(settings) as nous:
        return {
            name: (await create_key(nous.store, agent_id=AGENT, user_id=user))[1]
            for name, user in {"agent": None, "alice": "alice", "bob": "bob"}.items()
        }


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _keys) as pair:
        yield pair


def _client(server: LiveServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)


async def _summaries(settings: Settings, provider: EmbeddingProvider) -> dict[str, str]:
    """Run the event pipeline (offline summaries, no language model); each episode's summary and
    transcript by its user ("" for the agent's own), and what it was summarised from."""
    async with Nous(settings, agent_id=AGENT, embedding_provider=provider) as nous:
        report = await nous.process_events()
        assert report.dead == 0
        found: dict[str, str] = {}
        for e in await nous.memories("episode", include_inactive=True, limit=100):
            assert isinstance(e, Episode)
            turns = await session_turns(nous.pipeline_context(), e)
            text = f"{e.summary or ''}\n{e.title or ''}\n" + "\n".join(t.content for t in turns)
            found[e.user_id or ""] = found.get(e.user_id or "", "") + text
        return found


def _bob_live(bob: httpx.Client, session: str) -> None:
    assert bob.post(f"/v1/sessions/{session}/turns", json={"text": PIN}).status_code == 200
    reply = bob.post(f"/v1/sessions/{session}/reply", json={"text": "I will not repeat it."})
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("ingester", ["alice", "agent"])
def test_an_ingest_spelling_bobs_session_key_leaves_his_session_and_words_alone(
    served: tuple[LiveServer, dict[str, str]], provider: EmbeddingProvider, ingester: str
) -> None:
    """Conversation "~3" with session "bob:s1" once spelled bob's live session ``~3:bob:s1``: the
    ingest joined it and its summary held his PIN (alice's, or the agent's shared one)."""
    server, keys = served
    with _client(server, keys["bob"]) as bob, _client(server, keys[ingester]) as intruder:
        _bob_live(bob, "s1")
        before = bob.get("/v1/sessions/s1").json()
        stored = intruder.post("/v1/ingest?wait=true", json=conversation("~3", "bob:s1", PICNIC))
        assert stored.status_code == 200 and stored.json()["sessions"] == 1, stored.text
        after = bob.get("/v1/sessions/s1").json()
        assert after == before and after["user_id"] == "bob" and after["ended_at"] is None
        # his session goes on (it was not ended by the ingest) and holds only his words
        assert bob.post("/v1/sessions/s1/turns", json={"text": "Another question."}).status_code == 200
        summaries = asyncio.run(_summaries(server.settings, provider))
        mine = "alice" if ingester == "alice" else ""
        assert "picnic" in summaries[mine] and "4321" not in summaries[mine], summaries[mine]
        turns = intruder.get("/v1/memories", params={"type": "turn", "limit": 100}).json()["items"]
        ingested = [t for t in turns if "picnic" in t["content"]]
        assert ingested and all(t["session_id"] != "~3:bob:s1" for t in ingested)
        assert bob.post("/v1/sessions/s1/end", json={}).status_code == 200
        summaries = asyncio.run(_summaries(server.settings, provider))
        assert "4321" in summaries["bob"] and "picnic" not in summaries["bob"].lower(), summaries["bob"]


def test_two_users_ingesting_the_same_ids_get_a_session_each(
    served: tuple[LiveServer, dict[str, str]], provider: EmbeddingProvider
) -> None:
    server, keys = served
    with (
        _client(server, keys["alice"]) as alice,
        _client(server, keys["bob"]) as bob,
        _client(server, keys["agent"]) as agent,
    ):
        for client, opening in ((alice, PICNIC), (bob, f"Please note that {PIN}, and keep it safe.")):
            stored = client.post("/v1/ingest?wait=true", json=conversation("c1", "s1", opening))
            assert stored.status_code == 200 and stored.json()["sessions"] == 1, stored.text
        rows = agent.get("/v1/sessions").json()["items"]
        by_user = {r["user_id"]: r["session_id"] for r in rows}
        assert by_user == {
            "alice": ingested_session_key("alice", "c1", "s1"),
            "bob": ingested_session_key("bob", "c1", "s1"),
        }
        assert all(r["ended_at"] is not None for r in rows)
        summaries = asyncio.run(_summaries(server.settings, provider))
        assert "4321" in summaries["bob"] and "picnic" not in summaries["bob"].lower()
        assert "picnic" in summaries["alice"] and "4321" not in summaries["alice"]


def test_an_ingest_of_bobs_future_session_id_does_not_end_it_before_it_starts(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    """An ingested session is written ended: landing on bob's future session made his first turn
    there a 409, and showed him a row of alice's."""
    server, keys = served
    with _client(server, keys["alice"]) as alice, _client(server, keys["bob"]) as bob:
        stored = alice.post("/v1/ingest?wait=true", json=conversation("~3", "bob:future", PICNIC))
        assert stored.status_code == 200, stored.text
        assert bob.get("/v1/sessions/future").status_code == 404
        _bob_live(bob, "future")
        state = bob.get("/v1/sessions/future").json()
        assert state["user_id"] == "bob" and state["ended_at"] is None and state["turn_count"] == 1
        assert [s["session_id"] for s in bob.get("/v1/sessions").json()["items"]] == ["future"]


def test_ingested_session_keys_are_one_to_one_and_never_a_live_users_key() -> None:
    spelled = [
        ingested_session_key(user, conversation_id, session_id)
        for user, conversation_id, session_id in [
            ("alice", "c1", "s1"),
            ("bob", "c1", "s1"),
            (None, "c1", "s1"),
            ("alice", "c1:s1", "s1"),
            ("alice", "c1", "s1:s1"),
            (None, "5:alice:2:c1", "s1"),  # the agent's conversation spelling alice's key's tail
            ("alice", "x" * 300, "s1"),  # too long to store readably: a digest
            ("alice", "x" * 300, "s2"),
        ]
    ]
    assert len(set(spelled)) == len(spelled)
    assert all(k.startswith("@") and len(k) <= 200 for k in spelled)  # a live user key starts "~"


async def test_a_session_row_is_never_taken_over_by_another_user(nous: Nous) -> None:
    def state(user: str | None) -> Any:
        s = state_of(nous.agent_id, "shared-id", [("user", "hello there"), ("assistant", "hi")], T0)
        s.user_id, s.ended_at = user, T0
        return s

    assert await nous.store.apply([PutSession(state("bob"))]) == [True]
    assert await nous.store.apply([PutSession(state("bob"))]) == [False]  # a re-run: left as it is
    for other in ("alice", None):
        with pytest.raises(ConflictError):
            await nous.store.apply([PutSession(state(other))])
    row = await nous.store.session(nous.agent_id, "shared-id")
    assert row is not None and row.user_id == "bob"


async def test_the_summariser_gathers_only_the_episodes_users_turns(nous: Nous) -> None:
    """Whatever session id memories were stored under, another user's turn is not gathered."""

    def turn(user: str | None, text: str) -> Turn:
        return Turn(
            agent_id=nous.agent_id,
            user_id=user,
            session_id="one-id",
            content=text,
            role="user",
            occurred_at=T0,
        )

    episode = Episode(
        agent_id=nous.agent_id, user_id="alice", session_id="one-id", content="Planning", started_at=T0
    )
    mine, shared = turn("alice", f"user: {PICNIC}"), turn(None, "user: the office opens at nine")
    await nous.repo.create_many([episode, mine, shared, turn("bob", f"user: {PIN}")])
    gathered = await session_turns(nous.pipeline_context(), episode)
    assert sorted(t.id for t in gathered) == sorted([mine.id, shared.id])
