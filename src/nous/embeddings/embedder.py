"""Async, batching, cached access to a provider.

Vectors are cached in memory by content hash, and texts whose hash already has
a stored vector in the same space are not embedded again (as in simonw/llm).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

import numpy as np

from nous._text import text_hash
from nous.embeddings.base import EmbeddingProvider
from nous.errors import EmbeddingError


class Embedder:
    """Wraps a provider with an LRU cache and runs it off the event loop."""

    def __init__(self, provider: EmbeddingProvider, *, cache_size: int = 4096) -> None:
        self.provider = provider
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self.calls = 0
        self.texts_embedded = 0

    @property
    def model_name(self) -> str:
        return self.provider.model_name

    @property
    def dimensions(self) -> int:
        return self.provider.dimensions

    def remember(self, hash_: str, vector: np.ndarray) -> None:
        """Put a known vector into the cache."""
        self._cache[hash_] = vector
        self._cache.move_to_end(hash_)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    async def embed_many(self, texts: list[str], known: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Vectors for ``texts``; ``known`` maps content hashes to vectors already stored."""
        hashes = [text_hash(t) for t in texts]
        out: list[np.ndarray | None] = []
        todo: dict[str, str] = {}
        for text, h in zip(texts, hashes, strict=True):
            vec = self._cache.get(h)
            if vec is None and known is not None:
                vec = known.get(h)
            if vec is None:
                todo.setdefault(h, text)
            out.append(vec)
        fresh: dict[str, np.ndarray] = {}
        if todo:
            try:
                vectors = await asyncio.to_thread(self.provider.embed, list(todo.values()))
            except EmbeddingError:
                raise
            except Exception as exc:
                raise EmbeddingError(f"embedding failed: {exc}") from exc
            self.calls += 1
            self.texts_embedded += len(todo)
            for h, vec in zip(todo, vectors, strict=True):
                fresh[h] = vec
                self.remember(h, vec)
        result = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i, (vec, h) in enumerate(zip(out, hashes, strict=True)):
            result[i] = vec if vec is not None else fresh[h]
        return result

    async def embed_one(self, text: str) -> np.ndarray:
        """The vector of one text."""
        return (await self.embed_many([text]))[0]
