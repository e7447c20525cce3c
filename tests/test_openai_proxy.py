"""The OpenAI-compatible memory proxy (``POST /v1/chat/completions``, ``GET /v1/models``) driven by
the real OpenAI Python SDK against `nous serve` on loopback, on both backends, with a loopback
upstream (tests/llm_servers.py) that records what it received: the memory context is in the
request, the reply is stored, a second session recalls the first, streaming arrives in order, a
censored tool call comes back as the model's refusal, and upstream failures come back in OpenAI's
error shape with their status."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageFunctionToolCall

from nous import Nous, Settings
from nous.server import create_key
from tests.llm_servers import ChatServer, Reply
from tests.test_integrations_doc import PROXY_BLOCKS
from tests.test_server import LiveServer, live

MODEL = "loopback-model"


async def _keys(settings: Settings) -> dict[str, str]:
    async with Nous(settings) as nous:
        keys = {}
        for name, kw in {
            "a": {"agent_id": "agent-a"},
            "b": {"agent_id": "agent-b"},
            "alice": {"agent_id": "agent-a", "user_id": "alice"},
            "admin": {"agent_id": None, "admin": True},
        }.items():
            keys[name] = (await create_key(nous.store, **kw))[1]  # type: ignore[arg-type]
        return keys


@pytest.fixture
def upstream() -> Iterator[ChatServer]:
    server = ChatServer("openai")
    try:
        yield server
    finally:
        server.close()


def _run(database_url: str, settings: Settings, upstream_url: str, **extra: Any) -> Settings:
    return settings.model_copy(
        update={
            "database_url": database_url,
            "llm_provider": "openai",
            "llm_api_base": upstream_url,
            "llm_model": MODEL,
            **extra,
        }
    )


@pytest.fixture
def proxied(
    database_url: str, settings: Settings, upstream: ChatServer
) -> Iterator[tuple[LiveServer, dict[str, str], ChatServer]]:
    with live(_run(database_url, settings, upstream.url), _keys) as (server, keys):
        yield server, keys, upstream


def _sdk(server: LiveServer, key: str, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, default_headers=headers, max_retries=0)


def _rest(server: LiveServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


def _memory_of(request: dict[str, Any]) -> str:
    """The memory context the proxy added to a request the upstream received."""
    notes = [
        m["content"] for m in request["body"]["messages"] if str(m["content"]).startswith("Memory (Nous)")
    ]
    assert len(notes) == 1, request["body"]["messages"]
    return str(notes[0])


def test_the_reply_is_remembered_and_a_second_session_recalls_the_first(
    proxied: tuple[LiveServer, dict[str, str], ChatServer],
) -> None:
    server, keys, upstream = proxied
    upstream.script = [Reply("Noted: your cat is called Quillon."), Reply("Your cat is called Quillon.")]
    first = _sdk(server, keys["a"], **{"X-Nous-Session": "monday"}).chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "system", "content": "You are a terse assistant."},
            {"role": "user", "content": "Please remember that my cat is called Quillon."},
        ],
    )
    assert first.choices[0].message.content == "Noted: your cat is called Quillon."
    sent = upstream.requests[-1]["body"]["messages"]
    assert [m["role"] for m in sent] == ["system", "system", "user"]  # the caller's instructions first
    assert sent[0]["content"] == "You are a terse assistant." and sent[1]["content"].startswith(
        "Memory (Nous)"
    )
    assert upstream.requests[-1]["body"]["model"] == MODEL
    with _rest(server, keys["a"]) as rest:
        state = rest.get("/v1/sessions/monday").json()
        assert state["turn_count"] == 1  # the reply was recorded with post_turn
        turns = rest.get("/v1/memories", params={"type": "turn", "limit": 50}).json()["items"]
        assert any("Noted: your cat is called Quillon." in t["content"] for t in turns)
        # "Please remember that ..." is a fact as soon as the reply is recorded, not at session end.
        facts = rest.get("/v1/memories", params={"type": "fact"}).json()["items"]
        assert [f["content"] for f in facts] == ["The user's cat is called Quillon."]

    second = _sdk(server, keys["a"], **{"X-Nous-Session": "tuesday"}).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "What is my cat called?"}]
    )
    assert second.choices[0].message.content == "Your cat is called Quillon."
    assert "Quillon" in _memory_of(upstream.requests[-1])  # the second run recalls the first

    # another agent's requests carry nothing of agent-a's
    upstream.script = [Reply("I don't know.")]
    _sdk(server, keys["b"], **{"X-Nous-Session": "monday"}).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "What is my cat called?"}]
    )
    assert "Quillon" not in _memory_of(upstream.requests[-1])


def test_streaming_arrives_in_order_and_is_recorded(
    proxied: tuple[LiveServer, dict[str, str], ChatServer],
) -> None:
    server, keys, upstream = proxied
    upstream.script = [Reply("The deploy window is Tuesday at two")]
    stream = _sdk(server, keys["alice"], **{"X-Nous-Session": "s1"}).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "When is the deploy window?"}], stream=True
    )
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert pieces == [
        "The ",
        "deploy ",
        "window ",
        "is ",
        "Tuesday ",
        "at ",
        "two",
    ]  # as the upstream sent them
    assert upstream.requests[-1]["body"]["stream"] is True
    with _rest(server, keys["alice"]) as rest:
        assert rest.get("/v1/sessions/s1").json()["turn_count"] == 1
        turns = rest.get("/v1/memories", params={"type": "turn"}).json()["items"]
        assert any("The deploy window is Tuesday at two" in t["content"] for t in turns)
        assert all(t["user_id"] == "alice" for t in turns)  # the user-bound key's user


def test_a_retry_with_the_same_idempotency_key_gets_the_first_answer_and_stores_the_exchange_once(
    proxied: tuple[LiveServer, dict[str, str], ChatServer],
) -> None:
    """A client whose answer was lost sends the request again with the same Idempotency-Key: it gets
    the first answer (the model is not asked again) and the exchange is stored once; a model that
    failed is asked again; another request under the key is refused in OpenAI's shape."""
    server, keys, upstream = proxied
    upstream.script = [Reply(status=500), Reply("Your cat is called Quillon."), Reply("Asked twice!")]
    client = _sdk(server, keys["a"], **{"X-Nous-Session": "s1"})
    ask: list[Any] = [{"role": "user", "content": "My cat is called Quillon. What is my cat called?"}]
    keyed = {"Idempotency-Key": "retry-1"}
    with pytest.raises(openai.InternalServerError):  # the model failed: nothing kept, a retry runs again
        client.chat.completions.create(model=MODEL, messages=ask, extra_headers=keyed)
    first = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask, extra_headers=keyed)
    again = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask, extra_headers=keyed)
    assert first.parse().choices[0].message.content == "Your cat is called Quillon."
    assert again.parse().choices[0].message.content == "Your cat is called Quillon."
    assert "idempotent-replayed" not in first.headers and again.headers["idempotent-replayed"] == "true"
    assert len(upstream.requests) == 2  # the failure and the answer: the replay asked nothing

    streamed = {"Idempotency-Key": "retry-2"}
    upstream.script = [Reply("Quillon likes the sunny windowsill"), Reply("Asked twice!")]
    follow: list[Any] = [*ask, {"role": "assistant", "content": "Your cat is called Quillon."}]
    follow.append({"role": "user", "content": "Where does Quillon like to sleep?"})
    for _ in range(2):  # the second is the retry of a stream whose answer was lost
        stream = client.chat.completions.create(
            model=MODEL, messages=follow, stream=True, extra_headers=streamed
        )
        pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
        assert "".join(pieces) == "Quillon likes the sunny windowsill"
    assert len(upstream.requests) == 3

    with _rest(server, keys["a"]) as rest:
        assert rest.get("/v1/sessions/s1").json()["turn_count"] == 2
        turns = [
            t["content"]
            for t in rest.get("/v1/memories", params={"type": "turn", "limit": 50}).json()["items"]
        ]
    assert sum("What is my cat called?" in t for t in turns) == 1
    assert sum("Your cat is called Quillon." in t for t in turns) == 1
    assert sum("Quillon likes the sunny windowsill" in t for t in turns) == 1
    assert not any("Asked twice!" in t for t in turns)

    with pytest.raises(openai.BadRequestError) as reused:  # another request under a used key
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Something else"}], extra_headers=keyed
        )
    assert reused.value.body["code"] == "idempotency_key_reused"  # type: ignore[index]
    assert reused.value.body["param"] == "Idempotency-Key"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as invalid:
        client.chat.completions.create(
            model=MODEL, messages=ask, extra_headers={"Idempotency-Key": "has a space"}
        )
    assert invalid.value.body["code"] == "invalid_input"  # type: ignore[index]


def test_a_censored_tool_call_is_refused_and_an_allowed_one_passes_unchanged(
    proxied: tuple[LiveServer, dict[str, str], ChatServer],
) -> None:
    server, keys, upstream = proxied
    with _rest(server, keys["a"]) as rest:
        censor = rest.post(
            "/v1/memories",
            json={
                "type": "censor",
                "content": r"drop_database",
                "action": "block",
                "reason": "prod data is irreplaceable",
            },
        )
        assert censor.status_code == 201, censor.text
    tools: list[Any] = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
        for n in ("drop_database", "get_weather")
    ]
    client = _sdk(server, keys["a"], **{"X-Nous-Session": "ops"})
    ask: list[Any] = [{"role": "user", "content": "Clean up the production database"}]
    for stream in (False, True):
        upstream.script = [Reply("", tool_calls=[("drop_database", {"name": "prod"})])]
        if stream:
            chunks = list(client.chat.completions.create(model=MODEL, messages=ask, tools=tools, stream=True))
            deltas = [c.choices[0].delta for c in chunks if c.choices]
            assert not any(d.tool_calls for d in deltas)  # the call never reaches the caller
            refusal = "".join(d.refusal or "" for d in deltas)
            assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
        else:
            answer = client.chat.completions.create(model=MODEL, messages=ask, tools=tools)
            message = answer.choices[0].message
            assert message.tool_calls is None and answer.choices[0].finish_reason == "stop"
            refusal = message.refusal or ""
        assert "drop_database" in refusal and "prod data is irreplaceable" in refusal, refusal

        upstream.script = [Reply("", tool_calls=[("get_weather", {"city": "Porto"})])]
        weather: list[Any] = [{"role": "user", "content": "What's the weather in Porto?"}]
        if stream:
            chunks = list(
                client.chat.completions.create(model=MODEL, messages=weather, tools=tools, stream=True)
            )
            functions = [
                t.function
                for c in chunks
                if c.choices
                for t in c.choices[0].delta.tool_calls or []
                if t.function
            ]
            assert functions[0].name == "get_weather"
            assert "".join(f.arguments or "" for f in functions) == '{"city": "Porto"}'
        else:
            answer = client.chat.completions.create(model=MODEL, messages=weather, tools=tools)
            (call,) = answer.choices[0].message.tool_calls or []
            assert isinstance(call, ChatCompletionMessageFunctionToolCall)
            assert call.function.name == "get_weather" and call.function.arguments == '{"city": "Porto"}'
    # the tool's result continues the open turn: its context is previewed, the final reply recorded
    upstream.script = [Reply("It is sunny in Porto.")]
    final = client.chat.completions.create(
        model=MODEL,
        messages=[
            *weather,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_0", "content": "sunny, 24C"},
        ],
        tools=tools,
    )
    assert final.choices[0].message.content == "It is sunny in Porto."
    assert upstream.requests[-1]["body"]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "content": "sunny, 24C",
    }


def test_errors_come_back_in_the_openai_shape(
    database_url: str, settings: Settings, upstream: ChatServer
) -> None:
    ask: list[Any] = [{"role": "user", "content": "Hello there"}]
    # the timeout on a server of its own: the other checks keep the default, so a busy machine
    # cannot time them out; this one always does (the reply never comes within the limit)
    with live(_run(database_url, settings, upstream.url, llm_timeout_s=2.0), _keys) as (server, keys):
        upstream.script = [Reply("late", delay_s=60)]
        with pytest.raises(openai.APIStatusError) as slow:
            _sdk(server, keys["a"]).chat.completions.create(model=MODEL, messages=ask)
        assert slow.value.status_code == 504 and slow.value.body["type"] == "timeout"  # type: ignore[index]
    with live(_run(database_url, settings, upstream.url), _keys) as (server, keys):
        client = _sdk(server, keys["a"])
        upstream.script = [Reply(status=500)]
        with pytest.raises(openai.InternalServerError) as failed:
            client.chat.completions.create(model=MODEL, messages=ask)
        assert failed.value.status_code == 500 and "scripted failure" in failed.value.message
        upstream.script = [Reply(status=429)]
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model=MODEL, messages=ask, stream=True)
        for key in ("not-a-key", keys["admin"]):
            with pytest.raises(openai.AuthenticationError):
                _sdk(server, key).chat.completions.create(model=MODEL, messages=ask)
        with pytest.raises(openai.BadRequestError) as bad:
            client.chat.completions.create(model=MODEL, messages=[{"role": "assistant", "content": "hi"}])
        assert bad.value.body["param"] == "messages"  # type: ignore[index]
        with pytest.raises(openai.PermissionDeniedError):  # a user-bound key acts only as its user
            _sdk(server, keys["alice"]).chat.completions.create(model=MODEL, messages=ask, user="bob")
        assert [m.id for m in client.models.list()] == ["loopback-model"]
        deep = "[" * 100_000 + "]" * 100_000  # past the JSON parser's nesting bound
        with _rest(server, keys["a"]) as rest:
            nested = rest.post("/v1/chat/completions", content=f'{{"messages": {deep}}}'.encode())
        assert nested.status_code == 400, nested.text
        assert nested.json()["error"]["type"] == "invalid_request_error"

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    closed.close()  # nothing listens there
    with live(_run(database_url, settings, dead), _keys) as (server, keys):
        with pytest.raises(openai.APIStatusError) as unreachable:
            _sdk(server, keys["a"]).chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "Hi"}]
            )
        assert unreachable.value.status_code == 502
    offline = settings.model_copy(update={"database_url": database_url, "llm_provider": "offline"})
    with live(offline, _keys) as (server, keys):
        with pytest.raises(openai.InternalServerError) as missing:
            _sdk(server, keys["a"]).chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "Hi"}]
            )
        assert missing.value.status_code == 503 and "NOUS_LLM_PROVIDER" in missing.value.message


def test_the_proxy_runs_the_turn_loop_with_an_async_client(
    proxied: tuple[LiveServer, dict[str, str], ChatServer],
) -> None:
    server, keys, upstream = proxied
    upstream.script = [Reply("Sure.")]

    async def ask() -> str:
        client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=keys["a"], max_retries=0)
        async with client:
            answer = await client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "Let us plan the offsite"}], user="maya"
            )
            return answer.choices[0].message.content or ""

    assert asyncio.run(ask()) == "Sure."
    with _rest(server, keys["a"]) as rest:
        state = rest.get("/v1/sessions/chat-maya").json()  # no session header: one session per user
        assert state["turn_count"] == 1 and state["user_id"] == "maya"


def test_an_anthropic_upstream_is_translated(database_url: str, settings: Settings) -> None:
    messages_api = ChatServer("anthropic")
    run = settings.model_copy(
        update={
            "database_url": database_url,
            "llm_provider": "anthropic",
            "llm_api_base": messages_api.url,
            "llm_model": "claude-loopback",
        }
    )
    try:
        with live(run, _keys) as (server, keys):
            client = _sdk(server, keys["a"], **{"X-Nous-Session": "claude"})
            messages_api.script = [Reply("Hello from Claude.")]
            answer = client.chat.completions.create(
                model="claude-loopback",
                messages=[
                    {"role": "developer", "content": "Be brief."},
                    {"role": "user", "content": "Say hello"},
                ],
            )
            assert answer.choices[0].message.content == "Hello from Claude."
            sent = messages_api.requests[-1]["body"]
            assert "Be brief." in str(sent["system"]) and "Memory (Nous)" in str(sent["system"])
            messages_api.script = [Reply("Checking.", tool_calls=[("get_weather", {"city": "Porto"})])]
            tools: list[Any] = [
                {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
            ]
            called = client.chat.completions.create(
                model="claude-loopback",
                messages=[{"role": "user", "content": "Weather in Porto?"}],
                tools=tools,
            )
            (call,) = called.choices[0].message.tool_calls or []
            assert isinstance(call, ChatCompletionMessageFunctionToolCall)
            assert call.function.name == "get_weather" and called.choices[0].finish_reason == "tool_calls"
            messages_api.script = [Reply("Streaming works fine")]
            streamed = client.chat.completions.create(
                model="claude-loopback",
                messages=[{"role": "user", "content": "Stream something"}],
                stream=True,
            )
            text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
            assert text == "Streaming works fine"
            assert [m.id for m in client.models.list()] == ["claude-loopback"]
    finally:
        messages_api.close()


def test_the_integrations_page_proxy_example_runs_as_written(
    proxied: tuple[LiveServer, dict[str, str], ChatServer], tmp_path: Path
) -> None:
    """docs/integrations.md's proxy block, run in its own process with the SDK's own environment
    variables pointing at the server: the second conversation's request carries the first, and
    its keyed retry is answered without asking the model again."""
    server, keys, upstream = proxied
    ((line, code),) = PROXY_BLOCKS
    upstream.script = [Reply("Noted."), Reply("Quillon.")]
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOUS_", "OPENAI_"))}
    env.update(OPENAI_BASE_URL=f"{server.url}/v1", OPENAI_API_KEY=keys["a"])
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"integrations.md:{line} failed:\n{done.stderr[-3000:]}"
    assert done.stdout.split() == ["Noted.", "Quillon.", "Quillon."]  # the last one replayed
    asked = [r for r in upstream.requests if r["path"].endswith("/chat/completions")]
    assert len(asked) == 2  # the model was not asked the keyed question again
    assert "Quillon" in _memory_of(upstream.requests[-1])
