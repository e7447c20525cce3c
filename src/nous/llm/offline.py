"""The default provider: no language model at all, and no network. Summaries and extraction use
their deterministic offline path."""

from __future__ import annotations

from nous.config import Settings
from nous.errors import LLMError
from nous.llm.base import ChatMessage, Completion, LLMProvider, TextSink, ToolSpec


class OfflineProvider(LLMProvider):
    name = "offline"
    model = "offline"
    available = False

    def __init__(self, settings: Settings | None = None) -> None:
        pass

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int = 1024,
        json_mode: bool = False,
        tools: list[ToolSpec] | None = None,
        on_text: TextSink | None = None,
    ) -> Completion:
        raise LLMError("no language model is configured (NOUS_LLM_PROVIDER=offline)")
