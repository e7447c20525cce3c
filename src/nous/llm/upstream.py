"""The model behind ``nous serve``'s OpenAI-compatible proxy, spoken to in OpenAI's wire format.

An OpenAI-compatible server (OpenAI, Ollama, vLLM, llama.cpp, LiteLLM) gets the caller's request
as sent (with the memory context added by the proxy) and its answer comes back as sent: tool
calls, extra fields and stream chunks pass through. Anthropic's Messages API is translated: the
request into messages and tools, the answer into a chat completion (streamed as text chunks,
then one chunk with the tool calls and the finish reason).
"""

from __future__ import annotations

import json
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Literal

import httpx

from nous.config import Settings
from nous.errors import LLMError
from nous.llm.base import ChatMessage, Completion, ToolCall, ToolSpec
from nous.llm.openai import parse_arguments, wire_tool_calls

OPENAI_BASE = "https://api.openai.com/v1"
Chunk = dict[str, Any]
# OpenAI's roles as Nous's chat roles: a developer message is the caller's instructions
ROLES: dict[str, Literal["system", "user", "assistant", "tool"]] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}


class UpstreamError(Exception):
    """The upstream refused or failed: its HTTP status and its error body in OpenAI's shape."""

    def __init__(self, status: int, message: str, *, kind: str = "upstream_error", body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.body = body if _is_openai_error(body) else error_body(message, kind)


def error_body(
    message: str, kind: str, *, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code or kind}}


def _is_openai_error(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("error"), dict) and "message" in body["error"]


class Upstream(ABC):
    """A chat model taking and answering OpenAI chat-completions requests."""

    model: str

    @abstractmethod
    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """The chat completion for ``body`` (``stream`` is false)."""

    @abstractmethod
    def stream(self, body: dict[str, Any]) -> Any:
        """An async context manager yielding an async iterator of chunks: entering it sends the
        request and raises UpstreamError if the upstream refuses, before any chunk is read."""

    @abstractmethod
    async def models(self) -> dict[str, Any]:
        """``GET /models``: a list object of the models the upstream serves."""

    async def aclose(self) -> None:  # noqa: B027 - nothing to release by default
        """Release connections."""


class OpenAICompatible(Upstream):
    """``{NOUS_LLM_API_BASE}/chat/completions`` and ``/models``, request and answer as sent."""

    def __init__(self, settings: Settings) -> None:
        self.model = settings.llm_model or ""
        self.base_url = (settings.llm_api_base or OPENAI_BASE).rstrip("/")
        headers = {"Content-Type": "application/json"}
        if settings.llm_api_key:
            headers["Authorization"] = f"Bearer {settings.llm_api_key}"
        self.client = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=settings.llm_timeout_s
        )

    def _with_model(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("model") or not self.model:
            return body
        return {**body, "model": self.model}

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        with _transport_errors(self.base_url):
            response = await self.client.post("/chat/completions", json=self._with_model(body))
        return self._answer(response, "a reply")

    def _answer(self, response: httpx.Response, what: str) -> dict[str, Any]:
        """A non-streamed answer's JSON object; its error status, or a 502 for a body that is
        not a JSON object, as UpstreamError."""
        data = _json_or_none(response.content)
        if response.status_code != 200:
            raise UpstreamError(response.status_code, _message(response.status_code, data), body=data)
        if not isinstance(data, dict):
            raise UpstreamError(502, f"the model at {self.base_url} sent {what} that is not a JSON object")
        return data

    @asynccontextmanager
    async def stream(self, body: dict[str, Any]) -> AsyncIterator[AsyncIterator[Chunk]]:
        request = self.client.build_request("POST", "/chat/completions", json=self._with_model(body))
        with _transport_errors(self.base_url):
            response = await self.client.send(request, stream=True)
        try:
            if response.status_code != 200:
                with _transport_errors(self.base_url):
                    data = _json_or_none(await response.aread())
                raise UpstreamError(response.status_code, _message(response.status_code, data), body=data)
            yield self._chunks(response)
        finally:
            await response.aclose()

    async def _chunks(self, response: httpx.Response) -> AsyncIterator[Chunk]:
        with _transport_errors(self.base_url):
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    return
                chunk = _json_or_none(payload.encode())
                if not isinstance(chunk, dict):
                    raise UpstreamError(502, f"the model at {self.base_url} streamed a line that is not JSON")
                yield chunk

    async def models(self) -> dict[str, Any]:
        with _transport_errors(self.base_url):
            response = await self.client.get("/models")
        return self._answer(response, "a model list")

    async def aclose(self) -> None:
        await self.client.aclose()


class Translated(Upstream):
    """A provider of Nous's own interface (Anthropic): the request becomes chat messages and tool
    specs, the answer a chat completion in OpenAI's shape."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.model = str(provider.model)

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        messages, tools, max_tokens = _from_openai(body)
        answer = await self._call(messages, tools=tools, max_tokens=max_tokens)
        return completion_object(answer, model=answer.model or self.model)

    @asynccontextmanager
    async def stream(self, body: dict[str, Any]) -> AsyncIterator[AsyncIterator[Chunk]]:
        messages, tools, max_tokens = _from_openai(body)
        yield self._chunks(messages, tools, max_tokens)

    async def _chunks(
        self, messages: list[ChatMessage], tools: list[ToolSpec], max_tokens: int
    ) -> AsyncIterator[Chunk]:
        ident, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
        pieces: list[str] = []

        async def collect(text: str) -> None:
            pieces.append(text)

        # the provider hands over text as it streams; it is relayed after the call returns, since
        # an async generator cannot yield from inside the provider's callback
        answer = await self._call(messages, tools=tools, max_tokens=max_tokens, on_text=collect)
        for text in pieces:
            yield _chunk(ident, created, answer.model, {"content": text}, None)
        finish = "tool_calls" if answer.tool_calls else "stop"
        calls = [{"index": i, **call} for i, call in enumerate(wire_tool_calls(answer.tool_calls))]
        yield _chunk(ident, created, answer.model, {"tool_calls": calls} if calls else {}, finish)

    async def _call(self, messages: list[ChatMessage], **options: Any) -> Completion:
        try:
            answer: Completion = await self.provider.complete(messages, **options)
        except LLMError as exc:
            status = 504 if "timed out" in str(exc) else 502
            raise UpstreamError(
                status, str(exc), kind="timeout" if status == 504 else "upstream_error"
            ) from exc
        return answer

    async def models(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": self.model, "object": "model", "owned_by": self.provider.name}],
        }

    async def aclose(self) -> None:
        await self.provider.aclose()


def create_upstream(settings: Settings) -> Upstream | None:
    """The proxy's model from ``NOUS_LLM_PROVIDER``: None when no model is configured (offline)."""
    if settings.llm_provider == "offline":
        return None
    if settings.llm_provider == "openai":
        return OpenAICompatible(settings)
    from nous.llm.registry import create_llm_provider

    return Translated(create_llm_provider(settings))


def completion_object(answer: Completion, *, model: str) -> dict[str, Any]:
    """A ``Completion`` as OpenAI's ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if answer.tool_calls:
        message["tool_calls"] = wire_tool_calls(answer.tool_calls)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if answer.tool_calls else "stop"}
        ],
        "usage": {
            "prompt_tokens": answer.input_tokens,
            "completion_tokens": answer.output_tokens,
            "total_tokens": answer.input_tokens + answer.output_tokens,
        },
    }


def _chunk(ident: str, created: int, model: str, delta: dict[str, Any], finish: str | None) -> Chunk:
    return {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def text_of(content: Any) -> str:
    """A message's text: its string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _from_openai(body: dict[str, Any]) -> tuple[list[ChatMessage], list[ToolSpec], int]:
    """An OpenAI request as Nous chat messages, tool specs and the reply's token cap."""
    messages: list[ChatMessage] = []
    for m in body.get("messages") or []:
        role = ROLES.get(str(m.get("role")))
        if role is None:
            raise UpstreamError(400, f"unknown message role {m.get('role')!r}", kind="invalid_request_error")
        calls = [
            ToolCall(
                id=str(c.get("id", "")),
                name=str((c.get("function") or {}).get("name", "")),
                arguments=_arguments((c.get("function") or {}).get("arguments")),
            )
            for c in m.get("tool_calls") or []
        ]
        messages.append(
            ChatMessage(
                role=role,
                content=text_of(m.get("content")),
                tool_calls=calls,
                tool_call_id=m.get("tool_call_id"),
            )
        )
    tools = [
        ToolSpec(
            name=str(t["function"]["name"]),
            description=str(t["function"].get("description", "")),
            parameters=t["function"].get("parameters") or {"type": "object", "properties": {}},
        )
        for t in body.get("tools") or []
        if isinstance(t, dict) and isinstance(t.get("function"), dict)
    ]
    cap = body.get("max_completion_tokens") or body.get("max_tokens") or 1024
    return messages, tools, int(cap)


def _arguments(raw: Any) -> dict[str, Any]:
    """A caller's tool-call arguments; text that is not a JSON object is kept as sent under
    ``_raw`` (the caller's history is relayed, not judged)."""
    try:
        return dict(parse_arguments(raw))
    except ValueError:
        return {"_raw": raw}


def _json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _message(status: int, data: Any) -> str:
    if _is_openai_error(data):
        return str(data["error"]["message"])
    return f"the model answered {status}"


@contextmanager
def _transport_errors(base_url: str) -> Iterator[None]:
    """Timeouts as 504 and unreachable upstreams as 502, in OpenAI's error shape."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise UpstreamError(504, f"the model at {base_url} timed out", kind="timeout") from exc
    except httpx.HTTPError as exc:
        raise UpstreamError(
            502, f"the model at {base_url} is unreachable: {exc}", kind="upstream_unreachable"
        ) from exc
