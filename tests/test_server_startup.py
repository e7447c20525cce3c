"""`nous serve` answers while it starts: /health answers 503 (problem details, code `starting`)
until the embedding model and the vector index are loaded, then 200 `ok`; a request arriving meanwhile waits for them (bounded
by NOUS_STARTUP_WAIT_S, then 503 `starting`). Readiness is held by an event the test releases."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from nous import Settings
from nous.embeddings.base import EmbeddingProvider
from nous.embeddings.registry import register_provider
from tests.test_server import PROBLEM, LiveServer, _keys, live

GATE = threading.Event()


class GatedProvider(EmbeddingProvider):
    """The real model, whose warm-up does not finish until the test opens ``GATE``."""

    def __init__(self, real: EmbeddingProvider) -> None:
        self.real = real
        self.model_name = real.model_name
        self.dimensions = real.dimensions

    def warm_up(self) -> None:
        GATE.wait(timeout=120)
        self.real.warm_up()

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.real.embed(texts)


@pytest.fixture
def gated(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    register_provider("gated-test", lambda _: GatedProvider(provider))
    GATE.clear()
    run = settings.model_copy(update={"database_url": database_url, "embedding_provider": "gated-test"})
    try:
        with live(run, _keys) as pair:
            yield pair
    finally:
        GATE.set()


def wait_ok(client: httpx.Client) -> httpx.Response:
    """/health once it says ok (the warm-up runs on once the gate opens)."""
    deadline = time.monotonic() + 120
    while (health := client.get("/health")).status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    return health


def test_health_says_starting_then_ok(gated: tuple[LiveServer, dict[str, str]]) -> None:
    server, _ = gated
    with httpx.Client(base_url=server.url, timeout=120) as client:
        starting = client.get("/health")
        assert starting.status_code == 503 and starting.headers["content-type"].startswith(PROBLEM)
        assert starting.json()["code"] == "starting" and starting.json()["backend"]
        assert starting.headers["retry-after"] == "1"
        assert client.get("/openapi.json").status_code == 200  # served while starting
        GATE.set()
        health = wait_ok(client)
        assert health.status_code == 200 and health.json()["status"] == "ok"


def test_a_request_during_the_start_waits_then_is_answered(
    gated: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = gated
    headers = {"Authorization": f"Bearer {keys['a']}"}
    answers: list[httpx.Response] = []

    def recall() -> None:
        with httpx.Client(base_url=server.url, timeout=120, headers=headers) as client:
            answers.append(client.post("/v1/recall", json={"query": "staging region", "limit": 3}))

    with httpx.Client(base_url=server.url, timeout=120) as client:
        assert client.get("/health").json()["code"] == "starting"
        asker = threading.Thread(target=recall)
        asker.start()
        GATE.set()
        asker.join(timeout=120)
        assert [a.status_code for a in answers] == [200], [a.text for a in answers]
        health = wait_ok(client)
        assert health.status_code == 200 and health.json()["status"] == "ok"


def test_a_request_past_the_startup_wait_gets_503_starting(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    register_provider("gated-test", lambda _: GatedProvider(provider))
    GATE.clear()
    run = settings.model_copy(
        update={"database_url": database_url, "embedding_provider": "gated-test", "startup_wait_s": 0}
    )
    try:
        with live(run, _keys) as (server, keys), httpx.Client(base_url=server.url, timeout=120) as client:
            headers = {"Authorization": f"Bearer {keys['a']}"}
            refused = client.post("/v1/recall", headers=headers, json={"query": "anything"})
            assert refused.status_code == 503 and refused.headers["content-type"].startswith(PROBLEM)
            assert refused.json()["code"] == "starting" and refused.headers["retry-after"] == "1"
            assert client.post("/v1/recall", json={"query": "anything"}).status_code == 401  # keys first
            GATE.set()
            assert wait_ok(client).json()["status"] == "ok"
            assert client.post("/v1/recall", headers=headers, json={"query": "anything"}).status_code == 200
    finally:
        GATE.set()
