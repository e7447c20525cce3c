"""Several processes on one store, writing and recalling at once: real `nous serve` and
`nous worker` processes on one PostgreSQL schema, and Python API and CLI processes on one SQLite
file. No acknowledged write is lost, a fact sent by everyone at the same moment is stored once,
no event is run twice, and each process's vector and keyword indexes see the others' writes."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from nous import Nous, Settings
from nous.server import create_key
from tests.conftest import pg_url

ROOT = Path(__file__).resolve().parent.parent
NOUS = str(Path(sys.executable).parent / "nous")
WORDS = [  # rare words, one set per process, so keyword and dense search can name them
    ["zephyrine", "quabbleton", "morvex"],
    ["plindor", "gastrovic", "hellquist"],
    ["trambolin", "vexaquil", "oorbright"],
]
TOPICS = [
    "hiring a second designer",
    "the Kubernetes upgrade",
    "our pricing page copy",
    "the office move to Porto",
    "quarterly tax filing",
    "the mobile app crash on login",
    "vendor contract renewal",
    "the onboarding email series",
]
SHARED = "The release freeze starts on the first Monday of December"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(url: str, home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    return {**env, "NOUS_DATABASE_URL": url, "NOUS_HOME": str(home), **extra}


def test_sqlite_processes_see_each_others_writes_and_race_to_one_fact(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'nous.db'}"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    words = {str(i): w for i, w in enumerate(WORDS)}
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.multiprocess_child",
                url,
                str(i),
                json.dumps(words),
                str(barrier),
                "3",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(url, tmp_path / "home"),
        )
        for i in range(len(WORDS))
    ]
    finished = [child.communicate(timeout=600) for child in children]
    failures = [
        f"process {i} (exit {child.returncode}): {err[-2000:]}"
        for i, (child, (_, err)) in enumerate(zip(children, finished, strict=True))
        if child.returncode != 0
    ]
    assert not failures, "\n".join(failures)
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in finished]
    for report in reports:  # each process found every other process's facts, both ways
        assert all(report["found_keyword"].values()), report["found_keyword"]
        assert all(report["found_dense"].values()), report["found_dense"]
    statuses = Counter(r["shared"]["status"] for r in reports)
    assert statuses["created"] == 1 and statuses["duplicate"] == 2, statuses
    assert len({r["shared"]["id"] for r in reports}) == 1
    # CLI processes too: four `nous learn` of one new fact at once store it once.
    env = _env(url, tmp_path / "home")
    learners = [
        subprocess.Popen(
            [NOUS, "--agent", "shared-agent", "learn", SHARED, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    results = []
    for learner in learners:
        out, err = learner.communicate(timeout=300)
        assert learner.returncode == 0, err
        results.append(json.loads(out))
    assert Counter(r["status"] for r in results) == {"created": 1, "duplicate": 3}, results

    async def verify() -> None:
        settings = Settings(home=tmp_path / "home", database_url=url, events_worker="off")
        async with Nous(settings, agent_id="shared-agent") as nous:
            for report in reports:  # every acknowledged write is there, as written
                got = await nous.store.get_many("shared-agent", list(report["acknowledged"].values()))
                assert set(got) == set(report["acknowledged"].values())
                for word, mid in report["acknowledged"].items():
                    assert word in got[mid].content
            facts = await nous.memories("fact", limit=1000)
            assert len(facts) == 9 + 2  # three each, one shared fact per round

    asyncio.run(verify())
    with sqlite3.connect(tmp_path / "nous.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


class Served:
    """A `nous serve` subprocess on a free loopback port."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log.open("w")
        self.proc = subprocess.Popen(
            [NOUS, "serve", "--port", str(self.port)], stdout=self.log, stderr=subprocess.STDOUT, env=env
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nous serve did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()


@pytest.mark.postgres
def test_servers_and_workers_on_one_postgres(pg_schema: str, tmp_path: Path) -> None:
    url = pg_url(pg_schema)
    settings = Settings(home=tmp_path / "home", database_url=url, events_worker="off")

    async def make_key() -> str:
        async with Nous(settings) as nous:
            return (await create_key(nous.store, agent_id="mp-agent"))[1]

    key = asyncio.run(make_key())
    env = _env(url, tmp_path / "home", NOUS_EVENT_POLL_SECONDS="0.2")
    servers = [Served(env, tmp_path / f"serve{i}.log") for i in range(2)]
    workers = [
        subprocess.Popen(
            [NOUS, "--agent", "mp-agent", "worker"],
            stdout=(tmp_path / f"worker{i}.log").open("w"),
            stderr=subprocess.STDOUT,
            env=env,
        )
        for i in range(2)
    ]
    acknowledged: list[dict[str, Any]] = []
    shared: list[dict[str, Any]] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def client(i: int) -> None:
        server = servers[i % 2]
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=120) as http:
            try:
                start.wait()
                answer = http.post("/v1/memories", json={"type": "fact", "content": SHARED})
                answer.raise_for_status()
                with lock:
                    shared.append(answer.json())
                for j, word in enumerate(WORDS[i % 3]):
                    content = (
                        f"Client {i} filed ticket {word} about the {['billing', 'search', 'login'][j]} page"
                    )
                    answer = http.post("/v1/memories", json={"type": "fact", "content": content})
                    answer.raise_for_status()
                    with lock:
                        acknowledged.append({"content": content, **answer.json()})
                session = f"mp-{i}"
                topic = TOPICS[i]  # distinct sessions (near-identical ones share one episode)
                for text in (f"Let us talk about {topic}", f"What matters most for {topic}?"):
                    http.post(f"/v1/sessions/{session}/turns", json={"text": text}).raise_for_status()
                    http.post(
                        f"/v1/sessions/{session}/reply", json={"reply": f"Noted: {text}."}
                    ).raise_for_status()
                http.post(
                    f"/v1/sessions/{session}/end", json={"reflection": f"Decide {topic} early"}
                ).raise_for_status()
                hits = http.post("/v1/recall", json={"query": "release freeze"}).json()["results"]
                assert hits, "recall found nothing"
            except Exception as exc:
                with lock:
                    errors.append(f"client {i}: {exc!r}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        assert not errors, errors
        statuses = Counter(s["status"] for s in shared)
        assert statuses["created"] == 1 and statuses["duplicate"] == 7, statuses
        created = next(s["id"] for s in shared if s["status"] == "created")
        assert {s.get("existing_id") for s in shared if s["status"] == "duplicate"} == {created}

        async def drained() -> list[Any]:
            async with Nous(settings, agent_id="mp-agent") as nous:
                deadline = time.monotonic() + 300
                while True:
                    counts = await nous.event_counts()
                    if all(n == 0 for status, n in counts.items() if status.value in ("pending", "running")):
                        return await nous.events(limit=1000)
                    assert time.monotonic() < deadline, counts
                    await asyncio.sleep(0.5)

        events = asyncio.run(drained())
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            w.wait(timeout=60)
        for s in servers:
            s.stop()
    assert events and all(e.status.value == "done" for e in events), Counter(e.status.value for e in events)
    assert all(e.attempts == 1 for e in events), [(e.kind, e.attempts) for e in events if e.attempts != 1]
    kinds = Counter(e.kind.value for e in events)
    assert kinds["session.ended"] == 8 and kinds["episode.closed"] == 8, kinds
    summarized = Counter(e.subject_id for e in events if e.kind.value == "episode.summarized")
    assert len(summarized) == 8 and set(summarized.values()) == {1}, summarized

    async def verify() -> None:
        async with Nous(settings, agent_id="mp-agent") as nous:
            got = await nous.store.get_many("mp-agent", [a["id"] for a in acknowledged])
            for a in acknowledged:
                assert got[a["id"]].content == a["content"]
            assert len(acknowledged) == 24

    asyncio.run(verify())
    logs = "".join((tmp_path / f"worker{i}.log").read_text() for i in range(2))
    assert "Traceback" not in logs, logs[-3000:]


_OPEN_STORE = """
import asyncio, sys, time
from pathlib import Path
from nous.storage import create_store

async def main() -> None:
    go = Path(sys.argv[2])
    while not go.exists():  # start together: the parent creates it once every process is up
        time.sleep(0.005)
    store = create_store(sys.argv[1])
    await store.open(embedding_model="sentence-transformers/all-MiniLM-L6-v2", embedding_dimensions=384)
    await store.close()

asyncio.run(main())
"""


def test_eight_processes_open_one_fresh_sqlite_file(tmp_path: Path) -> None:
    """Each process migrates the new file as it opens it; every migration is applied once, under
    the write lock, and none of the eight fails (the applied set is re-read inside the lock)."""
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    go = tmp_path / "go"
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_STORE, url, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(url, tmp_path / "home"),
        )
        for _ in range(8)
    ]
    go.touch()
    finished = [p.communicate(timeout=300) for p in openers]
    failures = [err[-1500:] for p, (_, err) in zip(openers, finished, strict=True) if p.returncode != 0]
    assert not failures, "\n".join(failures)
    with sqlite3.connect(tmp_path / "fresh.db") as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == sorted(set(versions)) and versions[0] == 1 and len(versions) >= 7
