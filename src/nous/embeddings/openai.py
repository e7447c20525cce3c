"""OpenAI-compatible HTTP embeddings (OpenAI, Azure-style gateways, vLLM, Ollama, LiteLLM...)."""

from __future__ import annotations

import httpx
import numpy as np

from nous.config import Settings
from nous.embeddings.base import EmbeddingProvider, normalise
from nous.errors import EmbeddingError

DEFAULT_MODEL = "text-embedding-3-small"
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbeddingProvider(EmbeddingProvider):
    """POSTs batches to ``{NOUS_EMBEDDING_API_BASE}/embeddings``."""

    def __init__(self, settings: Settings | None = None) -> None:
        settings = settings or Settings()
        self._model = settings.embedding_model or DEFAULT_MODEL
        self._base = settings.embedding_api_base.rstrip("/")
        self._batch_size = settings.embedding_batch_size
        self._requested_dims = settings.embedding_dimensions
        dims = settings.embedding_dimensions or KNOWN_DIMENSIONS.get(self._model)
        headers = {"Content-Type": "application/json"}
        if settings.embedding_api_key:
            headers["Authorization"] = f"Bearer {settings.embedding_api_key}"
        self._client = httpx.Client(
            base_url=self._base, headers=headers, timeout=settings.embedding_timeout_s
        )
        self.model_name = f"openai/{self._model}"
        self.max_input_chars = settings.embedding_chunk_chars or None
        self.dimensions = dims or self._probe_dimensions()

    def _probe_dimensions(self) -> int:
        return int(self._request(["dimension probe"]).shape[1])

    def _request(self, texts: list[str]) -> np.ndarray:
        body: dict[str, object] = {"model": self._model, "input": texts}
        if self._requested_dims:
            body["dimensions"] = self._requested_dims
        try:
            response = self._client.post("/embeddings", json=body)
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"embedding request to {self._base} failed: {exc}") from exc
        if response.status_code != 200:
            raise EmbeddingError(
                f"embedding API at {self._base} answered {response.status_code}: {response.text[:200]}"
            )
        try:
            data = sorted(response.json()["data"], key=lambda d: d["index"])
            vectors = np.array([d["embedding"] for d in data], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"embedding API at {self._base} returned an unexpected body") from exc
        if vectors.shape[0] != len(texts):
            raise EmbeddingError(f"embedding API returned {vectors.shape[0]} vectors for {len(texts)} texts")
        return vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        parts = [
            self._request(texts[i : i + self._batch_size]) for i in range(0, len(texts), self._batch_size)
        ]
        vectors = np.vstack(parts)
        if vectors.shape[1] != self.dimensions:
            raise EmbeddingError(f"expected {self.dimensions}-dim vectors, got {vectors.shape[1]}")
        return normalise(vectors)
