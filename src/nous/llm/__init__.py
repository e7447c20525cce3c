"""Language-model providers: offline (the default, no network), OpenAI-compatible chat, Anthropic."""

from nous.llm.base import ChatMessage, Completion, LLMProvider, ToolCall, ToolSpec
from nous.llm.registry import available_llm_providers, create_llm_provider, register_llm_provider
from nous.llm.structured import complete_structured, parse_json_object

__all__ = [
    "ChatMessage",
    "Completion",
    "LLMProvider",
    "ToolCall",
    "ToolSpec",
    "available_llm_providers",
    "complete_structured",
    "create_llm_provider",
    "parse_json_object",
    "register_llm_provider",
]
