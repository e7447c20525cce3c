"""The embedding provider interface."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class EmbeddingProvider(ABC):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    #: Stable identifier of the vector space (stored with every embedding).
    model_name: str
    dimensions: int
    #: The longest text, in characters, the model reads whole. Longer memories are embedded in
    #: chunks of at most this size (``nous.embeddings.chunking``); None embeds every text whole.
    max_input_chars: int | None = None

    @abstractmethod
    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed a batch; returns an array of shape (len(texts), dimensions)."""

    def warm_up(self) -> None:  # noqa: B027 - optional hook
        """Load weights or open connections ahead of the first call."""


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation as float32 (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)
