"""Bulk writes (``apply_ops``' bulk runs: COPY on PostgreSQL, one batched INSERT per table on
SQLite) write exactly the rows the op-by-op path writes, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from nous import Nous, Settings
from nous.embeddings import Embedded
from nous.embeddings.base import EmbeddingProvider
from nous.errors import ConflictError
from nous.memory.repository import MemoryRepository
from nous.models import Decision, Fact, Memory, Procedure, Provenance, Turn
from nous.models.brain import Reason, ReasonType
from nous.storage import MemoryQuery
from nous.storage.postgres import bulk
from nous.storage.postgres.store import PostgresStore
from nous.storage.sql import store as sql_store
from nous.storage.sql.store import SQLStore
from tests.conftest import pg_url

N = 40  # over BULK_MIN: one create_many is one bulk run
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def memories(agent_id: str, prefix: str) -> list[Memory]:
    """The same N memories for any agent (ids from ``prefix``): every kind the write path stores in
    batches, inactive and superseded ones, JSON, times, a user and a session."""
    out: list[Memory] = []
    for i in range(N):
        common: dict[str, Any] = {
            "id": f"{prefix}-{i:04d}",
            "agent_id": agent_id,
            "occurred_at": T0 + timedelta(minutes=i % 7),  # ties: the write order decides
            "created_at": T0,
            "updated_at": T0,
            "tags": [f"t{i % 3}"],
            "provenance": Provenance(source="copy-test", turn_ids=[f"turn-{i}"]),
            "user_id": "u1" if i % 4 == 0 else None,
        }
        if i % 5 == 0:
            out.append(
                Decision(
                    content=f"Chose option {i} for the deployment window",
                    reasons=[Reason(type=ReasonType.ANALYSIS, text=f"latency budget {i} ms")],
                    confidence=0.7,
                    **common,
                )
            )
        elif i % 5 == 1:
            out.append(
                Procedure(name=f"restart {i}", content=f"Restart service {i} with the runbook", **common)
            )
        elif i % 5 == 2:
            out.append(Turn(content=f"user said something about topic {i}", session_id="s1", **common))
        else:
            out.append(
                Fact(
                    content=f"Alice's favourite number is {i} and she lives in Lisbon",
                    subject="Alice",
                    active=i % 9 != 3,
                    superseded_by=f"{prefix}-0000" if i == 8 else None,
                    valid_from=T0 if i % 2 else None,
                    **common,
                )
            )
    return out


def vectors(seed: int = 0) -> list[Embedded]:
    """Unit vectors; every fourth memory also has two chunk vectors (a long memory's)."""
    rng = np.random.default_rng(seed)

    def unit() -> np.ndarray:
        v = rng.standard_normal(384).astype(np.float32)
        return np.asarray(v / np.linalg.norm(v), dtype=np.float32)

    return [Embedded(unit(), [unit(), unit()] if i % 4 == 0 else []) for i in range(N)]


async def write(nous: Nous, batch: list[Memory], embedded: list[Embedded | None]) -> None:
    """``create_many`` by the batch's agent (one transaction)."""
    repo = MemoryRepository(
        nous.store, nous.embedder, agent_id=batch[0].agent_id, max_content_bytes=nous.repo.max_content_bytes
    )
    await repo.create_many(batch, actor="test", embedded=embedded)


def scrub(value: Any, prefix: str, agent_id: str) -> Any:
    """``value`` with the agent's name and id prefix replaced, so two agents' rows compare."""
    if isinstance(value, str):
        return value.replace(agent_id, "A").replace(prefix, "P")
    if isinstance(value, dict):
        return {k: scrub(v, prefix, agent_id) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, prefix, agent_id) for v in value]
    return value


async def snapshot(nous: Nous, agent_id: str, prefix: str) -> dict[str, Any]:
    """Everything a write leaves behind for one agent, in write order, with ids made comparable."""
    store = nous.store
    assert isinstance(store, SQLStore)
    rows = [m async for m in store.iter_memories(agent_id)]  # in seq order
    ids = [m.id for m in rows]
    vecs = await store.vectors(agent_id, ids)
    chunks: dict[str, list[bytes]] = {}
    for mid in ids:
        found = await store._select(
            "SELECT chunk_no, embedding FROM memory_chunks WHERE memory_id = ? ORDER BY chunk_no", [mid]
        )
        chunks[mid] = [store.dialect.read_vector(v).tobytes() for _, v in found.rows]
    history = {mid: await store.history(agent_id, mid) for mid in ids}
    audit_ids = [h.id or 0 for mid in ids for h in history[mid]]
    events = sorted(await store.events(agent_id, limit=1000), key=lambda e: e.subject_id or "")
    probe = np.asarray(vecs[ids[5]], dtype=np.float32)
    near = await store.vector_search(MemoryQuery(agent_id=agent_id, limit=N), probe, 10)
    words = await store.keyword_search(MemoryQuery(agent_id=agent_id), ["Lisbon", "runbook"], 10, own=True)
    return scrub(
        {
            "memories": [m.model_dump(mode="json") for m in rows],
            "vectors": [vecs[mid].tobytes() if mid in vecs else None for mid in ids],
            "chunks": [chunks[mid] for mid in ids],
            "history": [
                [(h.action.value, h.old_value, h.new_value, h.actor) for h in history[mid]] for mid in ids
            ],
            "history_in_write_order": audit_ids == sorted(audit_ids),
            "events": [(e.kind.value, e.subject_id, e.payload, e.status.value, e.attempts) for e in events],
            "vector_search": [(h.id, round(h.score, 5), round(h.main or 0.0, 5)) for h in near],
            "keyword_search": [(h.id, round(h.score, 5), round(h.own or 0.0, 5)) for h in words],
        },
        prefix,
        agent_id,
    )


async def test_bulk_batch_reads_back_as_the_op_by_op_one(nous: Nous, monkeypatch: pytest.MonkeyPatch) -> None:
    embedded: list[Embedded | None] = list(vectors())
    embedded[7] = None  # the provider failed for this one: stored with its embedding pending
    runs: list[int] = []
    bulk_write = sql_store.apply_bulk

    def counted(d: Any, run: list[Any], rev: int | None) -> Any:
        runs.append(len(run))
        return bulk_write(d, run, rev)

    with monkeypatch.context() as m:
        m.setattr(sql_store, "apply_bulk", counted)
        await write(nous, memories("agent-b", "mem-b"), embedded)
    assert len(runs) == 1  # the whole batch in one bulk run
    with monkeypatch.context() as m:
        m.setattr(sql_store, "BULK_MIN", 10**9)  # every op on its own, as before bulk writes
        await write(nous, memories("agent-s", "mem-s"), embedded)
    bulk = await snapshot(nous, "agent-b", "mem-b")
    single = await snapshot(nous, "agent-s", "mem-s")
    assert len(bulk["memories"]) == N
    assert [m["id"] for m in bulk["memories"]] == [f"P-{i:04d}" for i in range(N)]  # seq in write order
    assert sum(1 for c in bulk["chunks"] if c) == N // 4 - (1 if 7 % 4 == 0 else 0)
    assert bulk["events"], "new facts and decisions write outbox events"
    assert bulk["history_in_write_order"]
    assert bulk == single


async def test_bulk_upsert_replaces_rows_and_chunks(nous: Nous) -> None:
    """Writing the same ids again (an import run twice) replaces each row and its chunk vectors."""
    agent = nous.agent_id
    await write(nous, memories(agent, "again"), list(vectors(1)))
    changed = [
        m.model_copy(update={"content": m.content + " (edited)", "tags": ["edited"]})
        for m in memories(agent, "again")
    ]
    replaced = [Embedded(e.vector) for e in vectors(2)]  # no chunks this time
    await write(nous, changed, list(replaced))
    stored = await nous.store.get_many(agent, [m.id for m in changed])
    assert {m.content for m in stored.values()} == {m.content for m in changed}
    assert all(m.tags == ["edited"] for m in stored.values())
    assert isinstance(nous.store, SQLStore)
    found = await nous.store._select("SELECT count(*) FROM memory_chunks")
    assert found.scalar() == 0
    vecs = await nous.store.vectors(agent, [changed[0].id])
    assert np.allclose(vecs[changed[0].id], replaced[0].vector)
    assert len(await nous.store.history(agent, changed[0].id)) == 2


async def test_bulk_batch_with_another_agents_id_writes_nothing(nous: Nous) -> None:
    await write(nous, memories("other-agent", "taken")[:1], [None])
    batch = memories(nous.agent_id, "mine")
    batch[20] = batch[20].model_copy(update={"id": "taken-0000"})
    with pytest.raises(ConflictError, match="taken-0000"):
        await write(nous, batch, list(vectors()))
    assert not await nous.store.get_many(nous.agent_id, [m.id for m in batch])
    assert (await nous.store.stats(nous.agent_id)).history_rows == 0
    assert not await nous.store.events(nous.agent_id)
    other = await nous.store.get_many("other-agent", ["taken-0000"])
    assert other["taken-0000"].content == memories("other-agent", "taken")[0].content


async def _vector_indexes(store: PostgresStore) -> set[str]:
    found = await store._select(
        "SELECT indexname FROM pg_indexes WHERE schemaname = ? AND indexname = ANY(?)",
        [store.schema, list(bulk.VECTOR_INDEXES)],
    )
    return {r[0] for r in found.rows}


@pytest.mark.postgres
async def test_bulk_load_into_an_empty_store_builds_the_vector_index_at_the_end(
    pg_schema: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with Nous(settings, database_url=pg_url(pg_schema), embedding_provider=provider) as nous:
        store = nous.store
        assert isinstance(store, PostgresStore)
        async with store.bulk_load():
            assert not await _vector_indexes(store)  # empty: deferred
            await write(nous, memories(nous.agent_id, "load"), list(vectors()))
            probe = (await store.vectors(nous.agent_id, ["load-0004"]))["load-0004"]
            hits = await store.vector_search(MemoryQuery(agent_id=nous.agent_id), probe, 1)
            assert hits[0].id == "load-0004"  # searches stay right meanwhile (by a scan)
        assert await _vector_indexes(store) == set(bulk.VECTOR_INDEXES)
        assert not (await store._select("SELECT key FROM meta WHERE key LIKE 'deferred%'")).rows
        async with store.bulk_load():  # not empty: the indexes stay
            assert await _vector_indexes(store) == set(bulk.VECTOR_INDEXES)
            await write(nous, memories(nous.agent_id, "more"), list(vectors()))
        valid = await store._select(
            "SELECT bool_and(indisvalid) FROM pg_index WHERE indexrelid = ANY(?::regclass[])",
            [list(bulk.VECTOR_INDEXES)],
        )
        assert valid.scalar() is True


@pytest.mark.postgres
async def test_an_abandoned_bulk_load_gets_its_index_when_the_store_is_opened(
    pg_schema: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    """A load that died before building the index: the next open builds it from ``meta``."""
    async with Nous(settings, database_url=pg_url(pg_schema), embedding_provider=provider) as nous:
        store = nous.store
        assert isinstance(store, PostgresStore)
        async with store._conn() as conn:
            assert await bulk.defer_vector_indexes(conn, store.schema)
        await write(nous, memories(nous.agent_id, "died"), list(vectors()))
        assert not await _vector_indexes(store)
    async with Nous(settings, database_url=pg_url(pg_schema), embedding_provider=provider) as nous:
        assert isinstance(nous.store, PostgresStore)
        assert await _vector_indexes(nous.store) == set(bulk.VECTOR_INDEXES)
        assert not (await nous.store._select("SELECT key FROM meta WHERE key LIKE 'deferred%'")).rows
