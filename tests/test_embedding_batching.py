"""Concurrent embedding requests share one model call (``nous.embeddings.batching``): each text
gets the vector it gets alone, with the real model; a failing text fails only its own request;
a caller that gives up does not stop the others."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from nous.embeddings import Embedder
from nous.embeddings.base import EmbeddingProvider
from nous.embeddings.batching import MAX_TEXTS, EmbeddingBatcher

QUERIES = [
    "when does Alice like to meet?",
    "which database did we pick for the ledger and why",
    "ok",
    "Remind me what the staging cluster runs on, and in which region it was deployed last spring",
    "pricing page copy",
    "when does Alice like to meet?",  # the same text twice in one batch
    "Was the mobile app crash on login fixed before the release freeze in December?",
    "tax",
]


class Counting(EmbeddingProvider):
    """Wraps a provider and records each batch it is given."""

    def __init__(self, inner: EmbeddingProvider, fail_on: str | None = None) -> None:
        self.inner, self.fail_on = inner, fail_on
        self.model_name, self.dimensions = inner.model_name, inner.dimensions
        self.batches: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        if self.fail_on is not None and self.fail_on in texts:
            raise ValueError(f"cannot embed {self.fail_on!r}")
        return self.inner.embed(texts)


async def test_concurrent_requests_share_one_call_and_get_their_own_vectors(
    provider: EmbeddingProvider,
) -> None:
    counting = Counting(provider)
    embedder = Embedder(counting)
    together = await asyncio.gather(*(embedder.embed_one(q) for q in QUERIES))
    # All were waiting before the first call started: one call, each distinct text once.
    assert counting.batches == [list(dict.fromkeys(QUERIES))]
    for query, vector in zip(QUERIES, together, strict=True):
        alone = provider.embed([query])[0]
        assert np.allclose(vector, alone, atol=2e-6), query
        assert float(vector @ alone) > 0.99999


async def test_requests_arriving_during_a_call_go_in_the_next_one(provider: EmbeddingProvider) -> None:
    counting = Counting(provider)
    batcher = EmbeddingBatcher(counting)
    first = asyncio.ensure_future(batcher.embed([QUERIES[0]]))
    await asyncio.sleep(0)  # the first call is under way, on the model's thread
    rest = [asyncio.ensure_future(batcher.embed([q])) for q in QUERIES[1:5]]
    vectors = await asyncio.gather(first, *rest)
    assert counting.batches == [[QUERIES[0]], QUERIES[1:5]]
    assert all(v.shape == (1, 384) for v in vectors)


async def test_a_batch_takes_at_most_max_texts_but_a_larger_request_whole(
    provider: EmbeddingProvider,
) -> None:
    counting = Counting(provider)
    batcher = EmbeddingBatcher(counting)
    big = [f"text number {i}" for i in range(MAX_TEXTS + 3)]
    small = [[f"query {i}"] for i in range(3)]
    results = await asyncio.gather(batcher.embed(big), *(batcher.embed(s) for s in small))
    assert [len(b) for b in counting.batches] == [MAX_TEXTS + 3, 3]
    assert results[0].shape == (MAX_TEXTS + 3, 384)


async def test_a_failing_text_fails_only_its_request(provider: EmbeddingProvider) -> None:
    counting = Counting(provider, fail_on="poison")
    batcher = EmbeddingBatcher(counting)
    results = await asyncio.gather(
        batcher.embed(["good one"]),
        batcher.embed(["poison"]),
        batcher.embed(["good two"]),
        return_exceptions=True,
    )
    assert isinstance(results[1], ValueError)
    assert isinstance(results[0], np.ndarray) and isinstance(results[2], np.ndarray)
    assert np.allclose(results[2][0], provider.embed(["good two"])[0], atol=2e-6)


async def test_a_cancelled_caller_does_not_stop_the_others(provider: EmbeddingProvider) -> None:
    batcher = EmbeddingBatcher(Counting(provider))
    first = asyncio.ensure_future(batcher.embed(["first"]))
    await asyncio.sleep(0)
    gone = asyncio.ensure_future(batcher.embed(["abandoned"]))
    kept = asyncio.ensure_future(batcher.embed(["kept"]))
    await asyncio.sleep(0)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert (await kept).shape == (1, 384) and (await first).shape == (1, 384)
