"""The OpenAI-compatible and Anthropic adapters against real HTTP servers on loopback: replies,
usage, structured output with one repair, and every failure as a typed LLMError."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from nous import Settings
from nous.errors import LLMError, LLMOutputError
from nous.llm import ChatMessage, Completion, LLMProvider, complete_structured, create_llm_provider
from tests.llm_servers import ChatServer, Reply


class Verdict(BaseModel):
    title: str
    score: int


@pytest.fixture(params=["openai", "anthropic"])
def server(request: pytest.FixtureRequest) -> Iterator[ChatServer]:
    s = ChatServer(request.param)
    yield s
    s.close()


def provider_for(server: ChatServer, timeout_s: float = 5.0) -> LLMProvider:
    return create_llm_provider(
        Settings(
            llm_provider=server.protocol,
            llm_model="test-model",
            llm_api_base=server.url,
            llm_api_key="sk-test",
            llm_timeout_s=timeout_s,
        )
    )


MESSAGES = [
    ChatMessage(role="system", content="You summarise conversations."),
    ChatMessage(role="user", content="Summarise: we chose Kafka for billing."),
]


async def test_a_reply_with_its_usage_and_the_protocols_own_fields(server: ChatServer) -> None:
    server.script = [Reply("Kafka was chosen for billing.")]
    provider = provider_for(server)
    done = await provider.complete(MESSAGES, max_tokens=50)
    assert done.text == "Kafka was chosen for billing." and done.model == "test-model"
    assert done.input_tokens > 0 and done.output_tokens == 5 and done.latency_ms > 0
    (request,) = server.requests
    body, headers = request["body"], {k.lower(): v for k, v in request["headers"].items()}
    if server.protocol == "openai":
        assert request["path"] == "/v1/chat/completions" and headers["authorization"] == "Bearer sk-test"
        assert [m["role"] for m in body["messages"]] == ["system", "user"] and body["max_tokens"] == 50
    else:
        assert request["path"] == "/v1/messages" and headers["x-api-key"] == "sk-test"
        assert headers["anthropic-version"] and body["system"] == "You summarise conversations."
        assert [m["role"] for m in body["messages"]] == ["user"] and body["max_tokens"] == 50
    await provider.aclose()


async def test_structured_output_is_validated_and_repaired_once(server: ChatServer) -> None:
    server.script = [
        Reply("Sure! Here it is: {not json"),
        Reply('```json\n{"title": "Kafka", "score": 3}\n```'),
    ]
    calls: list[tuple[Completion | None, bool]] = []

    async def sink(completion: Completion | None, ok: bool) -> None:
        calls.append((completion, ok))

    provider = provider_for(server)
    verdict = await complete_structured(provider, MESSAGES, Verdict, on_call=sink)
    assert verdict == Verdict(title="Kafka", score=3)
    assert [ok for _, ok in calls] == [False, True] and len(server.requests) == 2
    repair = server.requests[1]["body"]["messages"][-1]["content"]
    assert "not usable" in repair and "JSON" in repair
    await provider.aclose()


async def test_invalid_twice_is_an_output_error(server: ChatServer) -> None:
    server.script = [Reply('{"title": "Kafka"}'), Reply('{"title": "Kafka", "score": "high"}')]
    provider = provider_for(server)
    with pytest.raises(LLMOutputError, match="Verdict"):
        await complete_structured(provider, MESSAGES, Verdict)
    assert len(server.requests) == 2
    await provider.aclose()


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Reply(status=429), "429"),
        (Reply(status=500), "500"),
        (Reply(raw=b"<html>bad gateway</html>"), "not JSON"),
        (Reply(raw=json.dumps({"unexpected": True}).encode()), "unexpected reply"),
        (Reply("late", delay_s=1.5), "timed out"),
    ],
)
async def test_failures_are_typed_errors(server: ChatServer, reply: Reply, words: str) -> None:
    server.script = [reply]
    provider = provider_for(server, timeout_s=0.5)
    with pytest.raises(LLMError, match=words):
        await provider.complete(MESSAGES)
    await provider.aclose()


async def test_unreachable_server_and_unknown_provider_are_typed_errors() -> None:
    provider = create_llm_provider(Settings(llm_provider="openai", llm_api_base="http://127.0.0.1:9/v1"))
    with pytest.raises(LLMError, match="unreachable"):
        await provider.complete(MESSAGES)
    with pytest.raises(LLMError, match="unknown LLM provider"):
        create_llm_provider(Settings(llm_provider="nope"))
    offline = create_llm_provider(Settings())
    assert offline.available is False
    with pytest.raises(LLMError, match="offline"):
        await offline.complete(MESSAGES)


async def test_streaming_hands_over_text_as_it_comes_and_assembles_tool_calls(server: ChatServer) -> None:
    from nous.llm import ToolSpec

    server.script = [
        Reply(
            "Kafka keeps a replayable log.", tool_calls=[("recall", {"query": "billing broker", "limit": 3})]
        )
    ]
    pieces: list[str] = []

    async def sink(piece: str) -> None:
        pieces.append(piece)

    provider = provider_for(server)
    tool = ToolSpec(name="recall", description="search", parameters={"type": "object", "properties": {}})
    done = await provider.complete(MESSAGES, tools=[tool], on_text=sink)
    assert len(pieces) > 1 and "".join(pieces) == done.text == "Kafka keeps a replayable log."
    assert [(c.name, c.arguments) for c in done.tool_calls] == [
        ("recall", {"query": "billing broker", "limit": 3})
    ]
    assert server.requests[0]["body"]["stream"] is True
    await provider.aclose()
