"""Scale benchmark: ingest rate and recall latency at N memories, against raw embedding speed; the
resident memory and size on disk it takes; and the recall of the vector index against an exact scan.

Embedding a million texts takes hours on a small machine, so with ``precomputed`` the store is built
from vectors mixed out of the real embeddings of a sample of the texts (see ``mixed_vectors``); the
queries still embed their text. Every tenth memory is a procedure and every tenth an inactive fact,
so the vector search measured against the exact scan has its kind and active filters to apply.
Every memory carries metadata: ``project`` one of ten values (independent of the kind) and
``priority`` 0-4, so recall is timed again with the metadata filter ``META_FILTER`` (a tenth of
the store) on the same store and queries.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nous.api import Nous
from nous.bench.stats import percentiles_ms
from nous.bench.synthetic import synthetic_memories, synthetic_queries
from nous.config import Settings
from nous.embeddings import Embedded, EmbeddingProvider, create_provider
from nous.models import Fact, Memory, MemoryKind, Procedure, Provenance
from nous.storage.base import MemoryQuery
from nous.storage.postgres.hnsw import SET_EF_SEARCH, SET_EF_SEARCH_ARGS
from nous.storage.postgres.store import PostgresStore

BATCH = 256
SAMPLE = 2000  # texts embedded for the raw rate (and, with ``precomputed``, the vectors' sources)
ANN_QUERIES = 100
ANN_K = 10
ANN_FILTER = "facts, active only"
META_FILTER = {"project": "p3"}  # a tenth of the memories


def raw_embedding_rate(provider: EmbeddingProvider, texts: list[str]) -> tuple[float, np.ndarray]:
    """Texts per second of the bare provider on the same texts, in batches of BATCH; the vectors."""
    provider.embed(texts[:8])  # warm-up
    started = time.perf_counter()
    vectors = [provider.embed(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
    rate = len(texts) / (time.perf_counter() - started)
    return rate, np.asarray(np.concatenate(vectors), dtype=np.float32)


def mixed_vectors(sample: np.ndarray, start: int, count: int) -> np.ndarray:
    """Unit vectors ``start`` to ``start + count`` of a deterministic sequence: each a random mix
    (weights 0.55-0.9 and the rest) of two real embeddings from ``sample``, so neighbourhoods are
    as dense and as uneven as between real texts, without embedding every text."""
    rng = np.random.default_rng((7, start))
    a = rng.integers(0, len(sample), count)
    b = rng.integers(0, len(sample), count)
    w = rng.uniform(0.55, 0.9, count).astype(np.float32)[:, None]
    out = w * sample[a] + (1 - w) * sample[b]
    return np.asarray(out / np.linalg.norm(out, axis=1, keepdims=True), dtype=np.float32)


def bench_memory(i: int, agent_id: str, text: str) -> Memory:
    """The ``i``-th memory: every tenth a procedure, every tenth (offset 1) an inactive fact; its
    metadata's project changes every ten memories, so each project holds every kind."""
    provenance = Provenance(source="bench")
    metadata = {"project": f"p{(i // 10) % 10}", "priority": i % 5}
    if i % 10 == 0:
        return Procedure(agent_id=agent_id, name=text, content=text, provenance=provenance, metadata=metadata)
    return Fact(agent_id=agent_id, content=text, provenance=provenance, active=i % 10 != 1, metadata=metadata)


class ExactTop:
    """The exact top ``k`` rows by cosine for fixed queries, kept as batches stream past."""

    def __init__(self, queries: np.ndarray, k: int) -> None:
        self.queries, self.k = queries, k
        self.scores = np.full((len(queries), 0), -np.inf, dtype=np.float32)
        self.rows = np.zeros((len(queries), 0), dtype=np.int64)

    def add(self, start: int, vectors: np.ndarray, passes: np.ndarray) -> None:
        scores = self.queries @ vectors[passes].T
        rows = np.broadcast_to(start + np.flatnonzero(passes), scores.shape)
        scores = np.concatenate([self.scores, scores], axis=1)
        rows = np.concatenate([self.rows, rows], axis=1)
        keep = np.argsort(-scores, axis=1)[:, : self.k]
        self.scores = np.take_along_axis(scores, keep, axis=1)
        self.rows = np.take_along_axis(rows, keep, axis=1)


def rss_mb() -> dict[str, float]:
    """This process's resident memory now and at its peak, in MB (Linux /proc)."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return {
        key: round(int(fields[name].split()[0]) / 1024, 1)
        for key, name in (("now", "VmRSS"), ("peak", "VmHWM"))
    }


async def store_size_mb(store: object, url: str) -> float:
    """Bytes on disk of the store: the SQLite file and its WAL, or the schema's tables with their
    indexes and TOAST."""
    if isinstance(store, PostgresStore):
        async with store._conn() as conn:
            cur = await conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
                (store.schema,),
            )
            row = await cur.fetchone()
        return round(int(row[0] if row else 0) / 2**20, 1)
    path = Path(url.removeprefix("sqlite:///"))
    files = [path, Path(f"{path}-wal")]
    return round(sum(p.stat().st_size for p in files if p.exists()) / 2**20, 1)


async def ef_search_used(store: object) -> int | None:
    """The ``hnsw.ef_search`` a PostgreSQL store's vector search sets now (None on SQLite)."""
    if not isinstance(store, PostgresStore):
        return None
    async with store._conn() as conn, conn.transaction():
        cur = await conn.execute(SET_EF_SEARCH, SET_EF_SEARCH_ARGS)
        row = await cur.fetchone()
    return int(row[0]) if row else None


def _batches(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, BATCH):
        yield start, min(start + BATCH, n)


async def ingest(
    nous: Nous, texts: list[str], vectors_of: Callable[[int, int], np.ndarray]
) -> AsyncIterator[tuple[int, list[Memory], np.ndarray]]:
    """Store ``bench_memory`` of every text, BATCH per transaction, with the vectors
    ``vectors_of(start, end)`` gives; yields each batch's start, memories and vectors once stored.
    On an empty PostgreSQL store the vector index is built once, after the last batch (before
    the iteration ends, so its time counts in the ingest rate)."""
    async with nous.store.bulk_load():
        for start, end in _batches(len(texts)):
            batch = [bench_memory(i, nous.agent_id, texts[i]) for i in range(start, end)]
            vectors = vectors_of(start, end)
            await nous.repo.create_many(batch, actor="bench", embedded=[Embedded(v) for v in vectors])
            yield start, batch, vectors


async def run_fill(
    n: int,
    settings: Settings,
    *,
    agent_id: str,
    provider: EmbeddingProvider | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Add ``n`` synthetic memories to the configured store (``settings.database_url``) for agent
    ``agent_id``, with vectors mixed out of a sample's real embeddings (see ``mixed_vectors``): a
    store of a given size in minutes, to time what depends on size (export, import, backups)."""
    settings = settings.model_copy(update={"events_worker": "off"})
    provider = provider or create_provider(settings)
    texts = synthetic_memories(n)
    sample = np.asarray(provider.embed(texts[: min(n, SAMPLE)]), dtype=np.float32)
    async with Nous(settings, agent_id=agent_id, embedding_provider=provider) as nous:
        started = time.perf_counter()
        async for start, batch, _ in ingest(nous, texts, lambda a, b: mixed_vectors(sample, a, b - a)):
            if progress:
                progress(start + len(batch), n)
        seconds = time.perf_counter() - started
        stats = await nous.stats()
        location = nous.store.info.location
    return {
        "store": location,
        "agent_id": agent_id,
        "added": n,
        "seconds": round(seconds, 1),
        "memories_per_s": round(n / seconds, 1) if seconds else None,
        "active_by_kind": stats.active_by_kind,
        "embedding_model": provider.model_name,
    }


async def run_scale(
    n: int,
    database_url: str | None = None,
    *,
    queries: int = 200,
    settings: Settings | None = None,
    provider: EmbeddingProvider | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    drop_after: bool = False,
    precomputed: bool = False,
) -> dict[str, Any]:
    """Ingest ``n`` synthetic memories into a fresh store, then time ``queries`` recalls and as many
    ``pre_turn`` calls (each the first message of a fresh session), and compare the store's vector
    search with an exact scan under the same filters (ANN recall@10).

    With ``precomputed`` the memories' vectors are mixed from the sample's (see the module doc);
    with ``drop_after`` a PostgreSQL store's schema is dropped at the end (a scratch schema).
    """
    settings = (settings or Settings()).model_copy(update={"events_worker": "off"})  # no background work
    provider = provider or create_provider(settings)
    texts = synthetic_memories(n)
    raw_rate, sample = raw_embedding_rate(provider, texts[: min(n, SAMPLE)])
    query_texts = synthetic_queries(queries)
    ann_vectors = np.asarray(provider.embed(query_texts[:ANN_QUERIES]), dtype=np.float32)
    exact = ExactTop(ann_vectors, ANN_K)
    with tempfile.TemporaryDirectory(prefix="nous-bench-") as tmp:
        url = database_url or f"sqlite:///{Path(tmp) / 'bench.db'}"
        bench_settings = settings.model_copy(update={"database_url": url})
        async with Nous(
            bench_settings, agent_id=f"bench-{n}-{time.time_ns()}", embedding_provider=provider
        ) as nous:
            ids: list[str] = []

            def vectors_of(start: int, end: int) -> np.ndarray:
                if precomputed:
                    return mixed_vectors(sample, start, end - start)
                return np.asarray(provider.embed(texts[start:end]), dtype=np.float32)

            started = time.perf_counter()
            async for start, batch, vectors in ingest(nous, texts, vectors_of):
                ids += [m.id for m in batch]
                passes = np.asarray([m.kind is MemoryKind.FACT and m.active for m in batch])
                exact.add(start, vectors, passes)
                if progress:
                    progress("ingest", start + len(batch), n)
            ingest_s = time.perf_counter() - started
            await nous.recall("warm up the index", limit=10)
            ef_search = await ef_search_used(nous.store)
            ann_query = MemoryQuery(agent_id=nous.agent_id, kinds=(MemoryKind.FACT,))
            found = 0
            for q, rows in zip(ann_vectors, exact.rows, strict=True):
                hits = await nous.store.vector_search(ann_query, q, ANN_K, chunks=False)
                found += len({h.id for h in hits} & {ids[r] for r in rows})
            ann_recall = found / exact.rows.size
            latencies: list[float] = []
            for j, q in enumerate(query_texts):
                t0 = time.perf_counter()
                await nous.recall(q, limit=10)
                latencies.append(time.perf_counter() - t0)
                if progress:
                    progress("recall", j + 1, queries)
            filtered: list[float] = []  # the same queries, within a tenth of the store
            for j, q in enumerate(query_texts):
                t0 = time.perf_counter()
                await nous.recall(q, limit=10, where=META_FILTER)
                filtered.append(time.perf_counter() - t0)
                if progress:
                    progress("recall where", j + 1, queries)
            turn_latencies: list[float] = []  # the whole pre_turn: frame, session, recall, context
            for j, q in enumerate(query_texts):
                t0 = time.perf_counter()
                await nous.pre_turn(f"bench-{j}", q)
                turn_latencies.append(time.perf_counter() - t0)
                await nous.end_session(f"bench-{j}")
                if progress:
                    progress("pre_turn", j + 1, queries)
            backend, store = nous.store.info.backend, nous.store
            size_mb = await store_size_mb(store, url)
            rss = rss_mb()
        if drop_after and isinstance(store, PostgresStore):
            await store.drop_schema()
    ingest_rate = n / ingest_s
    recall_ms, where_ms = percentiles_ms(latencies), percentiles_ms(filtered)
    return {
        "backend": backend,
        "n": n,
        "precomputed_vectors": precomputed,
        "ingest_per_s": round(ingest_rate, 1),
        "raw_embedding_per_s": round(raw_rate, 1),
        "storage_overhead_ratio": round(raw_rate / ingest_rate, 3),
        "recall_latency_ms": recall_ms,
        "recall_where_latency_ms": where_ms,
        "recall_where_p95_ratio": round(where_ms["p95"] / recall_ms["p95"], 2),
        "recall_where": META_FILTER,
        "pre_turn_latency_ms": percentiles_ms(turn_latencies),
        "ann_recall_at_10": round(ann_recall, 4),
        "ann_filter": ANN_FILTER,
        "ef_search": ef_search,
        "rss_mb": rss,
        "store_mb": size_mb,
        "queries": queries,
        "embedding_model": provider.model_name,
    }
