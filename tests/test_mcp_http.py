"""The MCP tools and resources over streamable HTTP inside `nous serve` (a real server on
loopback, both backends): a user-bound key drives a conversation that becomes its user's
summarised episode, acts only as its user, and is refused the agent-wide resources."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from nous import Nous, Settings
from nous.models import Episode
from tests.test_server import LiveServer, _keys, live

REPLY = (
    "Move the billing ledger to PostgreSQL in two steps: copy the history first, then switch "
    "the writers during the Tuesday maintenance window."
)


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _keys) as pair:
        yield pair


def _connect(server: LiveServer, key: str) -> Client:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
    return Client(streamable_http_client(f"{server.url}/mcp/", http_client=http))


def _data(result: Any) -> Any:
    assert not result.is_error, result.content
    content = result.structured_content
    return content.get("result", content) if isinstance(content, dict) else content


async def test_a_user_bound_key_over_http_keeps_to_its_user(
    served: tuple[LiveServer, dict[str, str]], database_url: str, settings: Settings
) -> None:
    server, keys = served
    async with _connect(server, keys["a_user"]) as alice, _connect(server, keys["a"]) as agent:
        turn = {"session_id": "h1", "user_text": "Plan the migration of the billing ledger to PostgreSQL"}
        refused = await alice.call_tool("context", {**turn, "user_id": "bob"})
        assert refused.is_error and "own user" in " ".join(getattr(c, "text", "") for c in refused.content)
        first = _data(await alice.call_tool("context", turn))
        assert first["episode_id"] and first["session_id"] == "h1"
        _data(await alice.call_tool("reply", {"session_id": "h1", "text": REPLY}))
        _data(await alice.call_tool("context", {"session_id": "h1", "user_text": "Which window on Tuesday?"}))
        _data(await alice.call_tool("reply", {"session_id": "h1", "text": "From 02:00 to 04:00 UTC."}))
        # The agent's key has a session "h1" of its own; alice's is not reachable under that name.
        assert (await agent.call_tool("end_session", {"session_id": "h1"})).is_error
        ended = _data(await alice.call_tool("end_session", {"session_id": "h1"}))
        assert ended["ended_now"] and ended["episode"]["id"] == first["episode_id"]
        assert ended["episode"]["active"]  # two turns: kept, to be summarised
        # Resources: the identity is for the agent's key; the censors read are those binding the
        # caller's user (none here); episodes are the caller's own.
        assert json.loads((await agent.read_resource("nous://identity")).contents[0].text) == []  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="agent's key"):
            await alice.read_resource("nous://identity")
        assert json.loads((await alice.read_resource("nous://censors")).contents[0].text) == []  # type: ignore[union-attr]

    run = settings.model_copy(update={"database_url": database_url})
    async with Nous(run, agent_id="agent-a") as nous:
        await nous.process_events()
        episode = await nous.get(first["episode_id"])
        assert isinstance(episode, Episode) and episode.summary and episode.user_id == "alice"
        assert {t.user_id for t in await nous.memories("turn")} == {"alice"}

    async with _connect(server, keys["a_user"]) as alice, _connect(server, keys["b"]) as other_agent:
        recent = json.loads((await alice.read_resource("nous://episodes/recent")).contents[0].text)  # type: ignore[union-attr]
        assert [(e["id"], e["summary"]) for e in recent] == [(episode.id, episode.summary)]
        assert json.loads((await other_agent.read_resource("nous://episodes/recent")).contents[0].text) == []  # type: ignore[union-attr]
