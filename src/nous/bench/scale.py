"""Scale benchmark: ingest rate and recall latency at N memories, against raw embedding speed."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nous.api import Nous
from nous.bench.stats import percentiles_ms
from nous.bench.synthetic import synthetic_memories, synthetic_queries
from nous.config import Settings
from nous.embeddings import EmbeddingProvider, create_provider
from nous.models import Fact, Provenance
from nous.storage.postgres.store import PostgresStore

BATCH = 256


def raw_embedding_rate(provider: EmbeddingProvider, texts: list[str]) -> float:
    """Texts per second of the bare provider on the same texts, in batches of BATCH."""
    provider.embed(texts[:8])  # warm-up
    started = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        provider.embed(texts[i : i + BATCH])
    return len(texts) / (time.perf_counter() - started)


async def run_scale(
    n: int,
    database_url: str | None = None,
    *,
    queries: int = 200,
    settings: Settings | None = None,
    provider: EmbeddingProvider | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    drop_after: bool = False,
) -> dict[str, Any]:
    """Ingest ``n`` synthetic facts into a fresh store, then time ``queries`` recalls and as many
    ``pre_turn`` calls (each the first message of a fresh session).

    With ``drop_after`` a PostgreSQL store's schema is dropped at the end (a scratch schema).
    """
    settings = (settings or Settings()).model_copy(update={"events_worker": "off"})  # no background work
    provider = provider or create_provider(settings)
    texts = synthetic_memories(n)
    baseline_texts = texts[: min(n, 2000)]
    raw_rate = raw_embedding_rate(provider, baseline_texts)
    with tempfile.TemporaryDirectory(prefix="nous-bench-") as tmp:
        url = database_url or f"sqlite:///{Path(tmp) / 'bench.db'}"
        bench_settings = settings.model_copy(update={"database_url": url})
        async with Nous(
            bench_settings, agent_id=f"bench-{n}-{time.time_ns()}", embedding_provider=provider
        ) as nous:
            started = time.perf_counter()
            for i in range(0, n, BATCH):
                batch = [
                    Fact(agent_id=nous.agent_id, content=t, provenance=Provenance(source="bench"))
                    for t in texts[i : i + BATCH]
                ]
                await nous.add_many(batch, actor="bench")
                if progress:
                    progress("ingest", min(i + BATCH, n), n)
            ingest_s = time.perf_counter() - started
            await nous.recall("warm up the index", limit=10)
            latencies: list[float] = []
            for j, q in enumerate(synthetic_queries(queries)):
                t0 = time.perf_counter()
                await nous.recall(q, limit=10)
                latencies.append(time.perf_counter() - t0)
                if progress:
                    progress("recall", j + 1, queries)
            turn_latencies: list[float] = []  # the whole pre_turn: frame, session, recall, context
            for j, q in enumerate(synthetic_queries(queries)):
                t0 = time.perf_counter()
                await nous.pre_turn(f"bench-{j}", q)
                turn_latencies.append(time.perf_counter() - t0)
                await nous.end_session(f"bench-{j}")
                if progress:
                    progress("pre_turn", j + 1, queries)
            backend, store = nous.store.info.backend, nous.store
        if drop_after and isinstance(store, PostgresStore):
            await store.drop_schema()
    ingest_rate = n / ingest_s
    return {
        "backend": backend,
        "n": n,
        "ingest_per_s": round(ingest_rate, 1),
        "raw_embedding_per_s": round(raw_rate, 1),
        "storage_overhead_ratio": round(raw_rate / ingest_rate, 3),
        "recall_latency_ms": percentiles_ms(latencies),
        "pre_turn_latency_ms": percentiles_ms(turn_latencies),
        "queries": queries,
        "embedding_model": provider.model_name,
    }
