"""The MCP tools through the official SDK's client: in-process, and against a `nous mcp` stdio
subprocess; one agent's tools never see another agent's memory."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from nous import Nous, Settings
from nous.embeddings.base import EmbeddingProvider
from nous.server.mcp import create_mcp_server

TOOLS = {
    "remember",
    "recall",
    "recall_recent",
    "timeline",
    "record_decision",
    "check_similar",
    "check_action",
    "context",
    "reply",
    "end_session",
    "create_censor",
    "forget",
}


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def _data(result: Any) -> Any:
    """A tool result's structured content (or its JSON text)."""
    assert not result.is_error, result
    if result.structured_content is not None:
        content = result.structured_content
        return content.get("result", content) if isinstance(content, dict) else content
    return json.loads(result.content[0].text)


async def test_the_tools_in_process(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    def open_for(agent: str) -> Nous:
        return Nous(settings, database_url=database_url, agent_id=agent, embedding_provider=provider)

    async with Client(create_mcp_server(lambda: open_for("agent-a"))) as a:
        assert {t.name for t in (await a.list_tools()).tools} == TOOLS
        stored = _data(await a.call_tool("remember", {"content": "The staging cluster runs in eu-west-1"}))
        assert stored["status"] == "created"
        again = _data(await a.call_tool("remember", {"content": "The staging cluster runs in eu-west-1"}))
        assert again["status"] == "duplicate" and again["existing_id"] == stored["id"]
        hits = _data(await a.call_tool("recall", {"query": "where does staging run?", "limit": 3}))
        assert hits[0]["id"] == stored["id"] and 0 < hits[0]["score"] <= 1 and hits[0]["current"]
        assert hits[0]["at"]  # every result is dated
        strict = await a.call_tool("recall", {"query": "where does staging run?", "min_score": 1.0})
        assert _data(strict) == []
        decision = _data(
            await a.call_tool(
                "record_decision",
                {
                    "description": "Keep staging in eu-west-1",
                    "confidence": 0.8,
                    "reasons": [{"type": "empirical", "text": "latency to users is lowest"}],
                },
            )
        )
        assert decision["type"] == "decision" and decision["at"]
        assert decision["reasons"] == [{"type": "empirical", "text": "latency to users is lowest"}]
        similar = _data(
            await a.call_tool("check_similar", {"content": "The staging cluster runs in eu-west-1"})
        )
        assert similar["recommendation"] == "duplicate_found"
        verdict = _data(await a.call_tool("check_action", {"action": "restart the staging cluster"}))
        assert verdict["decision"] == "allow"
        turn = _data(
            await a.call_tool("context", {"session_id": "m1", "user_text": "Where does staging run?"})
        )
        assert "eu-west-1" in turn["context"] and turn["tokens"] <= turn["budget"]
        assert {"id": stored["id"], "type": "fact", "section": "facts"} in turn["memories"]
        window = {"query": "where does staging run?", "since": "2020-01-01", "until": "2100-01-01T00:00:00Z"}
        assert stored["id"] in {h["id"] for h in _data(await a.call_tool("recall", window))}
        later = _data(await a.call_tool("recall", {**window, "since": "2099-01-01T00:00:00Z"}))
        assert later == []
        not_a_time = await a.call_tool("recall", {**window, "since": "last tuesday"})
        assert not_a_time.is_error and "since" in _text(not_a_time)
        recent = _data(await a.call_tool("recall_recent", {"limit": 5}))
        assert isinstance(recent, list)
        await a.call_tool("remember", {"content": "Staging moved from us-east-1 to eu-west-1 in March"})
        async with open_for("agent-a") as engine:
            await engine.build_threads()
        story = _data(await a.call_tool("timeline", {"topic": "where does staging run?"}))
        assert story and any("eu-west-1" in line for line in story[0]["lines"])
        assert all(line[:4].isdigit() for line in story[0]["lines"])  # dated lines, oldest first
        dates = [line[:16] for line in story[0]["lines"]]
        assert dates == sorted(dates)
        bad = await a.call_tool("remember", {"content": "   "})
        assert bad.is_error and "empty" in _text(bad)
        forgotten = _data(await a.call_tool("forget", {"memory_id": stored["id"]}))
        assert forgotten["active"] is False
    async with Client(create_mcp_server(lambda: open_for("agent-b"))) as b:
        assert _data(await b.call_tool("recall", {"query": "where does staging run?"})) == []
        missing = await b.call_tool("forget", {"memory_id": stored["id"]})
        assert missing.is_error  # another agent's memory is not found


async def test_nous_mcp_over_stdio(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    env |= {"NOUS_HOME": str(tmp_path / "home"), "NOUS_EVENTS_WORKER": "off"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "nous", "--agent", "desk", "mcp"], env=env
    )
    async with Client(params, read_timeout_seconds=120) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        stored = _data(await client.call_tool("remember", {"content": "Prefers answers as bullet points"}))
        assert stored["status"] == "created"
        hits = _data(await client.call_tool("recall", {"query": "how should answers be formatted?"}))
        assert hits and hits[0]["id"] == stored["id"]
    async with Nous(Settings(home=tmp_path / "home", events_worker="off"), agent_id="desk") as nous:
        assert [m.content for m in await nous.memories("fact")] == ["Prefers answers as bullet points"]


async def test_every_tool_of_agent_b_is_blind_to_agent_a(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    """One table over every MCP tool: B's tools never read, find, infer or change A's memory."""

    def open_for(agent: str) -> Nous:
        return Nous(settings, database_url=database_url, agent_id=agent, embedding_provider=provider)

    secret = "Agent A's launch code name is Bluebird"
    async with Client(create_mcp_server(lambda: open_for("agent-a"))) as a:
        stored = _data(await a.call_tool("remember", {"content": secret}))
        await a.call_tool("record_decision", {"description": "Launch Bluebird on Friday", "confidence": 0.9})
    calls: list[tuple[str, dict[str, Any]]] = [
        ("recall", {"query": "launch code name"}),
        ("recall_recent", {"limit": 20}),
        ("timeline", {"topic": "the launch code name", "threads": 5}),
        ("check_similar", {"content": secret}),
        ("context", {"session_id": "b1", "user_text": "What is the launch code name?"}),
        ("check_action", {"action": "announce the Bluebird launch"}),
        ("forget", {"memory_id": stored["id"]}),
        ("reply", {"session_id": "b1", "text": "I do not know a launch code name."}),
        ("end_session", {"session_id": "b1"}),
        ("create_censor", {"pattern": "announce\\s+launches", "reason": "B rule", "action": "block"}),
        ("remember", {"content": "Agent B keeps its own notes"}),
        ("record_decision", {"description": "B decides alone", "confidence": 0.5}),
    ]
    async with Client(create_mcp_server(lambda: open_for("agent-b"))) as b:
        assert {name for name, _ in calls} == TOOLS
        for name, args in calls:
            result = await b.call_tool(name, args)
            shown = json.dumps(result.structured_content) + _text(result)
            assert ("Bluebird" not in shown and stored["id"] not in shown) or result.is_error, name
            if name == "check_similar":
                assert _data(result)["recommendation"] == "unique"
            if name == "forget":
                assert result.is_error  # A's memory is not B's to forget
    async with open_for("agent-a") as nous:
        assert (await nous.get(stored["id"])).active  # untouched
