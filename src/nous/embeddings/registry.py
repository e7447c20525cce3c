"""Plugin-style provider registration.

Built-in providers and any installed package's ``nous.embeddings`` entry points
are looked up by name; ``register_provider`` adds one at run time.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

from nous.config import Settings
from nous.embeddings.base import EmbeddingProvider
from nous.errors import EmbeddingError

ProviderFactory = Callable[[Settings], EmbeddingProvider]
_registry: dict[str, ProviderFactory] = {}


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Make ``NOUS_EMBEDDING_PROVIDER=name`` build a provider with ``factory``."""
    _registry[name] = factory


def _builtin(name: str) -> ProviderFactory | None:
    if name == "local":
        from nous.embeddings.local import LocalEmbeddingProvider

        return LocalEmbeddingProvider
    if name == "openai":
        from nous.embeddings.openai import OpenAIEmbeddingProvider

        return OpenAIEmbeddingProvider
    return None


def available_providers() -> list[str]:
    """Names that ``create_provider`` accepts."""
    names = {"local", "openai", *_registry}
    names.update(ep.name for ep in entry_points(group="nous.embeddings"))
    return sorted(names)


def create_provider(settings: Settings) -> EmbeddingProvider:
    """The provider named by ``settings.embedding_provider``."""
    name = settings.embedding_provider
    factory = _registry.get(name) or _builtin(name)
    if factory is None:
        matches = [ep for ep in entry_points(group="nous.embeddings") if ep.name == name]
        if not matches:
            raise EmbeddingError(
                f"unknown embedding provider {name!r}; available: {', '.join(available_providers())}"
            )
        factory = matches[0].load()
    return factory(settings)
