"""Embedding providers and the batching, caching embedder the memory layer uses."""

from nous.embeddings.base import EmbeddingProvider, normalise
from nous.embeddings.embedder import Embedded, Embedder
from nous.embeddings.registry import available_providers, create_provider, register_provider

__all__ = [
    "Embedded",
    "Embedder",
    "EmbeddingProvider",
    "available_providers",
    "create_provider",
    "normalise",
    "register_provider",
]
