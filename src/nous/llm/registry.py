"""Plugin-style LLM provider registration (the ``nous.llm`` entry-point group), as for embeddings."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

from nous.config import Settings
from nous.errors import LLMError
from nous.llm.base import LLMProvider

LLMFactory = Callable[[Settings], LLMProvider]
_registry: dict[str, LLMFactory] = {}
BUILTIN = ("offline", "openai", "anthropic")


def register_llm_provider(name: str, factory: LLMFactory) -> None:
    """Make ``NOUS_LLM_PROVIDER=name`` build a provider with ``factory``."""
    _registry[name] = factory


def _builtin(name: str) -> LLMFactory | None:
    if name == "offline":
        from nous.llm.offline import OfflineProvider

        return OfflineProvider
    if name == "openai":
        from nous.llm.openai import OpenAIChatProvider

        return OpenAIChatProvider
    if name == "anthropic":
        from nous.llm.anthropic import AnthropicProvider

        return AnthropicProvider
    return None


def available_llm_providers() -> list[str]:
    names = {*BUILTIN, *_registry}
    names.update(ep.name for ep in entry_points(group="nous.llm"))
    return sorted(names)


def create_llm_provider(settings: Settings) -> LLMProvider:
    """The provider named by ``settings.llm_provider``."""
    name = settings.llm_provider
    factory = _registry.get(name) or _builtin(name)
    if factory is None:
        matches = [ep for ep in entry_points(group="nous.llm") if ep.name == name]
        if not matches:
            raise LLMError(
                f"unknown LLM provider {name!r}; available: {', '.join(available_llm_providers())}"
            )
        factory = matches[0].load()
    return factory(settings)
