"""What a client cannot make `nous serve` do, on both backends: buffer a body past the cap whatever
its framing, or any body without a key (counted in bytes the app read, not in time); learn the
server's internals from an error (a failing store answers 503 with a request id, the log keeps the
path, DSN and lock name); grow the metrics without bound; reach agent-wide views with a
user-bound key. Every response carries ``X-Request-Id``."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from nous import Nous, Settings
from nous.server import create_app, create_key
from nous.server.limits import MAX_BODY_BYTES
from nous.storage.postgres.store import PostgresStore
from tests.test_server import PROBLEM, LiveServer, _client, _keys, live

CHUNK = 64 * 1024
SIX_MB = 6 * 1024 * 1024


@pytest.fixture
def run(database_url: str, settings: Settings) -> Settings:
    return settings.model_copy(update={"database_url": database_url})


@pytest.fixture
def served(run: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(run, _keys) as pair:
        yield pair


async def _send_chunked(app: Any, path: str, key: str | None) -> tuple[int, dict[str, str], bytes, int]:
    """POST 6 MB to ``path`` as a chunked body (no Content-Length) straight into the app; the
    status, headers and body it answered, and how many body bytes it read."""
    read = 0
    sent: list[dict[str, Any]] = []
    headers = [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")]
    if key is not None:
        headers.append((b"authorization", f"Bearer {key}".encode()))

    async def receive() -> dict[str, Any]:
        nonlocal read
        if read >= SIX_MB:
            return {"type": "http.disconnect"}
        piece = b" " * min(CHUNK, SIX_MB - read)
        read += len(piece)
        return {"type": "http.request", "body": piece, "more_body": read < SIX_MB}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    answered = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    return start["status"], answered, body, read


async def test_a_chunked_body_past_the_cap_is_refused_and_none_is_read_without_a_key(run: Settings) -> None:
    async with Nous(run) as nous:
        _, agent_key = await create_key(nous.store, agent_id="agent-a")
        _, admin_key = await create_key(nous.store, agent_id=None, admin=True)
    app = create_app(run)
    async with app.router.lifespan_context(app):
        status, headers, body, read = await _send_chunked(app, "/v1/recall", agent_key)
        assert status == 413, body
        assert read <= MAX_BODY_BYTES + CHUNK  # the cap and at most the chunk that crossed it
        assert headers["content-type"].startswith(PROBLEM) and headers["x-request-id"]
        for key in (None, "nous_000000000000_" + "x" * 43):  # no key, an unknown one: nothing read
            status, headers, body, read = await _send_chunked(app, "/v1/recall", key)
            assert (status, read) == (401, 0), body
            assert headers["www-authenticate"] == "Bearer" and headers["x-request-id"]
        status, _, body, read = await _send_chunked(app, "/v1/chat/completions", None)
        assert (status, read) == (401, 0) and b'"invalid_api_key"' in body  # OpenAI's error shape
        status, _, body, read = await _send_chunked(app, "/mcp/", admin_key)  # MCP: an agent's key
        assert (status, read) == (401, 0), body
        # a valid key that may not use the route (admin) is refused after a capped read
        status, _, body, read = await _send_chunked(app, "/v1/recall", admin_key)
        assert status == 413 and read <= MAX_BODY_BYTES + CHUNK, body


def test_every_response_carries_a_request_id(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with _client(server) as anonymous, _client(server, keys["a"]) as a:
        answers = [
            anonymous.get("/health"),
            anonymous.get("/openapi.json"),
            anonymous.get("/docs"),
            anonymous.get("/ui/login"),
            anonymous.post("/v1/recall", json={"query": "x"}),
            anonymous.post("/mcp/", json={}),
            a.post("/v1/recall", json={"query": "x"}),
            a.get("/v1/no-such-route"),
            a.post("/v1/memories", content=b"x" * (MAX_BODY_BYTES + 1)),
        ]
        ids = [r.headers.get("x-request-id") for r in answers]
        assert all(ids) and len(set(ids)) == len(ids), [(r.request.url, r.status_code) for r in answers]
        for response in answers:
            if response.headers.get("content-type", "").startswith(PROBLEM):
                assert response.json()["request_id"] == response.headers["x-request-id"]


def _fail_writes(monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    """Make every write fail the way the backend's driver fails, through the store's own error
    translation: SQLite's disk-full error (the message names the file), a PostgreSQL connection
    lost mid-write (the message names the server's location)."""
    if backend == "sqlite":

        def full(conn: sqlite3.Connection, plan: Any) -> Any:
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr("nous.storage.sqlite.store._transaction", full)
    else:

        async def lost(self: PostgresStore, plan: Any) -> Any:
            async with self._conn():
                raise psycopg.OperationalError("server closed the connection unexpectedly")

        monkeypatch.setattr(PostgresStore, "_write", lost)


def test_a_failing_store_answers_503_naming_no_internals(
    served: tuple[LiveServer, dict[str, str]],
    run: Settings,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, keys = served
    backend = "sqlite" if (run.database_url or "").startswith("sqlite") else "postgres"
    _fail_writes(monkeypatch, backend)
    internals = ["nous.db", "/", "127.0.0.1", "5432", "postgres", "write:", "agent-a"]
    with caplog.at_level(logging.ERROR, logger="nous.server"), _client(server, keys["a"]) as a:
        failed = a.post("/v1/memories", json={"type": "fact", "content": "The vault opens at nine"})
    assert failed.status_code == 503, failed.text
    body = failed.json()
    rid = failed.headers["x-request-id"]
    assert body["request_id"] == rid and body["code"] == "storage_error"
    leaked = [word for word in internals if word in body["detail"]]
    assert not leaked, body["detail"]
    logged = [r.getMessage() for r in caplog.records if rid in r.getMessage()]
    assert logged, "the server log has the failure under the request id"
    assert ("disk full" if backend == "sqlite" else "lost the connection to PostgreSQL") in logged[0]


def test_agent_wide_views_and_metrics_stay_bounded(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with (
        _client(server) as anonymous,
        _client(server, keys["a"]) as a,
        _client(server, keys["a_user"]) as alice,
        _client(server, keys["admin"]) as admin,
    ):
        assert alice.get("/v1/identity").status_code == 403  # the agent's identity: its key only
        assert a.get("/v1/identity").status_code == 200
        assert alice.get("/metrics").status_code == 403  # every tenant's counts: not a user's
        for method in ("BREW", "PROPFIND", "X-MADE-UP"):
            assert anonymous.request(method, "/v1/recall").status_code == 401
        text = admin.get("/metrics").text
        assert a.get("/metrics").status_code == 200
    assert 'method="other",route="unmatched",status="401"} 3' in text
    assert not any(m in text for m in ("BREW", "PROPFIND", "X-MADE-UP"))


def test_deep_json_to_the_rest_api_is_a_client_error(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    deep = '{"query": ' + "[" * 100_000 + "]" * 100_000 + "}"  # past the JSON parser's nesting bound
    with _client(server, keys["a"]) as a:
        answer = a.post("/v1/recall", content=deep.encode(), headers={"content-type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == "body"
