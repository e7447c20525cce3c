"""`nous serve --workers 2`: two processes on one port and one store. A write answered by one
worker is found by the other's recall (each process's vector and keyword indexes catch up on
the other's writes), on SQLite and on PostgreSQL; SIGTERM to the parent stops both, and so does
the parent's death."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from nous import Nous, Settings
from nous.server import create_key
from nous.server.run import spread_connections

NOUS = str(Path(sys.executable).parent / "nous")
ATTEMPTS = 400  # fresh connections tried before concluding that one worker never answers
STARTING_ANSWERS = 1200  # "starting" answers (503) waited through while the other worker loads


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _served(tmp_path: Path, url: str) -> Iterator[tuple[subprocess.Popen[bytes], str, str]]:
    """`nous serve --workers 2` on ``url`` with an agent key: (process, base URL, key). The
    process is sent SIGTERM on the way out, if still running."""
    settings = Settings(home=tmp_path, database_url=url, events_worker="off")

    async def make_key() -> str:
        async with Nous(settings, agent_id="workers") as nous:
            return (await create_key(nous.store, agent_id="workers"))[1]

    key = asyncio.run(make_key())
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    env |= {"NOUS_HOME": str(tmp_path), "NOUS_DATABASE_URL": url, "NOUS_EVENTS_WORKER": "off"}
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [NOUS, "serve", "--port", str(port), "--workers", "2"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # until a worker answers (loading the model takes a while)
            try:
                httpx.get(f"{base}/health", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                assert proc.poll() is None, log.read_text()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=0.5)  # a bounded pause before asking again
        yield proc, base, key
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def _workers(url: str) -> dict[int, httpx.Client]:
    """A kept-open connection to each of the two workers, told apart by the pid /health reports."""
    found: dict[int, httpx.Client] = {}
    starting = 0
    for _ in range(ATTEMPTS):
        client = httpx.Client(base_url=url, timeout=120, limits=httpx.Limits(max_connections=1))
        response = client.get("/health")
        while response.status_code == 503 and starting < STARTING_ANSWERS:
            # this connection reached the worker still loading its model: ask it again
            starting += 1
            time.sleep(0.5)  # a bounded pause before asking again
            response = client.get("/health")
        pid = response.raise_for_status().json()["worker"]
        if pid in found:
            client.close()
        else:
            found[pid] = client
        if len(found) == 2:
            return found
    raise AssertionError(f"only workers {sorted(found)} answered {ATTEMPTS} new connections")


def _recall_until_found(client: httpx.Client, key: str, query: str, memory_id: str) -> None:
    """The recall finds ``memory_id``; asked again a bounded number of times, never waited for."""
    ids: list[str] = []
    for _ in range(50):
        response = client.post(
            "/v1/recall", json={"query": query, "limit": 5}, headers={"Authorization": f"Bearer {key}"}
        )
        ids = [hit["id"] for hit in response.raise_for_status().json()["results"]]
        if memory_id in ids:
            return
    raise AssertionError(f"{memory_id} not recalled by the other worker: {ids}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def _gone_within(pids: tuple[int, ...], seconds: float) -> bool:
    deadline = time.monotonic() + seconds  # a bound on the wait, not a timing assumption
    while any(_alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_write_through_one_worker_is_recalled_through_the_other(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'nous.db'}"
    else:
        from tests.conftest import pg_url

        url = pg_url(request.getfixturevalue("pg_schema"))
    with _served(tmp_path, url) as (proc, base, key):
        (pid_a, a), (pid_b, b) = _workers(base).items()
        assert pid_a != pid_b and proc.pid not in (pid_a, pid_b)
        auth = {"Authorization": f"Bearer {key}"}
        texts = (
            ("The zephyrine quarry reopens for tours after the spring thaw", "the zephyrine quarry"),
            ("Morvex bicycles are repaired only at the Hellquist workshop", "Morvex bicycles"),
        )
        for (writer, reader), (text, query) in zip(((a, b), (b, a)), texts, strict=True):
            created = writer.post("/v1/memories", json={"type": "fact", "content": text}, headers=auth)
            _recall_until_found(reader, key, query, created.raise_for_status().json()["id"])
        a.close()
        b.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, (tmp_path / "serve.log").read_text()
    assert _gone_within((pid_a, pid_b), 60)


def test_workers_stop_when_the_parent_is_killed(tmp_path: Path) -> None:
    with _served(tmp_path, f"sqlite:///{tmp_path / 'nous.db'}") as (proc, base, _):
        pids = tuple(_workers(base))
        proc.kill()  # SIGKILL: the parent cannot pass anything on
        proc.wait(timeout=60)
        assert _gone_within(pids, 60), "a worker outlived its parent"


@pytest.mark.skipif(not spread_connections(), reason="the kernel spreads connections only on Linux")
def test_connections_opened_at_once_are_spread_over_the_workers(tmp_path: Path) -> None:
    """Sixteen clients of one event loop connecting in the same moment (as `nous bench load`'s
    do): each worker listens on a socket of its own (SO_REUSEPORT), so the kernel hands
    connections to both; on one shared socket the first worker to wake took them all. All sixteen
    on one worker has a chance of 2 in 65,536 by hashing."""

    async def workers_of_sixteen(base: str) -> list[int]:
        clients = [httpx.AsyncClient(base_url=base, timeout=120) for _ in range(16)]
        try:
            answers = await asyncio.gather(*(c.get("/health") for c in clients))
            return [r.raise_for_status().json()["worker"] for r in answers]
        finally:
            await asyncio.gather(*(c.aclose() for c in clients))

    with _served(tmp_path, f"sqlite:///{tmp_path / 'nous.db'}") as (_, base, _key):
        pids = asyncio.run(workers_of_sixteen(base))
    assert len(set(pids)) == 2, pids
