"""Idempotency-Key on the creating POSTs, both backends: against a real `nous serve` on loopback
(replay, another body, another user, a restart, a request in flight, an answer lost on the way and
retried by the client), and the store's claim, guard and pruning on their own."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from nous import AsyncClient, Nous, Settings
from nous._time import utcnow
from nous.embeddings.base import EmbeddingProvider
from nous.errors import ConflictError
from nous.models import Fact
from nous.server import create_key
from nous.server.idempotency import REPLAYED, _fingerprint
from nous.storage.base import (
    AnswerIdempotencyKey,
    ClaimIdempotencyKey,
    GuardIdempotencyKey,
    PutMemory,
    ReleaseIdempotencyKey,
    write_riders,
)
from nous.storage.codec import content_hash
from tests.test_server import LiveServer, live

PROBLEM = "application/problem+json"


async def _keys(settings: Settings) -> dict[str, str]:
    async with Nous(settings) as nous:
        keys = {}
        for name, kw in {
            "a": {"agent_id": "agent-a"},
            "alice": {"agent_id": "agent-a", "user_id": "alice"},
            "bob": {"agent_id": "agent-a", "user_id": "bob"},
        }.items():
            _, keys[name] = await create_key(nous.store, **kw)  # type: ignore[arg-type]
        return keys


@pytest.fixture
def run(database_url: str, settings: Settings) -> Settings:
    return settings.model_copy(update={"database_url": database_url})


@pytest.fixture
def served(run: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(run, _keys) as pair:
        yield pair


def _post(
    server: LiveServer, key: str, body: dict[str, Any], idem: str, path: str = "/v1/memories"
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": idem, "Content-Type": "application/json"}
    return httpx.post(server.url + path, content=json.dumps(body), headers=headers, timeout=60)


def _facts(server: LiveServer, key: str, content: str) -> list[dict[str, Any]]:
    page = httpx.get(
        server.url + "/v1/memories",
        params={"type": "fact", "limit": 1000},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    ).json()
    return [m for m in page["items"] if m["content"] == content]


FACT: dict[str, Any] = {"type": "fact", "content": "The nightly backup runs at 02:00 UTC", "dedup": False}


def test_a_retry_with_the_same_key_and_body_gets_the_first_answer_and_stores_once(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    first = _post(server, keys["alice"], FACT, "k-1")
    again = _post(server, keys["alice"], FACT, "k-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["Location"] == first.headers["Location"]
    assert again.headers[REPLAYED] == "true" and REPLAYED not in first.headers
    assert len(_facts(server, keys["alice"], FACT["content"])) == 1
    # without a key, the same body with dedup off is stored again: the key is what made it once
    plain = httpx.post(
        server.url + "/v1/memories",
        json=FACT,
        headers={"Authorization": f"Bearer {keys['alice']}"},
        timeout=60,
    )
    assert plain.status_code == 201 and plain.json()["memory"]["id"] != first.json()["memory"]["id"]


def test_the_same_key_with_another_body_is_422_and_stores_nothing(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    assert _post(server, keys["a"], FACT, "k-2").status_code == 201
    other = {**FACT, "content": "The nightly backup runs at 03:00 UTC"}
    answer = _post(server, keys["a"], other, "k-2")
    assert answer.status_code == 422 and answer.headers["content-type"] == PROBLEM
    assert answer.json()["code"] == "idempotency_key_reused" and answer.json()["field"] == "Idempotency-Key"
    assert _facts(server, keys["a"], other["content"]) == []
    # the same key on another creating route is another request too
    episode = _post(server, keys["a"], {"title": "Backup review"}, "k-2", path="/v1/episodes")
    assert episode.status_code == 422
    bad = _post(server, keys["a"], FACT, "bad key")  # a space is not visible ASCII
    assert bad.status_code == 422 and bad.json()["field"] == "Idempotency-Key"


def test_another_users_key_with_the_same_idempotency_key_does_not_see_the_first_answer(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    alices = _post(server, keys["alice"], FACT, "shared")
    bobs = _post(server, keys["bob"], FACT, "shared")
    agents = _post(server, keys["a"], FACT, "shared")
    assert alices.status_code == bobs.status_code == agents.status_code == 201
    assert REPLAYED not in bobs.headers and REPLAYED not in agents.headers
    ids = {r.json()["memory"]["id"] for r in (alices, bobs, agents)}
    assert len(ids) == 3
    assert bobs.json()["memory"]["user_id"] == "bob"
    assert [m["id"] for m in _facts(server, keys["alice"], FACT["content"]) if m["user_id"] == "alice"] == [
        alices.json()["memory"]["id"]
    ]


def test_the_kept_answer_survives_a_server_restart(run: Settings) -> None:
    keys = asyncio.run(_keys(run))
    server = LiveServer(run)
    try:
        first = _post(server, keys["alice"], FACT, "restart")
    finally:
        server.close()
    server = LiveServer(run)
    try:
        again = _post(server, keys["alice"], FACT, "restart")
        assert again.status_code == 201 and again.headers[REPLAYED] == "true"
        assert again.json() == first.json()
        assert len(_facts(server, keys["alice"], FACT["content"])) == 1
    finally:
        server.close()


def _scope(path: str = "/v1/memories") -> dict[str, Any]:
    return {"method": "POST", "path": path, "query_string": b""}


async def _hold(run: Settings, provider: EmbeddingProvider, *, lease: timedelta, written: bool) -> None:
    """Claim agent-a's key ``held`` for FACT as a request that has not answered would."""
    now = utcnow()
    async with Nous(run, embedding_provider=provider) as nous:
        digest = _fingerprint(_scope(), json.dumps(FACT).encode())
        claim = ClaimIdempotencyKey(
            "agent-a", "", "held", digest, "other", now, now + lease, now - timedelta(days=1)
        )
        ops: list[Any] = [claim]
        if written:
            ops.append(GuardIdempotencyKey("agent-a", "", "held", "other", now))
        assert all(await nous.store.apply(ops))


def test_a_retry_while_the_first_request_runs_is_409_and_runs_nothing(
    served: tuple[LiveServer, dict[str, str]], run: Settings, provider: EmbeddingProvider
) -> None:
    server, keys = served
    asyncio.run(_hold(run, provider, lease=timedelta(hours=1), written=False))
    answer = _post(server, keys["a"], FACT, "held")
    assert answer.status_code == 409 and answer.json()["code"] == "idempotency_key_in_use"
    assert int(answer.headers["Retry-After"]) > 0
    assert _facts(server, keys["a"], FACT["content"]) == []


def test_a_first_request_that_stopped_before_writing_is_run_again_by_the_retry(
    served: tuple[LiveServer, dict[str, str]], run: Settings, provider: EmbeddingProvider
) -> None:
    server, keys = served
    asyncio.run(_hold(run, provider, lease=-timedelta(seconds=1), written=False))
    answer = _post(server, keys["a"], FACT, "held")
    assert answer.status_code == 201
    assert len(_facts(server, keys["a"], FACT["content"])) == 1


def test_a_first_request_that_wrote_and_lost_its_answer_is_not_run_again(
    served: tuple[LiveServer, dict[str, str]], run: Settings, provider: EmbeddingProvider
) -> None:
    server, keys = served
    asyncio.run(_hold(run, provider, lease=-timedelta(seconds=1), written=True))
    answer = _post(server, keys["a"], FACT, "held")
    assert answer.status_code == 409 and answer.json()["code"] == "idempotency_answer_lost"
    assert _facts(server, keys["a"], FACT["content"]) == []


class LosingProxy:
    """A loopback TCP proxy that loses the first answer: the request reaches the server, and the
    client's connection is closed when the server's answer comes back."""

    def __init__(self, port: int) -> None:
        self.port, self.lost = port, 0

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        lose = self.lost == 0
        self.lost += lose

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, drop: bool) -> None:
            try:
                while data := await src.read(65536):
                    if drop:
                        break
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()
                if drop:
                    writer.close()

        await asyncio.gather(pipe(reader, up_writer, False), pipe(up_reader, writer, lose))


async def test_the_client_sends_a_key_and_retries_a_lost_answer_with_it(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    proxy = LosingProxy(int(server.url.rsplit(":", 1)[1]))
    url = await proxy.start()
    try:
        async with AsyncClient(url, key=keys["alice"]) as client:
            result = await client.learn(FACT["content"], dedup=False)
            assert proxy.lost == 1  # the first answer was lost; the retry got it again
            facts = await client.memories("fact", limit=100)
    finally:
        proxy.server.close()
    assert [f.id for f in facts if f.content == FACT["content"]] == [result.memory.id]


# -- the store on its own ------------------------------------------------------------------------
async def test_a_key_is_claimed_once_and_a_taken_over_request_writes_nothing(nous: Nous) -> None:
    now = utcnow()
    store = nous.store

    def claim(owner: str, digest: str = "h", lease: float = 60) -> ClaimIdempotencyKey:
        return ClaimIdempotencyKey(
            nous.agent_id,
            "u",
            "k",
            digest,
            owner,
            now,
            now + timedelta(seconds=lease),
            now - timedelta(days=1),
        )

    assert await store.apply([claim("first", lease=-1)]) == [True]
    assert await store.apply([claim("second", digest="other")]) == [False]  # another request
    assert await store.apply([claim("second")]) == [True]  # the first stopped unwritten: taken over
    # the first request's write, arriving late, is rolled back whole with its guard
    fact = Fact(agent_id=nous.agent_id, content="Late write of the first request")
    token = write_riders.set((GuardIdempotencyKey(nous.agent_id, "u", "k", "first", now),))
    try:
        with pytest.raises(ConflictError):
            await store.apply([PutMemory(fact, content_hash(fact))])
    finally:
        write_riders.reset(token)
    assert await store.get_many(nous.agent_id, [fact.id]) == {}
    token = write_riders.set((GuardIdempotencyKey(nous.agent_id, "u", "k", "second", now),))
    try:
        await store.apply([PutMemory(fact, content_hash(fact))])
    finally:
        write_riders.reset(token)
    kept = await store.idempotency_key(nous.agent_id, "u", "k")
    assert kept is not None and kept.owner == "second" and kept.written_at is not None
    assert await store.apply([ReleaseIdempotencyKey(nous.agent_id, "u", "k", "second")]) == [False]  # written
    assert await store.apply([claim("third", lease=-1)]) == [False]  # written: never run again
    answer = AnswerIdempotencyKey(nous.agent_id, "u", "k", "second", 201, [("location", "/x")], "{}")
    assert await store.apply([answer]) == [True]
    kept = await store.idempotency_key(nous.agent_id, "u", "k")
    assert kept is not None and (kept.status, kept.headers, kept.body) == (201, [("location", "/x")], "{}")
    assert await store.idempotency_key(nous.agent_id, "other-user", "k") is None


async def test_maintenance_prunes_keys_past_their_retention(nous: Nous) -> None:
    now = utcnow()
    old = ClaimIdempotencyKey(
        nous.agent_id, "", "old", "h", "o", now - timedelta(hours=30), now, now - timedelta(days=9)
    )
    new = ClaimIdempotencyKey(nous.agent_id, "", "new", "h", "o", now, now, now - timedelta(days=9))
    assert await nous.store.apply([old, new]) == [True, True]
    report = await nous.maintain()  # retention: NOUS_IDEMPOTENCY_RETENTION_HOURS, 24 by default
    assert report.idempotency_keys_pruned == 1
    assert await nous.store.idempotency_key(nous.agent_id, "", "old") is None
    assert await nous.store.idempotency_key(nous.agent_id, "", "new") is not None
    # a key kept past its retention and not yet pruned is claimed anew
    expired = ClaimIdempotencyKey(nous.agent_id, "", "new", "h2", "p", now, now, now + timedelta(seconds=1))
    assert await nous.store.apply([expired]) == [True]
