"""Long ingests as durable jobs, against real `nous serve` processes on loopback, both backends:
the job is accepted (202, Location), kept in the store's outbox, survives the server being
killed, and a restarted server's worker completes it with every message stored once."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from nous import Nous, Settings
from nous.server import create_key

AGENT = "jobs"


def _conversation(sessions: int, messages: int) -> dict[str, object]:
    return {
        "id": "long-chat",
        "sessions": [
            {
                "id": f"s{s}",
                "started_at": f"2026-03-{s + 1:02d}T10:00:00Z",
                "messages": [
                    {
                        "id": f"s{s}m{i}",
                        "role": "user" if i % 2 == 0 else "assistant",
                        "content": f"Session {s}, message {i}: step {i} of the warehouse move {s}.",
                    }
                    for i in range(messages)
                ],
            }
            for s in range(sessions)
        ],
    }


@contextmanager
def serving(home: Path, database_url: str, *, worker: bool) -> Iterator[str]:
    """`nous serve` in a process of its own; killed (SIGKILL, no graceful shutdown) on exit."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    env |= {
        "NOUS_HOME": str(home),
        "NOUS_DATABASE_URL": database_url,
        "NOUS_EVENTS_WORKER": "in-process" if worker else "off",
        "NOUS_EVENT_POLL_SECONDS": "0.05",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "nous", "--agent", AGENT, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # until it answers (or has died)
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_an_ingest_job_survives_a_killed_server(tmp_path: Path, database_url: str) -> None:
    home = tmp_path / "home"
    settings = Settings(home=home, database_url=database_url, agent_id=AGENT, events_worker="off")

    async def make_key() -> str:
        async with Nous(settings) as nous:
            return (await create_key(nous.store, agent_id=AGENT))[1]

    headers = {"Authorization": f"Bearer {asyncio.run(make_key())}"}
    conversation = _conversation(sessions=3, messages=12)
    first_session = {**conversation, "sessions": conversation["sessions"][:1]}  # type: ignore[index]
    # The first server has no worker: the job is accepted and waits in the store, deterministically.
    with (
        serving(home, database_url, worker=False) as url,
        httpx.Client(base_url=url, headers=headers) as http,
    ):
        done_before = http.post("/v1/ingest?wait=true", json=first_session, timeout=120)
        assert done_before.status_code == 200 and done_before.json()["turns"] == 12, done_before.text
        accepted = http.post("/v1/ingest", json=conversation, timeout=60)
        assert accepted.status_code == 202, accepted.text
        location = accepted.headers["location"]
        job = http.get(location).json()
        assert location == f"/v1/jobs/{job['id']}" and job["status"] == "pending"
        assert job["progress"] == {"done": 0, "total": 36}
    # Killed with the job pending; the next server's worker finds it in the store and runs it.
    with serving(home, database_url, worker=True) as url, httpx.Client(base_url=url, headers=headers) as http:
        for _ in range(1200):
            job = http.get(location).json()
            if job["status"] in ("done", "dead"):
                break
            time.sleep(0.1)
        assert job["status"] == "done", job
        assert job["progress"] == {"done": 36, "total": 36} and job["attempts"] == 1

    async def stored() -> list[str]:
        async with Nous(settings) as nous:
            return [m.content for m in await nous.memories("turn", limit=1000)]

    turns = asyncio.run(stored())
    assert len(turns) == 36 and len(set(turns)) == 36  # every message once: the first session not again
