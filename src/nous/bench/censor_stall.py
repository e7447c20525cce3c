"""Censor stall: does one agent's slow censor patterns slow every other tenant?

A real `nous serve` process on loopback. Agent "stalled" gets eight censors, each stored through
the REST API (so the validator accepts every one) and each the slowest shape it accepts: the most
overlapping alternations it allows in a row, then ``.*`` three times (polynomial backtracking on
a long text that never matches). Agent "other" gets seeded facts. First ``/health`` and the other
agent's recall are timed alone; then the same while ``checkers`` clients run ``check-action`` on
the stalled agent with a 50,000-character text that makes every pattern run out of time.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from nous.api import Nous
from nous.bench.load import serving
from nous.bench.stats import percentiles_ms
from nous.bench.synthetic import synthetic_memories, synthetic_queries
from nous.config import Settings
from nous.heart.censor_rules import MAX_OVERLAPPING_ALTERNATIONS
from nous.models import Fact, Provenance
from nous.server.keys import create_key
from nous.storage.postgres.store import PostgresStore

CENSORS = 8
ACTION = "a" * 50_000


def slow_patterns(n: int = CENSORS) -> list[str]:
    """``n`` distinct patterns the validator accepts that still backtrack for long on ``ACTION``."""
    return [f"{'(a|a)' * MAX_OVERLAPPING_ALTERNATIONS}.*a.*a.*a.*{chr(ord('b') + i)}" for i in range(n)]


async def _probe(
    http: httpx.AsyncClient, other: dict[str, str], queries: list[str], rounds: int
) -> dict[str, Any]:
    """``rounds`` of /health then one recall of the other agent, one at a time: their latencies."""
    health: list[float] = []
    recall: list[float] = []
    for i in range(rounds):
        t0 = time.perf_counter()
        (await http.get("/health")).raise_for_status()
        health.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        answer = await http.post("/v1/recall", json={"query": queries[i % len(queries)]}, headers=other)
        answer.raise_for_status()
        recall.append(time.perf_counter() - t0)
    return {"health_ms": percentiles_ms(health), "other_recall_ms": percentiles_ms(recall)}


async def run_censor_stall(
    *,
    checkers: int = 4,
    rounds: int = 100,
    database_url: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Serve a fresh store (SQLite in a temporary folder, or ``database_url``), measure."""
    with tempfile.TemporaryDirectory(prefix="nous-censor-stall-") as tmp:
        url_db = database_url or f"sqlite:///{Path(tmp) / 'stall.db'}"
        run_id = time.time_ns()
        stalled, other = f"stalled-{run_id}", f"other-{run_id}"
        settings = Settings(home=Path(tmp), database_url=url_db, events_worker="off")
        async with Nous(settings, agent_id=other) as nous:
            facts = [
                Fact(agent_id=other, content=t, provenance=Provenance(source="bench"))
                for t in synthetic_memories(300)
            ]
            await nous.add_many(facts, actor="bench")
            keys = {
                name: (await create_key(nous.store, agent_id=agent, name="bench censor-stall"))[1]
                for name, agent in (("stalled", stalled), ("other", other))
            }
            backend = nous.store.info.backend
        headers = {name: {"Authorization": f"Bearer {key}"} for name, key in keys.items()}
        queries = synthetic_queries(100)
        try:
            async with (
                serving(tmp, url_db) as (base, _),
                httpx.AsyncClient(base_url=base, timeout=120) as http,
            ):
                for pattern in slow_patterns():  # through the API: the validator accepts each
                    body = {"type": "censor", "content": pattern, "action": "warn", "dedup": False}
                    (
                        await http.post("/v1/memories", json=body, headers=headers["stalled"])
                    ).raise_for_status()
                if progress:
                    progress(f"serving {backend} on {base}; {CENSORS} slow censors accepted; timing alone")
                alone = await _probe(http, headers["other"], queries, rounds)
                checks: list[float] = []
                timed_out = 0
                done = asyncio.Event()

                async def checker() -> None:
                    nonlocal timed_out
                    while not done.is_set():
                        t0 = time.perf_counter()
                        answer = await http.post(
                            "/v1/check-action", json={"action": ACTION}, headers=headers["stalled"]
                        )
                        answer.raise_for_status()
                        checks.append(time.perf_counter() - t0)
                        timed_out += sum(m["timed_out"] for m in answer.json()["matches"])

                if progress:
                    progress(f"timing again under {checkers} concurrent check-action clients")
                running = [asyncio.create_task(checker()) for _ in range(checkers)]
                try:
                    await asyncio.sleep(0.5)  # the checks are under way
                    loaded = await _probe(http, headers["other"], queries, rounds)
                finally:
                    done.set()
                    await asyncio.gather(*running)
        finally:
            if database_url:  # a scratch PostgreSQL schema: drop it
                async with Nous(settings, agent_id=other) as nous:
                    if isinstance(nous.store, PostgresStore):
                        await nous.store.drop_schema()
    return {
        "backend": backend,
        "censors": CENSORS,
        "patterns": slow_patterns(),
        "checkers": checkers,
        "rounds": rounds,
        "alone": alone,
        "during_checks": loaded,
        "check_action_ms": {"count": len(checks), **percentiles_ms(checks)},
        "patterns_timed_out": timed_out,
    }
