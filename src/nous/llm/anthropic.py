"""Anthropic's Messages API (``POST /v1/messages``)."""

from __future__ import annotations

import json
import time
from typing import Any

from nous.config import Settings
from nous.errors import LLMError
from nous.llm.base import ChatMessage, Completion, LLMProvider, TextSink, ToolCall, ToolSpec
from nous.llm.http import HTTPChat, WholeReply

DEFAULT_MODEL = "claude-3-5-haiku-latest"
DEFAULT_BASE = "https://api.anthropic.com/v1"
API_VERSION = "2023-06-01"


class AnthropicProvider(LLMProvider):
    """System messages go in the request's ``system`` field; the rest alternate user/assistant."""

    name = "anthropic"

    def __init__(self, settings: Settings | None = None) -> None:
        settings = settings or Settings()
        self.model = settings.llm_model or DEFAULT_MODEL
        headers = {"Content-Type": "application/json", "anthropic-version": API_VERSION}
        if settings.llm_api_key:
            headers["x-api-key"] = settings.llm_api_key
        self._http = HTTPChat(
            settings.llm_api_base or DEFAULT_BASE, headers, settings.llm_timeout_s, "Messages API"
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
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        if json_mode:
            system = (system + "\n\nAnswer with one JSON object and nothing else.").strip()
        body: dict[str, object] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": _wire([m for m in messages if m.role != "system"]),
            "temperature": 0,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
        if on_text is not None:
            return await self._stream(body, on_text)
        data, latency = await self._http.post("/messages", body)
        return self._completion(data, latency)

    def _completion(self, data: dict[str, Any], latency: float) -> Completion:
        """A whole (not streamed) Messages answer."""
        try:
            blocks = data["content"]
            text = "".join(b["text"] for b in blocks if b.get("type") == "text")
            calls = [
                ToolCall(id=b["id"], name=b["name"], arguments=dict(b.get("input") or {}))
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            usage = data.get("usage") or {}
            return Completion(
                text=text,
                tool_calls=calls,
                model=str(data.get("model") or self.model),
                input_tokens=int(usage.get("input_tokens") or 0),
                output_tokens=int(usage.get("output_tokens") or 0),
                latency_ms=latency,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise LLMError(f"Messages API at {self._http.base_url} sent an unexpected reply: {exc}") from exc

    async def _stream(self, body: dict[str, object], on_text: TextSink) -> Completion:
        """``stream: true``: text deltas go to ``on_text``; tool inputs are put together from their
        JSON pieces per content block."""
        started = time.perf_counter()
        text: list[str] = []
        blocks: dict[int, dict[str, Any]] = {}
        model, tokens_in, tokens_out = self.model, 0, 0
        try:
            async for event in self._http.events("/messages", {**body, "stream": True}):
                if isinstance(event, WholeReply):  # the server ignored stream: true
                    whole = self._completion(event.data, (time.perf_counter() - started) * 1000)
                    if whole.text:
                        await on_text(whole.text)
                    return whole
                kind = event.get("type")
                if kind == "message_start":
                    message = event.get("message") or {}
                    model = str(message.get("model") or model)
                    tokens_in = int((message.get("usage") or {}).get("input_tokens") or 0)
                elif kind == "content_block_start":
                    blocks[int(event["index"])] = {**event["content_block"], "partial": ""}
                elif kind == "content_block_delta":
                    delta = event["delta"]
                    if delta.get("type") == "text_delta":
                        text.append(delta["text"])
                        await on_text(delta["text"])
                    elif delta.get("type") == "input_json_delta":
                        blocks[int(event["index"])]["partial"] += delta.get("partial_json") or ""
                elif kind == "message_delta":
                    tokens_out = int((event.get("usage") or {}).get("output_tokens") or tokens_out)
                elif kind == "error":
                    raise LLMError(
                        f"Messages API at {self._http.base_url} streamed an error: {event.get('error')}"
                    )
            calls = [
                ToolCall(
                    id=b["id"], name=b["name"], arguments=json.loads(b["partial"]) if b["partial"] else {}
                )
                for _, b in sorted(blocks.items())
                if b.get("type") == "tool_use"
            ]
            return Completion(
                text="".join(text),
                tool_calls=calls,
                model=model,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                latency_ms=(time.perf_counter() - started) * 1000,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise LLMError(
                f"Messages API at {self._http.base_url} streamed an unexpected reply: {exc}"
            ) from exc

    async def aclose(self) -> None:
        await self._http.aclose()


def _wire(messages: list[ChatMessage]) -> list[dict[str, object]]:
    """Messages in the Messages API shape: tool calls as ``tool_use`` blocks of the assistant,
    tool results as ``tool_result`` blocks of a user message (consecutive results merged)."""
    out: list[dict[str, object]] = []
    for m in messages:
        if m.role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            last = out[-1] if out else None
            if last is not None and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.tool_calls:
            blocks: list[dict[str, object]] = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": m.role, "content": m.content})
    return out
