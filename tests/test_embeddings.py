"""Embedding providers: the real local model, the OpenAI-compatible client against a real
loopback server, content-hash caching, and graceful degradation with backfill."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nous import EmbeddingError, Nous, Settings
from nous.embeddings import Embedder, create_provider
from nous.embeddings.base import EmbeddingProvider
from nous.embeddings.openai import OpenAIEmbeddingProvider


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


class FakeOpenAI:
    """A real HTTP server on loopback speaking the OpenAI embeddings protocol, backed by the real model."""

    def __init__(self, provider: EmbeddingProvider) -> None:
        self.provider = provider
        self.failing = False
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                if outer.failing:
                    self.send_response(503)
                    self.end_headers()
                    self.wfile.write(b"overloaded")
                    return
                vectors = outer.provider.embed(body["input"])
                payload = {
                    "data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)][::-1]
                }
                raw = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_openai(provider: EmbeddingProvider) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(provider)
    yield server
    server.close()


def _openai_settings(server: FakeOpenAI, tmp_path: Path) -> Settings:
    return Settings(
        home=tmp_path,
        embedding_provider="openai",
        embedding_model="mini",
        embedding_api_base=server.url,
        embedding_api_key="sk-test",
        embedding_batch_size=2,
    )


def test_openai_client_batches_orders_and_authenticates(
    fake_openai: FakeOpenAI, tmp_path: Path, provider: EmbeddingProvider
) -> None:
    client = create_provider(_openai_settings(fake_openai, tmp_path))
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
    settings = _openai_settings(fake_openai, tmp_path)
    async with Nous(settings, database_url=database_url) as nous:
        fake_openai.failing = True
        result = await nous.learn("Written while the embedding API was down")
        assert (await nous.get(result.id)).content == "Written while the embedding API was down"
        assert (await nous.stats()).missing_embeddings == 1
        hits = await nous.list("fact")
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
