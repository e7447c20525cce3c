"""Embedding providers: the real local model, the OpenAI-compatible client against a real
loopback server, content-hash caching, and graceful degradation with backfill."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nous import EmbeddingError, Nous, Settings
from nous.embeddings import Embedder, create_provider
from nous.embeddings.base import EmbeddingProvider
from nous.embeddings.openai import OpenAIEmbeddingProvider
from tests.openai_server import FakeOpenAI, openai_settings


def test_local_model_ranks_paraphrases_above_unrelated(provider: EmbeddingProvider) -> None:
    vecs = provider.embed(
        ["The cat sat on the mat", "A kitten is resting on a rug", "Quarterly tax filing deadline"]
    )
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3


def test_unknown_provider_lists_the_available_ones() -> None:
    with pytest.raises(EmbeddingError, match="available: local, openai"):
        create_provider(Settings(embedding_provider="nope"))


def test_openai_client_batches_orders_and_authenticates(
    fake_openai: FakeOpenAI, tmp_path: Path, provider: EmbeddingProvider
) -> None:
    client = create_provider(openai_settings(fake_openai, tmp_path))
    assert isinstance(client, OpenAIEmbeddingProvider) and client.dimensions == 384
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    vectors = client.embed(texts)
    assert np.allclose(vectors, provider.embed(texts), atol=1e-5)
    batches = [r for r in fake_openai.requests if r["input"] != ["dimension probe"]]
    assert [len(r["input"]) for r in batches] == [2, 2, 1]
    assert all(
        r["auth"] == "Bearer sk-test" and r["model"] == "mini" and r["path"] == "/v1/embeddings"
        for r in batches
    )
    fake_openai.failing = True
    with pytest.raises(EmbeddingError, match="503"):
        client.embed(["x"])


async def test_cache_skips_unchanged_content(provider: EmbeddingProvider) -> None:
    embedder = Embedder(provider)
    await embedder.embed_many(["one", "two", "one"])
    assert embedder.texts_embedded == 2
    await embedder.embed_many(["two", "one"])
    assert embedder.texts_embedded == 2


async def test_provider_outage_stores_pending_and_backfill_repairs(
    fake_openai: FakeOpenAI, tmp_path: Path, database_url: str
) -> None:
    settings = openai_settings(fake_openai, tmp_path)
    async with Nous(settings, database_url=database_url) as nous:
        fake_openai.failing = True
        result = await nous.learn("Written while the embedding API was down")
        assert (await nous.get(result.id)).content == "Written while the embedding API was down"
        assert (await nous.stats()).missing_embeddings == 1
        hits = await nous.memories("fact")
        assert [m.id for m in hits] == [result.id]
        fake_openai.failing = False
        assert await nous.backfill_embeddings() == 1
        assert (await nous.stats()).missing_embeddings == 0
        recalled = await nous.recall("when the embedding service was unavailable", limit=1)
        assert recalled[0].id == result.id and "dense" in recalled[0].signals


async def test_unchanged_text_is_not_re_embedded_on_update(nous: Nous) -> None:
    result = await nous.learn("The release train leaves every second Thursday")
    before = nous.embedder.texts_embedded
    await nous.update(result.id, tags=["release"], confidence=0.8)
    assert nous.embedder.texts_embedded == before
    assert (await nous.stats()).missing_embeddings == 0
    await nous.update(result.id, content="The release train leaves every Thursday")
    assert nous.embedder.texts_embedded == before + 1
