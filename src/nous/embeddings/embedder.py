"""Async, batching, cached access to a provider.

Vectors are cached in memory by content hash, and texts whose hash already has
a stored vector in the same space are not embedded again (as in simonw/llm).
A memory longer than the provider reads is embedded in chunks (``embed_memories``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from nous._text import text_hash
from nous.embeddings.base import EmbeddingProvider
from nous.embeddings.batching import EmbeddingBatcher
from nous.embeddings.chunking import split_text
from nous.errors import EmbeddingError


@dataclass(slots=True)
class Embedded:
    """A memory's vectors: its main embedding and, for a long memory, those of its chunks after
    the first (the first chunk's vector is the main embedding)."""

    vector: np.ndarray
    chunks: list[np.ndarray] = field(default_factory=list)


class Embedder:
    """Wraps a provider with an LRU cache and runs it off the event loop, concurrent requests
    batched into one call (``nous.embeddings.batching``)."""

    def __init__(self, provider: EmbeddingProvider, *, cache_size: int = 4096) -> None:
        self.provider = provider
        self._batcher = EmbeddingBatcher(provider)
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
            # a known vector before the cache: what the caller hands in (stored, or an import's)
            # is what it means to store, whatever this process embedded before
            vec = known.get(h) if known is not None else None
            if vec is None:
                vec = self._cache.get(h)
            if vec is None:
                todo.setdefault(h, text)
            out.append(vec)
        fresh: dict[str, np.ndarray] = {}
        if todo:
            try:
                vectors = await self._batcher.embed(list(todo.values()))
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

    @property
    def max_input_chars(self) -> int | None:
        """The provider's input limit in characters (None: every text is embedded whole)."""
        return getattr(self.provider, "max_input_chars", None)  # plugins may predate the attribute

    def split(self, text: str) -> list[str]:
        """``text`` as the provider gets it for a memory: ``[text]``, or its chunks when it is long."""
        limit = self.max_input_chars
        return split_text(text, limit) if limit else [text]

    async def embed_memories(
        self,
        texts: list[str],
        known: dict[str, np.ndarray] | None = None,
        known_chunks: dict[str, list[np.ndarray]] | None = None,
    ) -> list[Embedded]:
        """The vectors of memories' embedding texts, all computed in one provider call.

        A text the provider reads whole gets one vector, as from ``embed_many``. A longer one is
        split (``split``) and its first chunk's vector is its main one: nearly what the model would
        give for the whole text, which it truncates, so no text is embedded twice. ``known`` and
        ``known_chunks`` map content hashes to stored main and chunk vectors, which are reused.
        """
        known = known or {}
        known_chunks = known_chunks or {}
        requests: list[str] = []  # texts to embed; a plan refers to them by index

        def ask(text: str) -> int:
            requests.append(text)
            return len(requests) - 1

        plans: list[tuple[int | np.ndarray, list[int] | list[np.ndarray]]] = []
        for text in texts:
            parts = self.split(text)
            if len(parts) == 1:
                plans.append((ask(text), []))  # embed_many finds it in ``known`` if stored
                continue
            h = text_hash(text)
            main = known.get(h)
            stored = known_chunks.get(h)
            plans.append(
                (
                    ask(parts[0]) if main is None else main,
                    [ask(p) for p in parts[1:]] if stored is None else stored,
                )
            )
        vectors = await self.embed_many(requests, known) if requests else None

        def resolve(slot: int | np.ndarray) -> np.ndarray:
            if isinstance(slot, int):
                assert vectors is not None
                return vectors[slot]
            return slot

        return [Embedded(resolve(main), [resolve(c) for c in chunks]) for main, chunks in plans]

    async def embed_one(self, text: str) -> np.ndarray:
        """The vector of one text."""
        return (await self.embed_many([text]))[0]
