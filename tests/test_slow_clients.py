"""Slow clients against a real uvicorn server with the guards `nous serve` uses: a client that
trickles its headers is disconnected, one whose body stalls gets 408, and neither stops the
server answering everyone else."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from nous import Nous, Settings
from nous.server import create_key
from nous.server.guards import guarded_protocol
from tests.test_server import live

TIMEOUT = 1.0
CLOSED_WITHIN = 120.0


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[str, str]]:
    settings = Settings(
        home=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'nous.db'}",
        events_worker="off",
        request_timeout_s=TIMEOUT,
    )

    async def make_key(run: Settings) -> dict[str, str]:
        async with Nous(run) as nous:
            return {"a": (await create_key(nous.store, agent_id="agent-a"))[1]}

    with live(settings, make_key, http=guarded_protocol(TIMEOUT)) as (server, keys):
        yield server.url.removeprefix("http://"), keys["a"]


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closed ``sock`` within ``seconds``: an orderly close (EOF), or a reset,
    which the kernel sends instead when bytes the client sent were still unread at the close."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_client_trickling_its_headers_is_disconnected(guarded: tuple[str, str]) -> None:
    address, _ = guarded
    host, port = address.split(":")
    silent = socket.create_connection((host, int(port)))
    trickling = socket.create_connection((host, int(port)))
    trickling.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    for _ in range(3):  # a byte now and then
        time.sleep(TIMEOUT / 3)
        try:
            trickling.sendall(b"X")
        except OSError:
            break
    # closed at all (the bound is far beyond the timeout: reaching it means never, not slowly)
    assert _closed_within(silent, CLOSED_WITHIN)
    assert _closed_within(trickling, CLOSED_WITHIN)
    assert httpx.get(f"http://{address}/health").status_code == 200  # everyone else is served


def test_a_stalled_body_gets_408_and_nothing_is_stored(guarded: tuple[str, str]) -> None:
    address, key = guarded
    host, port = address.split(":")
    body = b'{"type": "fact", "content": "The stalled upload never finishes"}'
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body[:20]
        )
        sock.settimeout(TIMEOUT * 10)
        received = b""
        while chunk := sock.recv(4096):  # the server closes the connection after its answer
            received += chunk
        answer = received.decode()
    assert answer.startswith("HTTP/1.1 408"), answer
    assert "application/problem+json" in answer and "did not arrive" in answer
    listed = httpx.get(f"http://{address}/v1/memories", headers={"Authorization": f"Bearer {key}"})
    assert listed.status_code == 200 and listed.json()["items"] == []
    quick = httpx.post(
        f"http://{address}/v1/memories",
        headers={"Authorization": f"Bearer {key}"},
        json={"type": "fact", "content": "A prompt client is served as usual"},
    )
    assert quick.status_code == 201
