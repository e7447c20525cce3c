"""Memory rows and what hangs off them (chunks, edges, history): their write ops and reads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, assert_never

import numpy as np

from nous.errors import ConflictError, StaleWriteError
from nous.models import Edge, HistoryEntry, Memory, StoreStats
from nous.storage.base import (
    CANDIDATE_COLUMNS,
    AddHistory,
    CandidateInfo,
    MemoryOp,
    MemoryQuery,
    MemoryStore,
    PurgeMemory,
    PutEdge,
    PutMemory,
    SetEmbedding,
    SetLifecycle,
)
from nous.storage.codec import (
    JSON_COLUMNS,
    MODEL_COLUMNS,
    TIME_COLUMNS,
    memory_to_row,
    row_to_candidate,
    row_to_memory,
)
from nous.storage.filters import where_clause
from nous.storage.sql.plan import Dialect, Plan, Rows, SQLRunner, Stmt

SELECT_COLUMNS = ", ".join(MODEL_COLUMNS)
EDGE_COLUMNS = "source_id, target_id, relation, agent_id, weight, created_at"


def memory_rows(d: Dialect, puts: list[PutMemory], rev: int | None) -> Rows:
    """The memory rows of ``puts`` (all alike in ``keep_embedding``), as one upsert: a row whose id
    exists is replaced when it belongs to the same agent and left alone otherwise."""
    rows: list[tuple[Any, ...]] = []
    columns: tuple[str, ...] = ()
    for op in puts:
        row = memory_to_row(op.memory, op.content_hash)
        for name in JSON_COLUMNS:
            row[name] = d.json(row[name])
        for name in TIME_COLUMNS:
            row[name] = d.time(row[name])
        if rev is not None:
            row["rev"] = rev
        if not op.keep_embedding:
            row["embedding"] = None if op.embedding is None else d.vector(op.embedding)
            row["embedding_model"] = op.embedding_model if op.embedding is not None else None
        columns = tuple(row)
        rows.append(tuple(row.values()))
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "id")
    conflict = f"ON CONFLICT (id) DO UPDATE SET {updates} WHERE memories.agent_id = excluded.agent_id"
    return Rows("memories", columns, rows, conflict)


def history_rows(d: Dialect, entries: list[HistoryEntry]) -> Rows:
    """Audit rows, numbered (``history.id``) in the given order."""
    return Rows(
        "history",
        ("memory_id", "agent_id", "action", "old_value", "new_value", "actor", "at"),
        [
            (
                h.memory_id,
                h.agent_id,
                h.action.value,
                d.json(h.old_value),
                d.json(h.new_value),
                h.actor,
                d.time(h.at),
            )
            for h in entries
        ],
    )


def chunk_rows(d: Dialect, owners: list[tuple[str, str, list[np.ndarray]]]) -> Rows:
    """Chunk vectors of (memory id, agent id, chunks) triples, numbered from 1 per memory."""
    columns = ("memory_id", "chunk_no", "embedding") + (("agent_id",) if d.chunk_agent else ())
    rows = [
        (mid, no, d.vector(v), *([agent] if d.chunk_agent else []))  # PostgreSQL's chunk search filters on it
        for mid, agent, chunks in owners
        for no, v in enumerate(chunks, 1)
    ]
    return Rows("memory_chunks", columns, rows)


def apply_memory_op(d: Dialect, op: MemoryOp, rev: int | None) -> Plan[bool]:
    """Apply one memory op inside the caller's transaction. ``rev`` (SQLite) is the write's
    revision: rows it touches carry it, so the in-process vector index reloads just those."""
    match op:
        case PutMemory():
            put = memory_rows(d, [op], rev)
            values = list(put.rows[0])
            guard = ""
            if op.expect_updated_at is not None:
                guard = " AND memories.updated_at = ?"
                values.append(d.time(op.expect_updated_at))
            done = yield Stmt(put.insert() + guard, values)
            if done.rowcount == 0 and op.expect_updated_at is not None:
                raise StaleWriteError(f"memory {op.memory.id} changed since it was read")
            if done.rowcount == 0:
                raise ConflictError(f"memory id {op.memory.id} belongs to another agent")
            if not op.keep_embedding:
                chunks = op.chunks if op.embedding is not None else None
                yield from _replace_chunks(d, op.memory.id, op.memory.agent_id, chunks)
            return True
        case PutEdge(edge=e):
            done = yield Stmt(
                f"INSERT INTO edges ({EDGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (e.source_id, e.target_id, e.relation.value, e.agent_id, e.weight, d.time(e.created_at)),
            )
            return done.rowcount > 0
        case AddHistory(entry=h):
            audit = history_rows(d, [h])
            yield Stmt(audit.insert(), audit.rows[0])
            return True
        case PurgeMemory(memory_id=mid):
            yield Stmt(  # its thread keeps no trace of it (the thread's state is derived again)
                "DELETE FROM thread_members WHERE agent_id = (SELECT agent_id FROM memories WHERE id = ?) "
                "AND memory_id = ?",
                (mid, mid),
            )
            done = yield Stmt("DELETE FROM memories WHERE id = ?", (mid,))
            yield Stmt("DELETE FROM memory_chunks WHERE memory_id = ?", (mid,))
            yield Stmt("DELETE FROM edges WHERE source_id = ? OR target_id = ?", (mid, mid))
            if rev is not None:  # tells the in-process vector index to drop it
                yield Stmt("INSERT INTO purged (id, rev) VALUES (?, ?)", (mid, rev))
            return done.rowcount > 0
        case SetLifecycle():
            done = yield Stmt(
                "UPDATE memories SET lifecycle = ?, stability = ?, review_count = ?, last_reviewed_at = ? "
                "WHERE id = ? AND agent_id = ?",
                (
                    *(op.lifecycle.value, op.stability, op.review_count, d.time(op.last_reviewed_at)),
                    *(op.memory_id, op.agent_id),
                ),
            )
            return done.rowcount > 0
        case SetEmbedding():
            revs = [] if rev is None else [rev]
            owner = yield Stmt(
                f"UPDATE memories SET embedding = ?, embedding_model = ?{', rev = ?' * len(revs)} "
                "WHERE id = ? AND content_hash = ? RETURNING agent_id",
                (d.vector(op.embedding), op.embedding_model, *revs, op.memory_id, op.content_hash),
            )
            if owner.rows:
                yield from _replace_chunks(d, op.memory_id, owner.scalar(), op.chunks)
            return bool(owner.rows)
        case _:
            assert_never(op)


def _replace_chunks(d: Dialect, memory_id: str, agent_id: str, chunks: list[np.ndarray] | None) -> Plan[None]:
    """Replace a memory's chunk vectors (none: just delete the stored ones)."""
    yield Stmt("DELETE FROM memory_chunks WHERE memory_id = ?", (memory_id,))
    if chunks:
        yield chunk_rows(d, [(memory_id, agent_id, chunks)])


def put_memories(d: Dialect, puts: list[PutMemory], rev: int | None) -> Plan[None]:
    """What a ``PutMemory`` of each of ``puts`` writes, in a few statements: the rows as one upsert,
    then their chunk vectors. Each put replaces its embedding (none keeps it), and no two name
    the same memory (one statement cannot change a row twice)."""
    put = memory_rows(d, puts, rev)
    done = yield put
    if done.rowcount < len(puts):  # some id is another agent's: name the first, as one by one would
        owner: dict[str, str] = {}
        for batch in d.batches(op.memory.id for op in puts):
            among, params = d.in_("id", batch)
            found = yield Stmt(f"SELECT id, agent_id FROM memories WHERE {among}", params)
            owner.update(found.rows)
        bad = next(op.memory.id for op in puts if owner.get(op.memory.id) != op.memory.agent_id)
        raise ConflictError(f"memory id {bad} belongs to another agent")
    for batch in d.batches(op.memory.id for op in puts):
        among, params = d.in_("memory_id", batch)
        yield Stmt(f"DELETE FROM memory_chunks WHERE {among}", params)
    chunked = [
        (op.memory.id, op.memory.agent_id, op.chunks) for op in puts if op.embedding is not None and op.chunks
    ]
    if chunked:
        yield chunk_rows(d, chunked)


class SQLMemories(SQLRunner, MemoryStore):
    """The memory reads every SQL backend shares (vector and keyword search are its own)."""

    async def _by_id(self, columns: str, agent_id: str, ids: list[str]) -> list[dict[str, Any]]:
        # SQLite: pinning agent_id keeps the planner on the id index
        sql = f"SELECT {columns} FROM memories WHERE {self.dialect.pin('agent_id')} = ? AND {{among}}"
        return (await self._select_in(sql, "id", ids, [agent_id])).dicts()

    async def get_many(self, agent_id: str, ids: list[str]) -> dict[str, Memory]:
        return {r["id"]: row_to_memory(r) for r in await self._by_id(SELECT_COLUMNS, agent_id, ids)}

    async def describe(self, agent_id: str, ids: list[str]) -> dict[str, CandidateInfo]:
        return {
            r["id"]: row_to_candidate(tuple(r.values()))
            for r in await self._by_id(CANDIDATE_COLUMNS, agent_id, ids)
        }

    async def vectors(self, agent_id: str, ids: list[str]) -> dict[str, np.ndarray]:
        rows = await self._by_id("id, embedding", agent_id, ids)
        return {r["id"]: self.dialect.read_vector(r["embedding"]) for r in rows if r["embedding"] is not None}

    async def foreign_ids(self, agent_id: str, ids: list[str]) -> set[str]:
        found = await self._select_in(
            "SELECT id FROM memories WHERE agent_id <> ? AND {among}", "id", ids, [agent_id]
        )
        return {r[0] for r in found.rows}

    async def resolve_prefix(self, agent_id: str, prefix: str) -> list[str]:
        match, params = self.dialect.starts_with("id", prefix)
        found = await self._select(
            f"SELECT id FROM memories WHERE agent_id = ? AND {match} LIMIT 2", [agent_id, *params]
        )
        return [r[0] for r in found.rows]

    async def resolve_history_prefix(self, agent_id: str, prefix: str) -> list[str]:
        match, params = self.dialect.starts_with("memory_id", prefix)
        found = await self._select(
            f"SELECT DISTINCT memory_id FROM history WHERE {match} AND agent_id = ? LIMIT 2",
            [*params, agent_id],
        )
        return [r[0] for r in found.rows]

    async def query(self, query: MemoryQuery) -> list[Memory]:
        where, params = where_clause(query, "?", dialect=self.dialect, time_param=self.dialect.time)
        order = "DESC" if query.newest_first else "ASC"
        found = await self._select(
            f"SELECT {SELECT_COLUMNS} FROM memories WHERE {where} "
            f"ORDER BY occurred_at {order}, seq {order} LIMIT ? OFFSET ?",
            [*params, query.limit, query.offset],
        )
        return [row_to_memory(r) for r in found.dicts()]

    async def edges(self, agent_id: str, ids: list[str]) -> list[Edge]:
        out: dict[tuple[str, str, str], Edge] = {}
        for batch in self.dialect.batches(ids) if ids else []:
            source, params = self.dialect.in_("source_id", batch)
            target, _ = self.dialect.in_("target_id", batch)
            found = await self._select(
                f"SELECT {EDGE_COLUMNS} FROM edges WHERE agent_id = ? AND ({source} OR {target})",
                [agent_id, *params, *params],
            )
            for e in map(self._edge, found.dicts()):
                out[(e.source_id, e.target_id, e.relation.value)] = e
        return list(out.values())

    async def all_edges(self, agent_id: str) -> list[Edge]:
        found = await self._select(
            f"SELECT {EDGE_COLUMNS} FROM edges WHERE agent_id = ? ORDER BY created_at", [agent_id]
        )
        return [self._edge(r) for r in found.dicts()]

    def _edge(self, row: dict[str, Any]) -> Edge:
        return Edge(**{**row, "created_at": self.dialect.read_time(row["created_at"])})

    async def history(self, agent_id: str, memory_id: str) -> list[HistoryEntry]:
        d = self.dialect
        found = await self._select(
            "SELECT id, memory_id, agent_id, action, old_value, new_value, actor, at FROM history "
            "WHERE memory_id = ? AND agent_id = ? ORDER BY id",
            [memory_id, agent_id],
        )
        rows = found.dicts()
        for r in rows:
            r.update(old_value=d.read_json(r["old_value"]), new_value=d.read_json(r["new_value"]))
            r["at"] = d.read_time(r["at"])
        return [HistoryEntry(**r) for r in rows]

    async def embeddings_by_hash(self, hashes: list[str], model: str) -> dict[str, np.ndarray]:
        found = await self._select_in(
            "SELECT content_hash, embedding FROM memories WHERE embedding_model = ? AND embedding IS NOT NULL "
            "AND {among}",
            "content_hash",
            hashes,
            [model],
        )
        return {h: self.dialect.read_vector(v) for h, v in found.rows}

    async def chunks_by_hash(self, hashes: list[str], model: str) -> dict[str, list[np.ndarray]]:
        owner: dict[str, str] = {}  # hash -> the one memory whose chunks are used
        out: dict[str, list[np.ndarray]] = {}
        found = await self._select_in(
            "SELECT m.content_hash, m.id, c.embedding FROM memories m JOIN memory_chunks c ON c.memory_id = m.id "
            "WHERE m.embedding_model = ? AND {among} ORDER BY m.id, c.chunk_no",
            "m.content_hash",
            hashes,
            [model],
        )
        for h, mid, v in found.rows:
            if owner.setdefault(h, mid) == mid:
                out.setdefault(h, []).append(self.dialect.read_vector(v))
        return out

    async def missing_chunks(self, agent_id: str, min_chars: int, limit: int) -> list[tuple[Memory, str]]:
        found = await self._select(
            f"SELECT {SELECT_COLUMNS} FROM memories m WHERE agent_id = ? AND embedding IS NOT NULL "
            "AND length(content) > ? AND NOT EXISTS (SELECT 1 FROM memory_chunks c WHERE c.memory_id = m.id) "
            "ORDER BY seq LIMIT ?",
            [agent_id, min_chars, limit],
        )
        return [(row_to_memory(r), r["content_hash"]) for r in found.dicts()]

    async def missing_embeddings(self, agent_id: str | None, limit: int) -> list[tuple[Memory, str]]:
        scope = "AND agent_id = ?" if agent_id else ""
        found = await self._select(
            f"SELECT {SELECT_COLUMNS} FROM memories WHERE embedding IS NULL {scope} ORDER BY seq LIMIT ?",
            [*([agent_id] if agent_id else []), limit],
        )
        return [(row_to_memory(r), r["content_hash"]) for r in found.dicts()]

    async def iter_memories(self, agent_id: str, batch_size: int = 500) -> AsyncIterator[Memory]:
        last = 0
        while True:
            found = await self._select(
                f"SELECT seq, {SELECT_COLUMNS} FROM memories WHERE agent_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                [agent_id, last, batch_size],
            )
            if not found.rows:
                return
            for row in found.dicts():
                yield row_to_memory(row)
            last = found.rows[-1][0]

    async def stats(self, agent_id: str) -> StoreStats:
        def count(sql: str) -> Plan[int]:
            return int((yield Stmt(sql, [agent_id])).scalar())

        def read() -> Plan[StoreStats]:
            current = "FROM memories WHERE agent_id = ? AND active AND superseded_by IS NULL GROUP BY"
            by_kind = yield Stmt(f"SELECT kind, count(*) {current} kind", [agent_id])
            by_lifecycle = yield Stmt(f"SELECT lifecycle, count(*) {current} lifecycle", [agent_id])
            version = yield Stmt("SELECT coalesce(max(version), 0) FROM schema_migrations")
            return StoreStats(
                backend=self.info.backend,
                location=self.info.location,
                agent_id=agent_id,
                active_by_kind={k: int(n) for k, n in by_kind.rows},
                active_by_lifecycle={k: int(n) for k, n in by_lifecycle.rows},
                inactive=(
                    yield from count(
                        "SELECT count(*) FROM memories WHERE agent_id = ? AND (NOT active OR superseded_by IS NOT NULL)"
                    )
                ),
                edges=(yield from count("SELECT count(*) FROM edges WHERE agent_id = ?")),
                history_rows=(yield from count("SELECT count(*) FROM history WHERE agent_id = ?")),
                missing_embeddings=(
                    yield from count("SELECT count(*) FROM memories WHERE agent_id = ? AND embedding IS NULL")
                ),
                schema_version=version.scalar(),
            )

        return await self._read(read())
