"""Keep BLAS calls on one thread.

A query's embedding and a single-vector index scan are too small to gain much from a
second BLAS thread, and on a two-core machine that thread fights the keyword and vector
searches running beside them. Measured on 100k memories (2 cores): recall p95 ~52 ms with
default threading, ~37 ms with one BLAS thread for these calls. The local model's batches run
on one BLAS thread too, shared between Python threads instead (``nous.embeddings.local``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from threadpoolctl import ThreadpoolController

_controller = ThreadpoolController()


def single_blas_thread() -> AbstractContextManager[object]:
    """A context in which BLAS runs on one thread (~15 µs to enter and leave)."""
    return _controller.limit(limits=1, user_api="blas")
