"""Crash harness: kill a writer with SIGKILL at random moments and check that nothing it was told
was stored is lost.

Each round starts ``crash_child`` (ingest, then learn / confirm / forget in a loop, with the
in-process event worker), kills it at a random moment after a milestone (the store open, or
the first acknowledged write), then opens the store and checks:

- the store opens and is sound (SQLite ``integrity_check`` and ``foreign_key_check``);
- every acknowledged memory is present with the same content hash, and has its creation audit row;
- every acknowledged forget holds (inactive), and a memory's confirmation count is at least the
  confirmations acknowledged for it;
- the interrupted ingestion, run again, completes with every message stored exactly once;
- after the pipeline drains, no event is dead and none is left running.

Then as many rounds kill a `nous serve` (``crash_child ... serve``) while a client writes facts to
it with dedup off, each with its own ``Idempotency-Key``; a write whose answer the kill lost is
sent again, with the same key and body, to the next server. At the end each sent fact is stored
at most once (``duplicates``), and each answered one exactly once.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import httpx

from nous.api import Nous
from nous.bench.crash_child import AGENT, HTTP_AGENT, LEASE_SECONDS, conversation
from nous.config import Settings
from nous.models import Fact, MemoryKind
from nous.models.events import EventStatus
from nous.storage.codec import content_hash
from nous.storage.postgres.store import PostgresStore


def _writer(url: str, home: str, seed: int, *mode: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    return subprocess.Popen(
        [sys.executable, "-m", "nous.bench.crash_child", url, home, str(seed), *mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


_WRITES = ("ACK", "CONFIRM", "FORGOT")


def _until(stdout: IO[str], milestones: tuple[str, ...]) -> list[str]:
    """The writer's lines up to and including the first that starts with one of ``milestones``
    (all of them if it exits first)."""
    lines = []
    for line in iter(stdout.readline, ""):
        lines.append(line.rstrip("\n"))
        if line.startswith(milestones):
            break
    return lines


async def run_crash(
    *,
    kills: int = 20,
    database_url: str | None = None,
    seed: int = 7,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="nous-crash-") as home:
        url = database_url or f"sqlite:///{Path(home) / 'crash.db'}"
        settings = Settings(home=Path(home), database_url=url, events_worker="off")
        acked: dict[str, str] = {}
        forgotten: set[str] = set()
        confirmed: Counter[str] = Counter()
        problems: list[str] = []
        writes = 0
        started = time.perf_counter()
        for k in range(kills):
            child = _writer(url, home, seed * 1000 + k)
            # Wait for a milestone, however slow the machine is to reach it, then kill somewhere
            # after it: every other round after the store opens (often mid-ingest), the rest after
            # the first acknowledged write (in a write or an event handler).
            assert child.stdout is not None
            before = _until(child.stdout, ("OPEN",) if k % 2 else _WRITES)
            time.sleep(rng.uniform(0.0, 2.0))
            child.send_signal(signal.SIGKILL)
            out, _ = child.communicate(timeout=60)
            for line in before + out.splitlines():
                kind, _, rest = line.partition(" ")
                if kind == "ACK":
                    memory_id, digest = rest.split()
                    acked[memory_id] = digest
                    writes += 1
                elif kind == "CONFIRM":
                    confirmed[rest] += 1
                    writes += 1
                elif kind == "FORGOT":
                    forgotten.add(rest)
                    writes += 1
            problems += await _check(settings, url, acked, forgotten, confirmed)
            if progress:
                progress(
                    f"kill {k + 1}/{kills}: {writes} acknowledged writes so far, {len(problems)} problems"
                )
        problems += await _final(settings)
        idempotent = await _idempotent_rounds(kills, url, home, rng, progress)
        problems += idempotent.pop("problems")
        if database_url:
            async with Nous(settings, agent_id=AGENT) as nous:
                if isinstance(nous.store, PostgresStore):
                    await nous.store.drop_schema()
    return {
        "backend": "postgres" if database_url else "sqlite",
        "kills": kills,
        "writes_acknowledged": writes,
        "writes_verified": writes - len([p for p in problems if p.startswith("lost")]),
        "memories_verified": len(acked),
        "lost": len([p for p in problems if p.startswith("lost")]),
        "idempotent": idempotent,
        "problems": problems[:50],
        "seconds": round(time.perf_counter() - started, 1),
    }


async def _check(
    settings: Settings, url: str, acked: dict[str, str], forgotten: set[str], confirmed: Counter[str]
) -> list[str]:
    problems: list[str] = []
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url[len("sqlite:///") :])
        try:
            if conn.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                problems.append("integrity_check failed")
            if conn.execute("PRAGMA foreign_key_check").fetchall():
                problems.append("foreign_key_check failed")
        finally:
            conn.close()
    async with Nous(settings, agent_id=AGENT) as nous:
        found = await nous.store.get_many(AGENT, list(acked))
        for memory_id, digest in acked.items():
            memory = found.get(memory_id)
            if memory is None:
                problems.append(f"lost: {memory_id} was acknowledged and is gone")
            elif content_hash(memory) != digest:
                problems.append(f"lost: {memory_id} changed content")
            elif memory_id in forgotten and memory.active:
                problems.append(f"lost: forgetting {memory_id} was acknowledged and did not hold")
            elif isinstance(memory, Fact) and memory.confirmation_count < confirmed[memory_id]:
                problems.append(f"lost: confirmations of {memory_id}")
        for memory_id in list(acked)[-20:]:  # audit rows of the newest (the whole set is checked at the end)
            if not any(h.action.value == "create" for h in await nous.store.history(AGENT, memory_id)):
                problems.append(f"lost: the creation audit row of {memory_id}")
    return problems


async def _final(settings: Settings) -> list[str]:
    """The interrupted ingestion run again, then the pipeline drained."""
    problems: list[str] = []
    async with Nous(settings, agent_id=AGENT) as nous:
        await nous.ingest(conversation(0))
        turns = await nous.memories(MemoryKind.TURN, limit=10_000, include_inactive=True)
        ids = Counter(t.provenance.turn_ids[0] for t in turns if t.provenance.turn_ids)
        if len(ids) != 40 or any(n != 1 for n in ids.values()):
            problems.append(
                f"ingestion: {len(ids)} messages stored, duplicates {sum(n - 1 for n in ids.values())}"
            )
        await asyncio.sleep(LEASE_SECONDS + 0.5)  # the killed workers' leases run out
        await nous.process_events()
        counts = await nous.event_counts()
        if counts.get(EventStatus.DEAD) or counts.get(EventStatus.RUNNING) or counts.get(EventStatus.PENDING):
            problems.append(f"events left undone: {dict(counts)}")
    return problems


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _idempotent_rounds(
    kills: int, url: str, home: str, rng: random.Random, progress: Callable[[str], None] | None
) -> dict[str, Any]:
    """Kill a server ``kills`` times while writing to it with Idempotency-Keys; count what is
    stored twice (duplicates) and what was answered and is not stored."""
    sent: dict[str, str] = {}  # every key sent, with its fact
    answered: set[str] = set()
    unanswered: list[str] = []  # keys whose answer a kill lost, to send again
    retried = lost_answers = 0
    for k in range(kills):
        port = _free_port()
        child = _writer(url, home, 0, "serve", str(port))
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            await _ready(http, child)
            for key in unanswered:  # the same key and body: stored once whatever the first did
                retried += 1
                status, code = await _send_fact(http, key, sent[key])
                if status == 201:
                    answered.add(key)
                elif code == "idempotency_answer_lost":
                    lost_answers += 1
            unanswered = []

            task = asyncio.create_task(_write_until_killed(http, k, rng, sent, answered, unanswered))
            await asyncio.sleep(rng.uniform(0.2, 2.0))
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=60)
            await asyncio.gather(
                task, return_exceptions=True
            )  # the write in flight fails: its answer is lost
        if progress:
            progress(f"server kill {k + 1}/{kills}: {len(sent)} idempotent writes, {retried} sent again")
    settings = Settings(home=Path(home), database_url=url, agent_id=HTTP_AGENT, events_worker="off")
    async with Nous(settings) as nous:
        facts = await nous.memories(MemoryKind.FACT, limit=100_000, include_inactive=True)
    stored = Counter(f.content for f in facts)
    duplicates = sum(n - 1 for n in stored.values() if n > 1)
    missing = [key for key in answered if stored[sent[key]] == 0]
    problems = [f"duplicates: {duplicates} idempotent writes stored twice"] if duplicates else []
    problems += [f"lost: the answered idempotent write {key} is not stored" for key in missing]
    return {
        "writes": len(sent),
        "answered": len(answered),
        "sent_again": retried,
        "answers_lost_after_storing": lost_answers,
        "stored": sum(stored.values()),
        "duplicates": duplicates,
        "problems": problems,
    }


async def _write_until_killed(
    http: httpx.AsyncClient,
    round_: int,
    rng: random.Random,
    sent: dict[str, str],
    answered: set[str],
    unanswered: list[str],
) -> None:
    """Write facts one after another, each under a new key, until the server is killed."""
    i = 0
    while True:
        i += 1
        key = f"round{round_}-write{i}"
        sent[key] = f"Round {round_} write {i}: replica {rng.randint(1, 10_000)} holds the archive"
        unanswered.append(key)
        if (await _send_fact(http, key, sent[key]))[0] == 201:
            answered.add(key)
            unanswered.remove(key)


async def _ready(http: httpx.AsyncClient, child: subprocess.Popen[str]) -> None:
    """Wait until the server answers /health (however slow the machine is to load the model)."""
    while child.poll() is None:
        try:
            if (await http.get("/health")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("the crash server exited before it answered")


async def _send_fact(http: httpx.AsyncClient, key: str, text: str) -> tuple[int, str | None]:
    """POST a fact with dedup off under ``key``; its status and problem code. A 409 because the
    killed server's request still holds the key waits for its lease to run out, then sends again."""
    body = {"type": "fact", "content": text, "dedup": False}
    while True:
        answer = await http.post("/v1/memories", json=body, headers={"Idempotency-Key": key})
        code = answer.json().get("code") if answer.status_code >= 400 else None
        if code != "idempotency_key_in_use":
            return answer.status_code, code
        await asyncio.sleep(float(answer.headers.get("Retry-After", "1")))
