"""Erasing a user (``Nous.forget_user``, ``DELETE /v1/users/{id}``, ``nous forget --user``): every
row of theirs goes in one transaction, on both backends, with a receipt of counts kept in the
agent's audit; another user's rows and the agent's shared memories stay as they were, and nothing
of the erased user is found by recall, lists, sessions, history, export, or either index."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from nous import ErasureReceipt, InvalidInputError, NotFoundError, Nous, Settings, TurnResult
from nous.cli.app import app as cli_app
from nous.client import Client
from nous.errors import PermissionDeniedError
from nous.events.ingest_job import job_payload
from nous.ingest import parse_conversation
from nous.models import Fact, HistoryAction, Memory, WriteStatus
from nous.models.events import Event, EventKind
from nous.storage.base import EmitEvent, MemoryQuery
from tests.test_server import LiveServer, _client, live

# Words only one owner's memories hold.
ALICE = re.compile(r"quokkaberr", re.IGNORECASE)
BOB_WORD, SHARED_WORD = "Wombatfig", "Platypine"


def _conversation(user: str, word: str) -> str:
    return json.dumps(
        {
            "id": f"c-{user}",
            "sessions": [
                {
                    "id": "s1",
                    "started_at": "2026-03-01T10:00:00Z",
                    "messages": [
                        {"role": "user", "content": f"My {word} garden needs watering on Mondays."},
                        {"role": "assistant", "content": f"Noted: the {word} garden on Mondays."},
                    ],
                }
            ],
        }
    )


async def _plant_user(nous: Nous, user: str, word: str, shared_fact: str) -> str:
    """Memories of every kind, a live and an ended session with working memory, an ingested
    conversation, a link to a shared memory, a pending ingest job and a purged fact; the id of
    the purged fact."""
    fact = await nous.learn(f"{user} keeps a {word} plant by the window", user_id=user)
    await nous.learn(f"{user} waters the {word} at dawn", user_id=user)
    await nous.record_decision(f"Order {word} seeds for {user}", confidence=0.6, user_id=user)
    episode = await nous.start_episode(f"{word} planning with {user}", user_id=user)
    await nous.end_episode(episode.id, summary=f"Planned the {word} beds")
    await nous.add_procedure(f"Repot the {word}", f"Loosen the {word} roots first", user_id=user)
    await nous.add_censor(rf"(?i)burn\s+the\s+{word}", reason=f"{word} stays", user_id=user)
    assert await nous.link(fact.id, shared_fact), (fact, shared_fact)
    for session in (f"{user}-live", f"{user}-done"):
        await nous.pre_turn(session, f"Tell me about my {word} plant", user_id=user)
        await nous.post_turn(session, TurnResult(reply=f"Your {word} plant likes light."))
        await nous.heart.working_memory.focus(session, f"{user} asked about the {word}")
    await nous.end_session(f"{user}-done")
    await nous.ingest(_conversation(user, word), user_id=user)
    await nous.process_events()  # summaries and extracted facts, made under the user
    job = job_payload(parse_conversation(_conversation(user, word)), user)
    event = Event(agent_id=nous.agent_id, kind=EventKind.INGEST_REQUESTED, subject_id="c-job", payload=job)
    await nous.store.apply([EmitEvent(event)])  # a job not yet run
    purged = await nous.learn(f"The {word} invoice for {user} is due on the 3rd of June", user_id=user)
    assert purged.status in (WriteStatus.CREATED, WriteStatus.CONNECTED), purged  # a memory of its own
    await nous.forget(purged.id, hard=True)  # its audit rows (with its text) outlive it
    return purged.id


async def _everything(nous: Nous) -> list[Memory]:
    return [m async for m in nous.store.iter_memories(nous.agent_id)]


async def _state(nous: Nous, user: str) -> dict[str, Any]:
    """A user's memories, sessions, working memory and audit trails, as stored."""
    memories = {
        m.id: {"kind": m.kind.value, **m.model_dump(mode="json")}
        for m in await _everything(nous)
        if m.user_id == user
    }
    sessions = [s for s in await nous.sessions(limit=1000) if s.user_id == user]
    working = {s.session_id: await nous.store.working_memory(nous.agent_id, s.session_id) for s in sessions}
    history = {i: await nous.store.history(nous.agent_id, i) for i in memories}
    return {
        "memories": memories,
        "sessions": [s.model_dump(mode="json") for s in sessions],
        "working": {k: v.model_dump(mode="json") if v else None for k, v in working.items()},
        "history": {k: [h.model_dump(mode="json") for h in v] for k, v in history.items()},
    }


async def test_forget_user_erases_every_row_of_theirs_and_nothing_else(nous: Nous) -> None:
    shared = await nous.learn(f"The {SHARED_WORD} greenhouse opens at nine")
    await nous.record_decision(f"Heat the {SHARED_WORD} greenhouse in winter", confidence=0.8)
    alice_purged = await _plant_user(nous, "alice", "Quokkaberry", shared.id)
    await _plant_user(nous, "bob", BOB_WORD, shared.id)

    alice = await _state(nous, "alice")
    bob_before = await _state(nous, "bob")
    shared_before = {m.id: m for m in await _everything(nous) if m.user_id is None}
    kinds = Counter(m["kind"] for m in alice["memories"].values())
    assert set(kinds) == {"fact", "decision", "episode", "procedure", "censor", "turn"}, kinds
    assert len(alice["sessions"]) == 3 and sum(w is not None for w in alice["working"].values()) == 2
    stats, events = await nous.stats(), await nous.events(limit=1000)
    alice_edges = {
        (e.source_id, e.target_id, e.relation)
        for e in await nous.store.edges(nous.agent_id, [*alice["memories"]])
    }
    assert any(shared.id in (s, t) for s, t, _ in alice_edges)  # a link between shared and alice

    receipt = await nous.forget_user("alice")

    assert isinstance(receipt, ErasureReceipt) and receipt.user_id == "alice"
    assert receipt.memories == len(alice["memories"]) and receipt.memories_by_kind == dict(kinds)
    assert receipt.sessions == 3 and receipt.working_memory == 2
    assert receipt.edges == len(alice_edges) == stats.edges - (await nous.stats()).edges
    assert receipt.events == len(events) - len(await nous.events(limit=1000)) > 0
    after = await nous.stats()
    assert receipt.history == stats.history_rows - after.history_rows + 1  # + the receipt's own row
    assert receipt.history > sum(len(v) for v in alice["history"].values())  # purged and working too

    # nothing of alice's is stored, found, listed or exported
    assert not [m for m in await _everything(nous) if m.user_id == "alice" or ALICE.search(m.content)]
    assert [s for s in await nous.sessions(limit=1000) if s.user_id == "alice"] == []
    for session in (s["session_id"] for s in alice["sessions"]):
        assert await nous.store.working_memory(nous.agent_id, session) is None
        with pytest.raises(NotFoundError):
            await nous.session(session)
        with pytest.raises(NotFoundError):
            await nous.history(f"working:{session}")
    for memory_id in [*alice["memories"], alice_purged]:
        with pytest.raises(NotFoundError):
            await nous.history(memory_id)
    assert not [e for e in await nous.events(limit=1000) if ALICE.search(json.dumps(e.payload))]
    for user in ("alice", None):
        hits = await nous.recall("Quokkaberry plant by the window", user_id=user, limit=50)
        assert not [h for h in hits if h.memory.user_id == "alice" or ALICE.search(h.content)]
        listed = await nous.memories(user_id=user, include_inactive=True, include_superseded=True, limit=1000)
        assert not [m for m in listed if m.user_id == "alice"]
    assert not ALICE.search("\n".join([line async for line in nous.export_lines()]))
    # neither index keeps a row of alice's
    query = MemoryQuery(agent_id=nous.agent_id, include_inactive=True, include_superseded=True)
    vector = (await nous.embedder.embed_many(["alice keeps a Quokkaberry plant by the window"]))[0]
    near = await nous.store.vector_search(query, vector, 200)
    assert not {h.id for h in near} & set(alice["memories"])
    assert await nous.store.keyword_search(query, ["quokkaberry"], 50) == []
    assert {h.id for h in await nous.store.keyword_search(query, [BOB_WORD.lower()], 50)}

    # bob and the agent's shared memories are as they were (less shared's link to alice's fact)
    assert await _state(nous, "bob") == bob_before
    shared_after = {m.id: m for m in await _everything(nous) if m.user_id is None}
    assert shared_after == shared_before
    assert [h.id for h in await nous.recall(f"When does the {SHARED_WORD} greenhouse open?", limit=1)] == [
        shared.id
    ]
    assert not [
        e
        for e in await nous.edges(shared.id)
        if e.source_id in alice["memories"] or e.target_id in alice["memories"]
    ]

    # the receipt is in the agent's audit, with counts and no content; erasing again finds nothing
    await nous.forget_user("alice2")  # a user whose id starts with this one's: history is exact
    again = await nous.forget_user("alice")
    assert (again.memories, again.sessions, again.events, again.history, again.edges) == (0, 0, 0, 0, 0)
    trail = await nous.history("user:alice")
    assert [h.action for h in trail] == [HistoryAction.ERASE, HistoryAction.ERASE]
    assert trail[0].new_value == receipt.model_dump(mode="json", exclude={"agent_id", "at"})
    assert not ALICE.search(json.dumps([h.model_dump(mode="json") for h in trail]))


async def test_forget_user_takes_a_user_id(nous: Nous) -> None:
    for bad in ("", "  ", "x" * 201):
        with pytest.raises(InvalidInputError) as caught:
            await nous.forget_user(bad)
        assert caught.value.field == "user_id"


# -- over HTTP and the CLI ---------------------------------------------------------------------
async def _user_keys(settings: Settings) -> dict[str, str]:
    from nous.server import create_key

    async with Nous(settings) as nous:
        return {
            name: (await create_key(nous.store, **kw))[1]  # type: ignore[arg-type]
            for name, kw in {
                "a": {"agent_id": "agent-a"},
                "alice": {"agent_id": "agent-a", "user_id": "alice"},
                "bob": {"agent_id": "agent-a", "user_id": "bob"},
            }.items()
        }


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _user_keys) as pair:
        yield pair


def test_rest_erases_a_user_with_the_agents_key_only(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with (
        _client(server, keys["a"]) as agent,
        _client(server, keys["alice"]) as alice,
        _client(server, keys["bob"]) as bob,
    ):
        for who, text in (
            (alice, "Alice's Quokkaberry vase is teal"),
            (bob, f"Bob's {BOB_WORD} vase is red"),
        ):
            assert who.post("/v1/memories", json={"type": "fact", "content": text}).status_code == 201
            assert who.post("/v1/sessions/s1/turns", json={"text": f"About {text}"}).status_code == 200
            assert who.post("/v1/sessions/s1/reply", json={"text": "Noted."}).status_code == 200
        shared = agent.post(
            "/v1/memories", json={"type": "fact", "content": f"The {SHARED_WORD} hall is open"}
        )
        assert shared.status_code == 201
        # answers kept for retries: one of alice's key, one the agent's key got writing for her
        kept = {"type": "fact", "content": "Alice's Quokkaberry lamp is brass", "user_id": "alice"}
        for who, body in (
            (alice, {"type": "fact", "content": "Alice's Quokkaberry rug is wool"}),
            (agent, kept),
        ):
            written = who.post("/v1/memories", json=body, headers={"Idempotency-Key": "k1"})
            assert written.status_code == 201, written.text

        for who in (alice, bob):  # a user-bound key may not erase anyone, itself included
            refused = who.delete("/v1/users/alice")
            assert refused.status_code == 403, refused.text
            assert refused.json()["code"] == "forbidden"
        assert alice.get("/v1/sessions/s1").status_code == 200  # nothing was erased

        erased = agent.delete("/v1/users/alice")
        assert erased.status_code == 200, erased.text
        receipt = ErasureReceipt.model_validate(erased.json())
        assert receipt.user_id == "alice" and set(receipt.memories_by_kind) == {"fact", "turn", "episode"}
        assert receipt.sessions == 1 and receipt.memories == sum(receipt.memories_by_kind.values())
        assert receipt.idempotency_keys == 2

        assert alice.get("/v1/sessions/s1").status_code == 404
        assert not ALICE.search(alice.get("/v1/memories?limit=1000").text)
        assert not ALICE.search(agent.get("/v1/export").text)
        assert not ALICE.search(
            agent.post("/v1/recall", json={"query": "Quokkaberry vase", "limit": 50}).text
        )
        assert BOB_WORD in bob.get("/v1/memories?limit=1000").text
        assert bob.get("/v1/sessions/s1").status_code == 200
        assert SHARED_WORD in bob.get("/v1/memories?limit=1000").text
        assert agent.delete("/v1/users/%20").status_code == 422  # a blank user id
        retried = agent.post("/v1/memories", json=kept, headers={"Idempotency-Key": "k1"})
        assert retried.status_code == 201 and "Idempotent-Replayed" not in retried.headers  # run anew

    with Client(server.url, key=keys["a"]) as client:  # the Python client takes the same route
        assert client.forget_user("bob").memories_by_kind["fact"] == 1
        assert client.forget_user("alice").memories_by_kind == {"fact": 1}  # the retry's
    with Client(server.url, key=keys["bob"]) as client, pytest.raises(PermissionDeniedError):
        client.forget_user("bob")


def test_cli_forget_user(cli: CliRunner, database_url: str) -> None:
    def run(*args: str) -> Any:
        return cli.invoke(cli_app, ["--db", database_url, "--agent", "agent-a", *args])

    assert run("learn", f"The {SHARED_WORD} hall is open").exit_code == 0
    for user, word in (("alice", "Quokkaberry"), ("bob", BOB_WORD)):
        assert run("context", f"Where is my {word} vase?", "--session", user, "--user", user).exit_code == 0
        assert run("reply", "--session", user, f"Your {word} vase is on the shelf.").exit_code == 0

    erased = run("forget", "--user", "alice", "--json")
    assert erased.exit_code == 0, erased.output
    receipt = ErasureReceipt.model_validate_json(erased.stdout)
    assert receipt.user_id == "alice" and receipt.sessions == 1 and receipt.memories_by_kind["turn"] >= 1
    printed = run("forget", "--user", "bob")
    assert printed.exit_code == 0 and "erased user bob" in printed.stdout, printed.output
    assert "1 session" in printed.stdout
    assert json.loads(run("history", "user:alice", "--json").stdout)[0]["action"] == "erase"
    assert json.loads(run("sessions", "--json").stdout) == []
    assert SHARED_WORD in run("facts", "--json").stdout
    for wrong in (["forget"], ["forget", "abcdef12", "--user", "alice"]):
        refused = run(*wrong)
        assert refused.exit_code == 2, refused.output


async def test_the_vector_index_drops_the_users_rows(nous: Nous) -> None:
    """Many of the erased user's memories nearest a query do not crowd out the rest: the index
    drops them (SQLite's in-process index as for a purge; PostgreSQL's with the rows)."""
    mine = [
        Fact(agent_id=nous.agent_id, user_id="alice", content=f"Quokkaberry tea blend {i}") for i in range(60)
    ]
    bob = Fact(agent_id=nous.agent_id, user_id="bob", content="Bob brews herbal tea on Sundays")
    await nous.add_many([*mine, bob])
    query = MemoryQuery(agent_id=nous.agent_id)
    vector = (await nous.embedder.embed_many(["Quokkaberry tea blend"]))[0]
    assert bob.id not in {h.id for h in await nous.store.vector_search(query, vector, 5)}
    assert (await nous.forget_user("alice")).memories == 60
    assert [h.id for h in await nous.store.vector_search(query, vector, 5)] == [bob.id]
