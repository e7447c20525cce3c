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
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from nous.api import Nous
from nous.bench.crash_child import AGENT, LEASE_SECONDS, conversation
from nous.config import Settings
from nous.models import Fact, MemoryKind
from nous.models.events import EventStatus
from nous.storage.codec import content_hash
from nous.storage.postgres.store import PostgresStore


def _writer(url: str, home: str, seed: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    return subprocess.Popen(
        [sys.executable, "-m", "nous.bench.crash_child", url, home, str(seed)],
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
