"""Any OpenAI-compatible chat-completions API: OpenAI, Ollama, vLLM, llama.cpp server, LiteLLM."""

from __future__ import annotations

import json
import time
from typing import Any

from nous.config import Settings
from nous.errors import LLMError
from nous.llm.base import ChatMessage, Completion, LLMProvider, TextSink, ToolCall, ToolSpec
from nous.llm.http import HTTPChat, WholeReply

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_BASE = "https://api.openai.com/v1"


class OpenAIChatProvider(LLMProvider):
    """POSTs to ``{NOUS_LLM_API_BASE}/chat/completions``."""

    name = "openai"

    def __init__(self, settings: Settings | None = None) -> None:
        settings = settings or Settings()
        self.model = settings.llm_model or DEFAULT_MODEL
        headers = {"Content-Type": "application/json"}
        if settings.llm_api_key:
            headers["Authorization"] = f"Bearer {settings.llm_api_key}"
        self._http = HTTPChat(
            settings.llm_api_base or DEFAULT_BASE, headers, settings.llm_timeout_s, "chat API"
        )

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int = 1024,
        json_mode: bool = False,
        tools: list[ToolSpec] | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        body: dict[str, object] = {
            "model": self.model,
            "messages": [_wire(m) for m in messages],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in tools
            ]
        if on_text is not None:
            return await self._stream(body, on_text)
        data, latency = await self._http.post("/chat/completions", body)
        return self._completion(data, latency)

    def _completion(self, data: dict[str, Any], latency: float) -> Completion:
        """A whole (not streamed) chat-completions answer."""
        try:
            message = data["choices"][0]["message"]
            text = message.get("content") or ""
            usage = data.get("usage") or {}
            if not isinstance(text, str):
                raise TypeError("content is not text")
            calls = [
                ToolCall(
                    id=c["id"],
                    name=c["function"]["name"],
                    arguments=parse_arguments(c["function"].get("arguments")),
                )
                for c in message.get("tool_calls") or []
            ]
            return Completion(
                text=text,
                tool_calls=calls,
                model=str(data.get("model") or self.model),
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
                latency_ms=latency,
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise LLMError(f"chat API at {self._http.base_url} sent an unexpected reply: {exc}") from exc

    async def _stream(self, body: dict[str, object], on_text: TextSink) -> Completion:
        """``stream: true``: text deltas go to ``on_text``; tool-call pieces are put together by index."""
        started = time.perf_counter()
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage: dict[str, Any] = {}
        model = self.model
        try:
            async for event in self._http.events(
                "/chat/completions", {**body, "stream": True, "stream_options": {"include_usage": True}}
            ):
                if isinstance(event, WholeReply):  # the server ignored stream: true
                    whole = self._completion(event.data, (time.perf_counter() - started) * 1000)
                    if whole.text:
                        await on_text(whole.text)
                    return whole
                model = str(event.get("model") or model)
                usage = event.get("usage") or usage
                for choice in event.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        text.append(delta["content"])
                        await on_text(delta["content"])
                    for piece in delta.get("tool_calls") or []:
                        call = calls.setdefault(
                            int(piece.get("index", 0)), {"id": "", "name": "", "arguments": ""}
                        )
                        call["id"] = piece.get("id") or call["id"]
                        function = piece.get("function") or {}
                        call["name"] += function.get("name") or ""
                        call["arguments"] += function.get("arguments") or ""
            return Completion(
                text="".join(text),
                tool_calls=[
                    ToolCall(id=c["id"], name=c["name"], arguments=parse_arguments(c["arguments"]))
                    for _, c in sorted(calls.items())
                ],
                model=model,
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
                latency_ms=(time.perf_counter() - started) * 1000,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise LLMError(f"chat API at {self._http.base_url} streamed an unexpected reply: {exc}") from exc

    async def aclose(self) -> None:
        await self._http.aclose()


def wire_tool_calls(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """Tool calls in the chat-completions shape (arguments as a JSON string)."""
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
        for c in calls
    ]


def _wire(m: ChatMessage) -> dict[str, object]:
    """A message in the chat-completions shape (tool calls and tool results included)."""
    out: dict[str, object] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = wire_tool_calls(m.tool_calls)
    if m.tool_call_id:
        out["tool_call_id"] = m.tool_call_id
    return out


def parse_arguments(raw: object) -> dict[str, object]:
    """A tool call's arguments (a JSON object, or its text); ValueError if they are not one."""
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"tool arguments are not JSON: {exc}") from exc
    if not isinstance(parsed, dict):
        raise ValueError("tool arguments are not a JSON object")
    return parsed
