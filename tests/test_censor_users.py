"""A censor made for one user binds that user alone (issue 30, F4), on both backends.

Over a real `nous serve` with user-bound keys for alice and bob of one agent: bob's censor is not
in alice's censor list (REST, inspector, MCP resource), never fires on her checked actions (REST
and MCP), is not in her context, and her actions never count as its activations (nor escalate
it); it still fires and escalates for bob. The agent's shared censor binds both. Every surface
answers alike: alice sees the shared censor everywhere and bob's nowhere (404 by id). In the
engine, an action's user is the given one or its session's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from nous import ActionDecision, Censor, CensorAction, InvalidInputError, Nous, Settings
from nous.cli.app import app
from tests.cli_support import data, ok
from tests.test_isolation import _client, _keys
from tests.test_server import LiveServer, live

BOB_PATTERN = r"transfer\s+the\s+savings"
BOB_REASON = "Bob asked that his savings never be moved by the assistant"
SHARED_PATTERN = r"drop\s+table"
SHARED_REASON = "never drop tables in the production database"
BOB_ACTION = "transfer the savings to the brokerage account"
SHARED_ACTION = "psql -c 'drop table customers;'"
MONEY = "Can you move money between my accounts?"


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _keys) as pair:
        yield pair


def _plant(agent: httpx.Client) -> dict[str, str]:
    """Bob's censor (warn, escalating after 3 firings) and the agent's shared one, by name."""

    def censor(**fields: Any) -> str:
        answer = agent.post("/v1/memories", json={"type": "censor", **fields})
        assert answer.status_code == 201, answer.text
        return str(answer.json()["id"])

    return {
        "bob": censor(content=BOB_PATTERN, reason=BOB_REASON, action="warn", user_id="bob"),
        "shared": censor(content=SHARED_PATTERN, reason=SHARED_REASON, action="block"),
    }


def _listed(client: httpx.Client, **params: str) -> list[str]:
    answer = client.get("/v1/censors", params=params)
    assert answer.status_code == 200, answer.text
    return [c["id"] for c in answer.json()["items"]]


def _check(client: httpx.Client, action: str, **fields: Any) -> dict[str, Any]:
    answer = client.post("/v1/check-action", json={"action": action, **fields})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _censors_in_context(client: httpx.Client, session: str, text: str) -> list[str]:
    answer = client.post(f"/v1/sessions/{session}/turns", json={"text": text})
    assert answer.status_code == 200, answer.text
    sections = {s["name"]: s for s in answer.json()["sections"]}
    return [i["id"] for i in sections["censors"]["items"] if i["id"]]


def _bobs_censor(agent: httpx.Client, censor_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Bob's censor as the agent's key reads it, and its history."""
    memory = agent.get(f"/v1/memories/{censor_id}")
    history = agent.get(f"/v1/memories/{censor_id}/history")
    assert memory.status_code == 200 and history.status_code == 200, (memory.text, history.text)
    return memory.json(), history.json()


def test_a_users_censor_is_listed_fired_shown_and_escalated_for_that_user_only(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    with _client(server, keys["a"]) as agent, _client(server, keys["alice"]) as alice:
        ids = _plant(agent)
        before = _bobs_censor(agent, ids["bob"])

        # Listed: the shared censor, not bob's, on every surface alice reads (and by id: 404).
        assert _listed(alice) == [ids["shared"]]
        page = alice.get("/ui/censors")
        assert page.status_code == 200 and "drop\\s+table" in page.text
        assert ids["bob"] not in page.text and "savings" not in page.text
        assert alice.get(f"/v1/memories/{ids['bob']}").status_code == 404
        assert alice.get(f"/v1/memories/{ids['shared']}").status_code == 200

        # Checked: three of alice's actions that bob's pattern matches are allowed, alone or in
        # her session; the shared censor still blocks her.
        for fields in ({}, {"session_id": "a1"}, {"session_id": "a1"}):
            verdict = _check(alice, BOB_ACTION, **fields)
            assert verdict["decision"] == "allow" and verdict["matches"] == [], verdict
        shared = _check(alice, SHARED_ACTION)
        assert shared["decision"] == "block"
        assert [m["censor"]["id"] for m in shared["matches"]] == [ids["shared"]]
        refused = alice.post("/v1/check-action", json={"action": BOB_ACTION, "user_id": "bob"})
        assert refused.status_code == 403, refused.text

        # Context: alice's turn shows the shared censor only.
        assert _censors_in_context(alice, "a2", MONEY) == [ids["shared"]]

        # None of it counted as an activation of bob's censor: unchanged, no history row added.
        assert _bobs_censor(agent, ids["bob"]) == before
        assert before[0]["activation_count"] == 0 and before[0]["action"] == "warn"

    with _client(server, keys["bob"]) as bob, _client(server, keys["a"]) as agent:
        assert set(_listed(bob)) == {ids["bob"], ids["shared"]}
        page = bob.get("/ui/censors")
        assert ids["bob"] in page.text and "drop\\s+table" in page.text
        assert bob.get(f"/v1/memories/{ids['bob']}").status_code == 200
        assert set(_censors_in_context(bob, "b1", MONEY)) == set(ids.values())
        # Bob's actions fire his censor (in his session too); the third escalates it to block.
        decisions = [_check(bob, BOB_ACTION, session_id="b1") for _ in range(3)]
        assert [d["decision"] for d in decisions] == ["warn", "warn", "block"]
        assert all([m["censor"]["id"] for m in d["matches"]] == [ids["bob"]] for d in decisions)
        assert decisions[2]["matches"][0]["escalated"]
        assert _check(bob, SHARED_ACTION)["decision"] == "block"
        memory, history = _bobs_censor(agent, ids["bob"])
        assert memory["activation_count"] == 3 and memory["action"] == "block"
        assert len(history) == len(before[1]) + 3

        # The agent's key lists every censor, or those binding one user; without a user or a
        # session, an action is judged by the shared censors only.
        assert set(_listed(agent)) == set(ids.values())
        assert _listed(agent, user_id="alice") == [ids["shared"]]
        assert set(_listed(agent, user_id="bob")) == set(ids.values())
        assert _check(agent, BOB_ACTION)["decision"] == "allow"
        assert _check(agent, BOB_ACTION, user_id="alice")["decision"] == "allow"
        assert _check(agent, SHARED_ACTION, user_id="alice")["decision"] == "block"


def _resource(result: Any) -> list[dict[str, Any]]:
    return list(json.loads(result.contents[0].text))


def _tool(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    content = result.structured_content
    return dict(content.get("result", content))


async def test_over_mcp_a_users_censor_binds_that_user_only(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    server, keys = served
    with _client(server, keys["a"]) as agent:
        ids = await asyncio.to_thread(_plant, agent)

    def connect(key: str) -> Client:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
        return Client(streamable_http_client(f"{server.url}/mcp/", http_client=http))

    async with connect(keys["alice"]) as alice, connect(keys["bob"]) as bob, connect(keys["a"]) as agent_mcp:
        # The resource answers as the REST list does: the censors that bind the caller's user.
        assert [c["id"] for c in _resource(await alice.read_resource("nous://censors"))] == [ids["shared"]]
        assert {c["id"] for c in _resource(await bob.read_resource("nous://censors"))} == set(ids.values())
        assert {c["id"] for c in _resource(await agent_mcp.read_resource("nous://censors"))} == set(
            ids.values()
        )
        for _ in range(3):
            verdict = _tool(await alice.call_tool("check_action", {"action": BOB_ACTION, "session_id": "m1"}))
            assert verdict["decision"] == "allow" and verdict["censors"] == [], verdict
        refused = await alice.call_tool("check_action", {"action": BOB_ACTION, "user_id": "bob"})
        assert refused.is_error
        fired = _tool(await bob.call_tool("check_action", {"action": BOB_ACTION}))
        assert fired["decision"] == "warn" and [c["id"] for c in fired["censors"]] == [ids["bob"]]
        shared = _tool(await alice.call_tool("check_action", {"action": SHARED_ACTION}))
        assert shared["decision"] == "block" and [c["id"] for c in shared["censors"]] == [ids["shared"]]
    with _client(server, keys["a"]) as agent:
        memory = await asyncio.to_thread(agent.get, f"/v1/memories/{ids['bob']}")
        assert memory.json()["activation_count"] == 1 and memory.json()["action"] == "warn"


async def test_an_actions_user_is_the_given_one_or_its_sessions(nous: Nous) -> None:
    bobs = await nous.add_censor(BOB_PATTERN, reason=BOB_REASON, user_id="bob")
    shared = await nous.add_censor(SHARED_PATTERN, action="block", reason=SHARED_REASON)
    assert isinstance(bobs.memory, Censor) and isinstance(shared.memory, Censor)
    await nous.pre_turn("s-bob", "Let us sort out the household budget", user_id="bob")
    await nous.pre_turn("s-alice", "Let us sort out the household budget", user_id="alice")

    by_session = await nous.check_action(BOB_ACTION, session_id="s-bob")
    assert by_session.decision is ActionDecision.WARN
    assert [m.censor.id for m in by_session.matches] == [bobs.memory.id]
    alices: tuple[dict[str, Any], ...] = ({"session_id": "s-alice"}, {"user_id": "alice"}, {})
    for kwargs in alices:
        assert (await nous.check_action(BOB_ACTION, **kwargs)).decision is ActionDecision.ALLOW, kwargs
    assert [m.censor.id for m in await nous.check_censors(BOB_ACTION, user_id="bob", record=False)] == [
        bobs.memory.id
    ]
    with pytest.raises(InvalidInputError, match="another user's"):
        await nous.check_action(BOB_ACTION, session_id="s-bob", user_id="alice")
    assert (await nous.check_action(SHARED_ACTION, session_id="s-alice")).decision is ActionDecision.BLOCK

    assert {c.id for c in await nous.censors()} == {bobs.memory.id, shared.memory.id}
    assert [c.id for c in await nous.censors(user_id="alice")] == [shared.memory.id]
    assert {c.id for c in await nous.censors(user_id="bob")} == {bobs.memory.id, shared.memory.id}

    alice_view = (await nous.preview_turn("How do I move money?", user_id="alice")).section("censors")
    assert alice_view is not None and [i.id for i in alice_view.items if i.id] == [shared.memory.id]
    bob_turn = await nous.pre_turn("s-bob", "How do I move money?")  # the session's user: bob
    section = bob_turn.section("censors")
    assert section is not None and {i.id for i in section.items if i.id} == {bobs.memory.id, shared.memory.id}
    counted = await nous.get(bobs.memory.id)
    assert isinstance(counted, Censor) and counted.activation_count == 1
    assert counted.action is CensorAction.WARN


def test_the_cli_makes_a_censor_for_one_user_and_checks_actions_as_a_user(cli: CliRunner) -> None:
    bobs = data(cli, "censors", "add", r"drop\s+table", "--user", "bob", "--reason", "bob's guard")
    everyone = data(cli, "censors", "add", "wipe the disk", "--action", "block", "--reason", "never")
    assert bobs["user_id"] == "bob" and everyone["user_id"] is None
    assert data(cli, "check-action", "drop table users", "--user", "alice")["decision"] == "allow"
    fired = data(cli, "check-action", "drop table users", "--user", "bob")
    assert fired["decision"] == "warn" and [m["censor_id"] for m in fired["matches"]] == [bobs["id"]]
    blocked = cli.invoke(app, ["check-action", "please wipe the disk", "--user", "alice", "--json"])
    assert blocked.exit_code == 3 and json.loads(blocked.stdout)["decision"] == "block"  # 3: blocked
    listed = {c["id"]: c for c in data(cli, "censors")}
    assert listed[bobs["id"]]["activation_count"] == 1  # alice's check counted nothing of bob's
    assert "bob" in ok(cli, "censors").stdout and "everyone" in ok(cli, "censors").stdout
