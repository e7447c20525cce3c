"""The language-model provider interface: chat messages in, text out, with token usage."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class Completion(BaseModel):
    """One model reply and what it cost."""

    text: str
    model: str
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    latency_ms: float = Field(default=0.0, ge=0)


class LLMProvider(ABC):
    """A chat model. ``available`` is False for the offline provider: callers then use their
    deterministic path instead of calling ``complete``."""

    name: str = "llm"
    model: str = ""
    available: bool = True

    @abstractmethod
    async def complete(
        self, messages: list[ChatMessage], *, max_tokens: int = 1024, json_mode: bool = False
    ) -> Completion:
        """The model's reply to ``messages``. Raises LLMError on timeouts, refusals (429, 5xx),
        unreachable servers and malformed protocol replies."""

    async def aclose(self) -> None:  # noqa: B027 - providers without connections need nothing
        """Release connections."""
