"""NousSession under the real OpenAI Agents SDK: ``Runner.run`` with a chat-completions model
served on loopback (tests/llm_servers.py), two runs of one session, on both backends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI

from nous import Nous
from nous.integrations.openai_agents import NousSession
from tests.llm_servers import ChatServer, Reply

NO_TRACING = RunConfig(tracing_disabled=True)  # the SDK would otherwise export traces to OpenAI


@function_tool
def local_time() -> str:
    """The current local time."""
    return "12:00"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    chat = ChatServer("openai")
    yield chat
    chat.close()


def agent_on(server: ChatServer) -> Agent[Any]:
    model = OpenAIChatCompletionsModel(
        model="loopback", openai_client=AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)
    )
    return Agent(name="assistant", instructions="Be brief.", model=model, tools=[local_time])


def said(request: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of every message the model was sent, tool calls as their function names."""
    out = []
    for m in request["body"]["messages"]:
        text = m.get("content") or ",".join(c["function"]["name"] for c in m.get("tool_calls", []))
        out.append((m["role"], text if isinstance(text, str) else json.dumps(text)))
    return out


async def test_a_session_remembers_across_runs_and_is_summarised_when_cleared(
    nous: Nous, server: ChatServer
) -> None:
    server.script = [
        Reply(tool_calls=[("local_time", {})]),
        Reply("It is noon, and noted: you drink green tea."),
        Reply("You drink green tea."),
    ]
    agent = agent_on(server)
    first = NousSession(nous, "chat-1", user_id="alice")
    run1 = await Runner.run(
        agent, "I drink green tea every morning. What time is it?", session=first, run_config=NO_TRACING
    )
    assert run1.final_output == "It is noon, and noted: you drink green tea."
    assert first.context is not None and first.context.turn == 1  # pre_turn ran for the message
    items_after_run1 = await first.get_items()
    assert [i.get("type", "message") for i in items_after_run1] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]

    # A second run through a new NousSession object (as in a new process) sees the whole history.
    again = NousSession(nous, "chat-1", user_id="alice")
    assert await again.get_items() == items_after_run1
    assert await again.get_items(limit=2) == items_after_run1[-2:]
    run2 = await Runner.run(agent, "What do I drink?", session=again, run_config=NO_TRACING)
    assert run2.final_output == "You drink green tea."
    sent = said(server.requests[-1])
    assert ("user", "I drink green tea every morning. What time is it?") in sent
    assert ("assistant", "local_time") in sent
    assert ("assistant", "It is noon, and noted: you drink green tea.") in sent
    assert sent[-1] == ("user", "What do I drink?")

    # Nous holds the conversation as turns of one session, with the tool the agent used.
    state = await nous.session("chat-1")
    assert state.turn_count == 2 and state.user_id == "alice" and state.tools_used == ["local_time"]
    turns = await nous.memories("turn", session_id="chat-1")
    assert sorted(t.content for t in turns) == [
        "assistant: It is noon, and noted: you drink green tea.",
        "assistant: You drink green tea.",
        "user: I drink green tea every morning. What time is it?",
        "user: What do I drink?",
    ]
    assert len(await again.get_items()) == 6

    # Popping takes the latest item off the SDK's history, for every later reader too.
    popped = await again.pop_item()
    assert popped is not None and popped.get("role") == "assistant"
    assert len(await NousSession(nous, "chat-1").get_items()) == 5

    # Clearing ends the session: its episode closes and the pipeline summarises it.
    await again.clear_session()
    assert (await nous.session("chat-1")).ended
    assert await NousSession(nous, "chat-1").get_items() == []
    await nous.process_events()
    episodes = await nous.memories("episode", session_id="chat-1")
    assert len(episodes) == 1 and getattr(episodes[0], "summary", None)

    # The conversation goes on in the next Nous session of the same SDK session.
    server.script = [Reply("Hello again.")]
    await Runner.run(agent, "Hi, it's me again", session=again, run_config=NO_TRACING)
    assert (await nous.session("chat-1~2")).turn_count == 1
    assert [i.get("role") for i in await NousSession(nous, "chat-1").get_items()] == ["user", "assistant"]


async def test_ending_keeps_the_history_and_the_next_message_opens_a_new_nous_session(
    nous: Nous, server: ChatServer
) -> None:
    server.script = [Reply("Noted.")]
    agent = agent_on(server)
    session = NousSession(nous, "chat-2")
    await Runner.run(agent, "Our deploys happen on Tuesdays", session=session, run_config=NO_TRACING)
    ended = await session.end(reflection="Ask before deploying on another day")
    assert ended is not None and ended.session.ended
    assert [f.memory.content for f in ended.facts] == ["Ask before deploying on another day"]
    assert await session.end() is None  # nothing live any more
    server.script = [Reply("On Tuesdays.")]
    await Runner.run(agent, "When do we deploy?", session=session, run_config=NO_TRACING)
    assert [i.get("role") for i in await session.get_items()] == ["user", "assistant"] * 2
    assert (await nous.session("chat-2~2")).turn_count == 1
    assert ("user", "Our deploys happen on Tuesdays") in said(server.requests[-1])
