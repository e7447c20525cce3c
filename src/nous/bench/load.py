"""Load: a real `nous serve` process on loopback under N concurrent clients.

The server runs as its own process (so the load generator does not share its interpreter); each
client loops over a mix of writes (40%: a new fact through the duplicate check), recalls (40%)
and context builds (20%: ``pre_turn`` in the client's session) for the given time. Before the
load, the same recalls are timed from one client alone: the ratio of the loaded recall p95 to it
is what concurrency costs.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from nous.api import Nous
from nous.bench.stats import percentiles_ms
from nous.bench.synthetic import synthetic_memories, synthetic_queries
from nous.config import Settings
from nous.models import Fact, Provenance
from nous.server.keys import create_key
from nous.storage.postgres.store import PostgresStore

MIX = (("write", 0.4), ("recall", 0.4), ("context", 0.2))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"nous serve exited with {proc.returncode}")
            try:
                if (await client.get(f"{url}/health")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError("nous serve did not become healthy")


@asynccontextmanager
async def serving(
    home: str, database_url: str, workers: int = 1
) -> AsyncIterator[tuple[str, subprocess.Popen[bytes]]]:
    """``nous serve`` over ``database_url`` as a process of its own on a free loopback port, until
    healthy; its base URL and process. Stopped on the way out."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    env |= {"NOUS_HOME": home, "NOUS_DATABASE_URL": database_url, "NOUS_EVENTS_WORKER": "off"}
    command = [sys.executable, "-m", "nous", "serve", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(
        command + (["--workers", str(workers)] if workers > 1 else []),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        await _wait_healthy(base, proc)
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


async def run_load(
    *,
    clients: int = 16,
    seconds: float = 60.0,
    database_url: str | None = None,
    seed_facts: int = 500,
    workers: int = 1,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Serve a fresh store (SQLite in a temporary folder, or ``database_url``) from ``workers``
    processes, seed it, measure."""
    with tempfile.TemporaryDirectory(prefix="nous-load-") as tmp:
        url_db = database_url or f"sqlite:///{Path(tmp) / 'load.db'}"
        agent = f"load-{time.time_ns()}"
        settings = Settings(home=Path(tmp), database_url=url_db, events_worker="off")
        async with Nous(settings, agent_id=agent) as nous:
            texts = synthetic_memories(seed_facts)
            for i in range(0, len(texts), 256):
                batch = [
                    Fact(agent_id=agent, content=t, provenance=Provenance(source="bench"))
                    for t in texts[i : i + 256]
                ]
                await nous.add_many(batch, actor="bench")
            _, key = await create_key(nous.store, agent_id=agent, name="bench load")
            backend = nous.store.info.backend
        try:
            async with serving(tmp, url_db, workers) as (base, proc):
                if progress:
                    progress(
                        f"serving {backend} on {base} ({workers} worker(s)); {seed_facts} facts seeded; {clients} client(s)"
                    )
                headers = {"Authorization": f"Bearer {key}"}
                queries = synthetic_queries(200)
                async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
                    single: list[float] = []
                    for q in queries[:50]:  # the same recalls from one client, before the load
                        t0 = time.perf_counter()
                        (await http.post("/v1/recall", json={"query": q, "limit": 10})).raise_for_status()
                        single.append(time.perf_counter() - t0)
                latencies: dict[str, list[float]] = defaultdict(list)
                errors: dict[str, int] = defaultdict(int)
                deadline = time.monotonic() + seconds

                async def client(n: int) -> None:
                    rng = random.Random(n)
                    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as http:
                        i = 0
                        while time.monotonic() < deadline:
                            req: tuple[str, dict[str, Any]]
                            op = rng.choices([m for m, _ in MIX], weights=[w for _, w in MIX])[0]
                            if op == "write":
                                req = (
                                    "/v1/memories",
                                    {"type": "fact", "content": f"Client {n} note {i}: {rng.choice(texts)}"},
                                )
                            elif op == "recall":
                                req = ("/v1/recall", {"query": rng.choice(queries), "limit": 10})
                            else:
                                req = (f"/v1/sessions/load-{n}/turns", {"text": rng.choice(queries)})
                            t0 = time.perf_counter()
                            try:
                                response = await http.post(req[0], json=req[1])
                                ok = response.status_code < 400
                            except httpx.HTTPError:
                                ok = False
                            latencies[op].append(time.perf_counter() - t0)
                            if not ok:
                                errors[op] += 1
                            i += 1

                rss: list[tuple[float, float]] = []  # (seconds into the load, server RSS in MB)

                async def sample_rss() -> None:
                    while time.monotonic() < deadline:
                        mb = _rss_mb(proc.pid)
                        if mb is not None:
                            rss.append((time.perf_counter() - started, mb))
                        await asyncio.sleep(1.0)

                cpu_before = _cpu_s(proc.pid)
                started = time.perf_counter()
                await asyncio.gather(sample_rss(), *(client(n) for n in range(clients)))
                elapsed = time.perf_counter() - started
                cpu_after = _cpu_s(proc.pid)
        finally:
            if database_url:  # a scratch PostgreSQL schema: drop it
                async with Nous(settings, agent_id=agent) as nous:
                    if isinstance(nous.store, PostgresStore):
                        await nous.store.drop_schema()
    total = sum(len(v) for v in latencies.values())
    single_p95 = percentiles_ms(single)["p95"]
    loaded_recall = percentiles_ms(latencies["recall"]) if latencies["recall"] else {}
    return {
        "backend": backend,
        "clients": clients,
        "workers": workers,
        "seconds": round(elapsed, 1),
        "requests": total,
        "requests_per_s": round(total / elapsed, 1) if elapsed else 0.0,
        "errors": dict(errors),
        "error_count": sum(errors.values()),
        "operations": {op: {"count": len(v), **percentiles_ms(v)} for op, v in latencies.items() if v},
        "single_client_recall_ms": percentiles_ms(single),
        "recall_p95_ratio_loaded_to_single": round(loaded_recall.get("p95", 0) / single_p95, 2)
        if single_p95
        else None,
        "server_rss_mb": _rss_summary(rss, elapsed),
        # CPU the server's processes spent per request: what batching saves shows here, whatever
        # else the machine runs (the requests/s of a shared machine depend on it).
        "server_cpu_ms_per_request": round((cpu_after - cpu_before) * 1000 / total, 2)
        if cpu_before is not None and cpu_after is not None and total
        else None,
    }


def _tree(pid: int) -> list[int]:
    """A process and its descendants (the workers of `nous serve --workers N`, which are the
    fork server's children), from Linux /proc."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            todo += map(int, Path(f"/proc/{p}/task/{p}/children").read_text().split())
        except OSError:
            continue
    return found


def _cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) a process and its children have used, or None off Linux."""
    try:
        ticks = 0
        for p in _tree(pid):
            fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime (stat fields 14 and 15)
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _rss_mb(pid: int) -> float | None:
    """The resident memory in MB of a process and its children (its workers), from Linux /proc;
    None where it cannot be read."""
    try:
        total = 0.0
        for p in _tree(pid):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        return total or None
    except (OSError, ValueError, IndexError):
        return None


def _rss_summary(samples: list[tuple[float, float]], elapsed: float) -> dict[str, float] | None:
    """RSS after warm-up (the first quarter of the run) and at the end: a leak shows as growth."""
    if not samples:
        return None
    warm = [mb for t, mb in samples if t >= elapsed / 4] or [samples[-1][1]]
    after_warmup, end = warm[0], samples[-1][1]
    return {
        "after_warmup": round(after_warmup, 1),
        "end": round(end, 1),
        "max": round(max(mb for _, mb in samples), 1),
        "growth_after_warmup": round((end - after_warmup) / after_warmup, 3),
    }


async def run_load_series(client_counts: list[int], **options: Any) -> dict[str, Any]:
    """``run_load`` once per client count, one after the other (each on a fresh store), and each
    count's requests/s and loaded recall p95 against those of the first (fewest clients)."""
    runs = [await run_load(clients=n, **options) for n in client_counts]
    base = runs[0]

    def ratio(a: float | None, b: float | None) -> float | None:
        return round(a / b, 2) if a and b else None

    def recall_p95(run: dict[str, Any]) -> float | None:
        found = run["operations"].get("recall")
        return found["p95"] if found else None

    return {
        "runs": runs,
        "against_fewest_clients": [
            {
                "clients": run["clients"],
                "requests_per_s": ratio(run["requests_per_s"], base["requests_per_s"]),
                "recall_p95": ratio(recall_p95(run), recall_p95(base)),
            }
            for run in runs[1:]
        ],
    }
