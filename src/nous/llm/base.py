"""The language-model provider interface: chat messages in, text out, with token usage."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ToolCall(BaseModel):
    """A tool the model asked to run."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolSpec(BaseModel):
    """A tool offered to the model: its name, what it does, its JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


class ChatMessage(BaseModel):
    """One message. An assistant message may carry tool calls; a ``tool`` message answers one."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None


class Completion(BaseModel):
    """One model reply and what it cost (and the tools it asked for, when tools were offered)."""

    text: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    model: str
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    latency_ms: float = Field(default=0.0, ge=0)


TextSink = Callable[[str], Awaitable[None]]  # receives the reply's text as it streams


class LLMProvider(ABC):
    """A chat model. ``available`` is False for the offline provider: callers then use their
    deterministic path instead of calling ``complete``."""

    name: str = "llm"
    model: str = ""
    available: bool = True

    @abstractmethod
    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int = 1024,
        json_mode: bool = False,
        tools: list[ToolSpec] | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        """The model's reply to ``messages`` (with ``on_text``, streamed: each piece of text is
        handed over as it arrives, and the whole reply is still returned). Raises LLMError on timeouts, refusals (429, 5xx),
        unreachable servers and malformed protocol replies."""

    async def aclose(self) -> None:  # noqa: B027 - providers without connections need nothing
        """Release connections."""
