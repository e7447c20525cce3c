"""The PostgreSQL backend: pgvector HNSW (cosine) and tsvector/GIN keyword search."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector_async
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from nous.errors import ConflictError, InvalidInputError, StaleWriteError, StorageError
from nous.models import (
    Edge,
    EdgeRelation,
    HistoryAction,
    HistoryEntry,
    Memory,
    StoreStats,
    WorkingMemory,
)
from nous.models.events import Event, EventStatus
from nous.models.keys import ApiKey
from nous.models.llm import LLMUsage
from nous.models.session import IdentitySection, SessionState
from nous.storage.base import (
    CANDIDATE_COLUMNS,
    CONTEXT_WEIGHT,
    EVENT_OPS,
    KEY_OPS,
    LARGE_STORE,
    AddHistory,
    CandidateInfo,
    ClaimSessionEpisode,
    EndSession,
    MemoryQuery,
    NoteReply,
    NoteUserTurn,
    PurgeMemory,
    PutEdge,
    PutMemory,
    PutSession,
    PutWorkingMemory,
    ScoredId,
    SetEmbedding,
    SetIdentitySection,
    SetLifecycle,
    Store,
    StoreInfo,
    WriteOp,
    selective_terms,
    unencodable,
)
from nous.storage.codec import JSON_COLUMNS, MODEL_COLUMNS, memory_to_row, row_to_candidate, row_to_memory
from nous.storage.filters import where_clause
from nous.storage.locks import SlotLocks, slot_of
from nous.storage.migrations import load_migrations
from nous.storage.postgres.events import (
    apply_event_op,
    claim_events,
    count_events,
    read_events,
    read_llm_usage,
)
from nous.storage.postgres.hnsw import SET_EF_SEARCH, SET_EF_SEARCH_ARGS, SET_ITERATIVE_SCAN
from nous.storage.postgres.keys import apply_key_op, read_keys
from nous.storage.postgres.sessions import apply_session_op, read_identity, read_sessions

SELECT_COLUMNS = ", ".join(MODEL_COLUMNS)
EDGE_COLUMNS = "source_id, target_id, relation, agent_id, weight, created_at"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_WORD = re.compile(r"\w+")
CHUNK_HITS = 3  # the chunk search fetches this many chunks per result wanted (several share a memory)
# ts_rank_cd weights, in the order {D, C, B, A}: own text is weighted A, keyword context D.
RANK_WEIGHTS = [CONTEXT_WEIGHT, 0.0, 0.0, 1.0]
OWN_WEIGHTS = [0.0, 0.0, 0.0, 1.0]
ANALYZE_AFTER_ROWS = 2000


class PostgresStore(Store):
    """Store in a PostgreSQL database (with the pgvector extension), in its own schema."""

    def __init__(
        self, url: str, *, schema: str = "nous", pool_size: int = 4, connect_timeout_s: float = 5.0
    ) -> None:
        if not _SCHEMA_NAME.match(schema):
            raise StorageError(f"invalid schema name {schema!r}: use lowercase letters, digits, _")
        self.url = url
        self.schema = schema
        self._pool_size = pool_size
        self._connect_timeout_s = connect_timeout_s
        self.info = StoreInfo(backend="postgres", location=_redact(url), extras={"schema": schema})
        self._pool: AsyncConnectionPool | None = None
        self._lock_pool: AsyncConnectionPool | None = None
        self._slots = SlotLocks()
        self._lock_space = slot_of(f"nous:{schema}")  # advisory locks of this store's schema
        self._rows_at_analyze = 0
        self._written_since_analyze = 0
        self._term_share: dict[str, tuple[float, float]] = {}  # word -> (share, table rows then)

    # -- lifecycle -----------------------------------------------------------------
    async def open(self, *, embedding_model: str, embedding_dimensions: int) -> None:
        timeout = self._connect_timeout_s
        try:
            # Bounded: a server that accepts TCP but never answers must not hang the caller.
            connecting = psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=max(1, round(timeout))
            )
            async with await asyncio.wait_for(connecting, timeout) as conn:
                await asyncio.wait_for(self._migrate(conn, embedding_dimensions), max(timeout, 60.0))
        except TimeoutError:
            raise StorageError(
                f"PostgreSQL at {self.info.location} did not answer within {timeout:g} s "
                "(NOUS_CONNECT_TIMEOUT_S); is the server up and reachable?"
            ) from None
        except psycopg.Error as exc:
            raise StorageError(f"cannot prepare PostgreSQL store at {self.info.location}: {exc}") from exc

        async def configure(conn: psycopg.AsyncConnection) -> None:
            await register_vector_async(conn)

        self._pool = AsyncConnectionPool(
            self.url,
            min_size=1,
            max_size=self._pool_size,
            open=False,
            configure=configure,
            kwargs={
                "autocommit": True,
                "options": f"-c search_path={self.schema},public",
                "connect_timeout": max(1, round(self._connect_timeout_s)),
            },
        )
        try:
            await self._pool.open(wait=True, timeout=max(self._connect_timeout_s, 5.0))
        except Exception as exc:
            raise StorageError(f"cannot connect to PostgreSQL at {self.info.location}: {exc}") from exc
        await self._check_embedding_space(embedding_model, embedding_dimensions)
        self.info.embedding_model = embedding_model
        self.info.embedding_dimensions = embedding_dimensions

    async def drop_schema(self) -> None:
        """Delete this store's schema and everything in it (benchmarks' scratch stores)."""
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema))
            )

    async def close(self) -> None:
        if self._lock_pool is not None:
            await self._lock_pool.close()
            self._lock_pool = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    @asynccontextmanager
    async def exclusive(self, key: str) -> AsyncIterator[None]:
        """An advisory lock on a connection of its own (not the main pool's: a holder also needs
        a main connection to read and write, and must not wait for one held by a waiter)."""
        slot = slot_of(key)
        async with self._slots.get(slot):
            if self._lock_pool is None:
                self._lock_pool = AsyncConnectionPool(
                    self.url, min_size=0, max_size=4, open=False, kwargs={"autocommit": True}
                )
                await self._lock_pool.open()
            try:
                async with self._lock_pool.connection(timeout=30) as conn:
                    await conn.execute("SELECT pg_advisory_lock(%s, %s)", (self._lock_space, slot))
                    try:
                        yield
                    finally:
                        await conn.execute("SELECT pg_advisory_unlock(%s, %s)", (self._lock_space, slot))
            except (psycopg.Error, PoolTimeout) as exc:
                raise StorageError(f"PostgreSQL lock for {key!r} failed: {exc}") from exc

    async def _migrate(self, conn: psycopg.AsyncConnection, dimensions: int) -> None:
        schema = sql.Identifier(self.schema)
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"nous-migrate:{self.schema}",))
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
            await conn.execute(sql.SQL("SET LOCAL search_path = {}, public").format(schema))
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            cur = await conn.execute("SELECT version FROM schema_migrations")
            applied = {r[0] for r in await cur.fetchall()}
            for migration in load_migrations("nous.storage.postgres"):
                if migration.version in applied:
                    continue
                script = migration.sql.replace("{dimensions}", str(int(dimensions)))
                await conn.execute(script.encode())
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    (migration.version, migration.name),
                )

    async def _check_embedding_space(self, model: str, dims: int) -> None:
        async with self._conn() as conn:
            # The first process to open a new schema claims its embedding space; DO NOTHING
            # keeps a claim made first elsewhere, and the read after it checks against that.
            await conn.execute(
                "INSERT INTO meta VALUES ('embedding_model', %s), ('embedding_dimensions', %s) "
                "ON CONFLICT DO NOTHING",
                (model, str(dims)),
            )
            cur = await conn.execute("SELECT key, value FROM meta")
            meta = dict(await cur.fetchall())
        if meta["embedding_model"] != model or int(meta["embedding_dimensions"]) != dims:
            raise StorageError(
                f"this store was built with embedding model {meta['embedding_model']!r} "
                f"({meta['embedding_dimensions']} dims) but {model!r} ({dims} dims) is configured; "
                "configure the original model or use a new schema"
            )

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[psycopg.AsyncConnection]:
        """A pooled connection; driver failures (a lost connection, a server that went away, no
        free connection) become StorageErrors that say so."""
        if self._pool is None:
            raise StorageError("store is not open")
        try:
            async with self._pool.connection(timeout=max(self._connect_timeout_s, 30.0)) as conn:
                yield conn
        except PoolTimeout as exc:
            raise StorageError(
                f"no PostgreSQL connection to {self.info.location} became free: {exc}"
            ) from exc
        except psycopg.OperationalError as exc:
            raise StorageError(f"lost the connection to PostgreSQL at {self.info.location}: {exc}") from exc
        except psycopg.DataError as exc:
            if "NUL (0x00)" in str(exc):  # psycopg refuses to send it: the caller's text, not a fault
                raise InvalidInputError("text contains a NUL (0x00) character") from None
            raise StorageError(f"PostgreSQL error at {self.info.location}: {exc}") from exc
        except psycopg.Error as exc:
            raise StorageError(f"PostgreSQL error at {self.info.location}: {exc}") from exc
        except UnicodeEncodeError as exc:  # adapting a parameter: the caller's text
            raise unencodable(exc) from None

    async def _fetch(self, query: str, params: Any = ()) -> list[dict[str, Any]]:
        async with self._conn() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(query, params)
            return await cur.fetchall()

    # -- writes --------------------------------------------------------------------
    async def apply(self, ops: list[WriteOp]) -> list[bool]:
        if not ops:
            return []
        try:
            async with self._conn() as conn, conn.transaction():
                results: list[bool] = []
                for op in ops:
                    if isinstance(op, EVENT_OPS):
                        results.append(await apply_event_op(conn, op, bool(results) and results[-1]))
                    elif isinstance(op, KEY_OPS):
                        results.append(await apply_key_op(conn, op, lambda t: t))
                    else:
                        results.append(await self._apply_one(conn, op))
        except psycopg.Error as exc:
            raise StorageError(f"write failed: {exc}") from exc
        self._written_since_analyze += sum(isinstance(op, PutMemory | SetEmbedding) for op in ops)
        if self._written_since_analyze > max(ANALYZE_AFTER_ROWS, self._rows_at_analyze // 5):
            await self.analyze()
        return results

    async def analyze(self) -> None:
        """Refresh planner statistics, so filtered vector search keeps using the HNSW index after
        bulk writes (with stale statistics the planner scans and sorts every row instead)."""
        async with self._conn() as conn:
            await conn.execute("ANALYZE memories")
            await conn.execute("ANALYZE memory_chunks")
            cur = await conn.execute(
                "SELECT reltuples::bigint FROM pg_class WHERE oid = 'memories'::regclass"
            )
            self._rows_at_analyze = max(0, int(_scalar(await cur.fetchone())))
        self._written_since_analyze = 0

    async def _apply_one(self, conn: psycopg.AsyncConnection, op: WriteOp) -> bool:
        match op:
            case PutMemory():
                row = memory_to_row(op.memory, op.content_hash)
                for name in JSON_COLUMNS:
                    if row[name] is not None:
                        row[name] = Jsonb(row[name])
                columns = list(MODEL_COLUMNS)
                values = [row[c] for c in columns]
                if not op.keep_embedding:
                    columns += ["embedding", "embedding_model"]
                    emb = None if op.embedding is None else np.asarray(op.embedding, np.float32)
                    values += [emb, op.embedding_model if emb is not None else None]
                updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "id")
                guard = ""
                if op.expect_updated_at is not None:
                    guard = " AND memories.updated_at = %s"
                    values.append(op.expect_updated_at)
                cur = await conn.execute(
                    f"INSERT INTO memories ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))}) "
                    f"ON CONFLICT (id) DO UPDATE SET {updates} WHERE memories.agent_id = excluded.agent_id{guard}",
                    values,
                )
                if cur.rowcount == 0 and op.expect_updated_at is not None:
                    raise StaleWriteError(f"memory {op.memory.id} changed since it was read")
                if cur.rowcount == 0:
                    raise ConflictError(f"memory id {op.memory.id} belongs to another agent")
                if not op.keep_embedding:
                    chunks = op.chunks if op.embedding is not None else None
                    await _replace_chunks(conn, op.memory.id, op.memory.agent_id, chunks)
                return True
            case PutEdge(edge=e):
                cur = await conn.execute(
                    f"INSERT INTO edges ({EDGE_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (e.source_id, e.target_id, e.relation.value, e.agent_id, e.weight, e.created_at),
                )
                return cur.rowcount > 0
            case AddHistory(entry=h):
                await conn.execute(
                    "INSERT INTO history (memory_id, agent_id, action, old_value, new_value, actor, at) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (
                        h.memory_id,
                        h.agent_id,
                        h.action.value,
                        None if h.old_value is None else Jsonb(h.old_value),
                        None if h.new_value is None else Jsonb(h.new_value),
                        h.actor,
                        h.at,
                    ),
                )
                return True
            case PurgeMemory(memory_id=mid):
                cur = await conn.execute("DELETE FROM memories WHERE id = %s", (mid,))
                await conn.execute("DELETE FROM edges WHERE source_id = %s OR target_id = %s", (mid, mid))
                return cur.rowcount > 0
            case (
                NoteUserTurn()
                | NoteReply()
                | ClaimSessionEpisode()
                | EndSession()
                | PutSession()
                | SetIdentitySection()
            ):
                return await apply_session_op(conn, op)
            case PutWorkingMemory(working_memory=wm):
                guard, params = (
                    "",
                    [wm.agent_id, wm.session_id, Jsonb(wm.model_dump(mode="json")), wm.updated_at],
                )
                if op.check:
                    guard = " WHERE working_memory.updated_at IS NOT DISTINCT FROM %s"
                    params.append(op.expect_updated_at)
                cur = await conn.execute(
                    "INSERT INTO working_memory VALUES (%s, %s, %s, %s) ON CONFLICT (agent_id, session_id) "
                    f"DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at{guard}",
                    params,
                )
                if cur.rowcount == 0:
                    raise StaleWriteError(
                        f"working memory of session {wm.session_id!r} changed since it was read"
                    )
                return True
            case SetLifecycle():
                cur = await conn.execute(
                    "UPDATE memories SET lifecycle = %s, stability = %s, review_count = %s, "
                    "last_reviewed_at = %s WHERE id = %s AND agent_id = %s",
                    (
                        op.lifecycle.value,
                        op.stability,
                        op.review_count,
                        op.last_reviewed_at,
                        op.memory_id,
                        op.agent_id,
                    ),
                )
                return cur.rowcount > 0
            case SetEmbedding():
                cur = await conn.execute(
                    "UPDATE memories SET embedding = %s, embedding_model = %s WHERE id = %s AND content_hash = %s "
                    "RETURNING agent_id",
                    (np.asarray(op.embedding, np.float32), op.embedding_model, op.memory_id, op.content_hash),
                )
                owner = await cur.fetchone()
                if owner is not None:
                    await _replace_chunks(conn, op.memory_id, owner[0], op.chunks)
                return owner is not None
        raise StorageError(f"unknown write operation {op!r}")

    # -- reads ---------------------------------------------------------------------
    async def get_many(self, agent_id: str, ids: list[str]) -> dict[str, Memory]:
        if not ids:
            return {}
        rows = await self._fetch(
            f"SELECT {SELECT_COLUMNS} FROM memories WHERE agent_id = %s AND id = ANY(%s)",
            (agent_id, list(dict.fromkeys(ids))),
        )
        return {r["id"]: row_to_memory(r) for r in rows}

    async def foreign_ids(self, agent_id: str, ids: list[str]) -> set[str]:
        if not ids:
            return set()
        rows = await self._fetch(
            "SELECT id FROM memories WHERE id = ANY(%s) AND agent_id <> %s",
            (list(dict.fromkeys(ids)), agent_id),
        )
        return {r["id"] for r in rows}

    async def resolve_prefix(self, agent_id: str, prefix: str) -> list[str]:
        rows = await self._fetch(
            "SELECT id FROM memories WHERE agent_id = %s AND id LIKE %s LIMIT 2",
            (agent_id, _like_prefix(prefix)),
        )
        return [r["id"] for r in rows]

    async def resolve_history_prefix(self, agent_id: str, prefix: str) -> list[str]:
        rows = await self._fetch(
            "SELECT DISTINCT memory_id FROM history WHERE memory_id LIKE %s AND agent_id = %s LIMIT 2",
            (_like_prefix(prefix), agent_id),
        )
        return [r["memory_id"] for r in rows]

    async def query(self, query: MemoryQuery) -> list[Memory]:
        where, params = where_clause(query, "%s")
        order = "DESC" if query.newest_first else "ASC"
        rows = await self._fetch(
            f"SELECT {SELECT_COLUMNS} FROM memories WHERE {where} "
            f"ORDER BY occurred_at {order}, seq {order} LIMIT %s OFFSET %s",
            [*params, query.limit, query.offset],
        )
        return [row_to_memory(r) for r in rows]

    async def vector_search(
        self, query: MemoryQuery, embedding: np.ndarray, limit: int, *, chunks: bool = True
    ) -> list[ScoredId]:
        where, params = where_clause(query, "%s")
        vector = np.asarray(embedding, dtype=np.float32)
        nearest = (
            f"SELECT id{{score}} FROM memories WHERE {where} AND embedding IS NOT NULL "
            "ORDER BY embedding <=> %s LIMIT %s"
        )
        if not chunks:
            sql_text = nearest.format(score=", 1 - (embedding <=> %s) AS score, NULL AS main")
            args = [vector, *params, vector, limit]
        else:
            # Candidates: the nearest memories by their own embedding and the owners of the nearest
            # chunks (both through HNSW), each then scored by its best vector. The best ``limit`` by
            # either vector are among them as long as the chunks fetched name ``limit`` memories.
            where_m, params_m = where_clause(query, "%s", prefix="m.")
            sql_text = (
                f"WITH candidates AS (({nearest.format(score='')}) UNION "
                "(SELECT c.memory_id FROM memory_chunks c JOIN memories m ON m.id = c.memory_id "
                f"WHERE c.agent_id = %s AND {where_m} ORDER BY c.embedding <=> %s LIMIT %s)) "
                "SELECT m.id, 1 - LEAST(m.embedding <=> %s, (SELECT min(c.embedding <=> %s) "
                "FROM memory_chunks c WHERE c.memory_id = m.id)) AS score, 1 - (m.embedding <=> %s) AS main "
                "FROM candidates JOIN memories m ON m.id = candidates.id ORDER BY score DESC LIMIT %s"
            )
            args = [*params, vector, limit, query.agent_id, *params_m, vector, limit * CHUNK_HITS]
            args += [vector, vector, vector, limit]
        async with self._conn() as conn, conn.transaction():
            await conn.execute(SET_EF_SEARCH, SET_EF_SEARCH_ARGS)  # scaled by store size, see hnsw.py
            await conn.execute(SET_ITERATIVE_SCAN)
            cur = await conn.execute(sql_text, args)
            rows = await cur.fetchall()
        hits = [ScoredId(r[0], float(r[1]), main=float(r[1] if r[2] is None else r[2])) for r in rows]
        hits.sort(key=lambda h: h.score, reverse=True)
        return hits

    async def describe(self, agent_id: str, ids: list[str]) -> dict[str, CandidateInfo]:
        if not ids:
            return {}
        async with self._conn() as conn:
            cur = await conn.execute(
                f"SELECT {CANDIDATE_COLUMNS} FROM memories WHERE agent_id = %s AND id = ANY(%s)",
                (agent_id, ids),
            )
            rows = await cur.fetchall()
        return {r[0]: row_to_candidate(r) for r in rows}

    async def vectors(self, agent_id: str, ids: list[str]) -> dict[str, np.ndarray]:
        if not ids:
            return {}
        rows = await self._fetch(
            "SELECT id, embedding FROM memories WHERE agent_id = %s AND id = ANY(%s) AND embedding IS NOT NULL",
            (agent_id, ids),
        )
        return {r["id"]: _as_array(r["embedding"]) for r in rows}

    async def keyword_search(
        self, query: MemoryQuery, terms: list[str], limit: int, *, own: bool = False
    ) -> list[ScoredId]:
        words = [w for t in terms for w in _WORD.findall(t)]
        if not words:
            return []
        words = await self._selective_words(list(dict.fromkeys(words)))
        tsquery = " | ".join(words)
        where, params = where_clause(query, "%s", prefix="m.")
        ranked = (
            "SELECT m.id, m.tsv, ts_rank_cd(%s::float4[], m.tsv, q) AS score "
            "FROM memories m, to_tsquery('english', %s) q "
            f"WHERE m.tsv @@ q AND {where} ORDER BY score DESC, m.seq LIMIT %s"
        )
        if not own:
            rows = await self._fetch(
                f"SELECT id, score FROM ({ranked}) r", [RANK_WEIGHTS, tsquery, *params, limit]
            )
            return [ScoredId(r["id"], float(r["score"])) for r in rows]
        rows = await self._fetch(  # the own-text rank of the returned hits only
            f"SELECT r.id, r.score, ts_rank_cd(%s::float4[], r.tsv, to_tsquery('english', %s)) AS own "
            f"FROM ({ranked}) r ORDER BY r.score DESC",
            [OWN_WEIGHTS, tsquery, RANK_WEIGHTS, tsquery, *params, limit],
        )
        return [ScoredId(r["id"], float(r["score"]), float(r["own"])) for r in rows]

    async def _selective_words(self, words: list[str]) -> list[str]:
        """On large stores, drop words found in over COMMON_TERM_SHARE of memories.

        Shares are estimated on a ~2000-row page sample (one query for all new words) and
        cached until the table grows by a tenth: ranking every row that holds a common word
        made keyword search ~50 ms at 100k memories.
        """
        if len(words) < 2:
            return words
        rows = await self._fetch("SELECT reltuples AS n FROM pg_class WHERE oid = 'memories'::regclass")
        total = float(rows[0]["n"]) if rows else 0.0
        if total < LARGE_STORE:
            return words
        stale = [w for w in words if w not in self._term_share or total > self._term_share[w][1] * 1.1]
        if stale:
            percent = min(100.0, max(0.5, 2000 * 100 / total))
            counts = ", ".join(
                f"count(*) FILTER (WHERE tsv @@ plainto_tsquery('english', %s)) AS c{i}"
                for i in range(len(stale))
            )
            sample = await self._fetch(
                f"SELECT count(*) AS n, {counts} FROM memories TABLESAMPLE SYSTEM ({percent:.3f})", stale
            )
            seen = max(1, sample[0]["n"])
            if len(self._term_share) > 4096:
                self._term_share.clear()
            for i, w in enumerate(stale):
                self._term_share[w] = (sample[0][f"c{i}"] / seen, total)
        return selective_terms(words, {w: self._term_share[w][0] for w in words})

    async def edges(self, agent_id: str, ids: list[str]) -> list[Edge]:
        if not ids:
            return []
        rows = await self._fetch(
            f"SELECT {EDGE_COLUMNS} FROM edges WHERE agent_id = %s AND (source_id = ANY(%s) OR target_id = ANY(%s))",
            (agent_id, ids, ids),
        )
        return [_edge(r) for r in rows]

    async def all_edges(self, agent_id: str) -> list[Edge]:
        rows = await self._fetch(
            f"SELECT {EDGE_COLUMNS} FROM edges WHERE agent_id = %s ORDER BY created_at", (agent_id,)
        )
        return [_edge(r) for r in rows]

    async def history(self, agent_id: str, memory_id: str) -> list[HistoryEntry]:
        rows = await self._fetch(
            "SELECT id, memory_id, agent_id, action, old_value, new_value, actor, at FROM history "
            "WHERE memory_id = %s AND agent_id = %s ORDER BY id",
            (memory_id, agent_id),
        )
        return [HistoryEntry(**{**r, "action": HistoryAction(r["action"])}) for r in rows]

    async def embeddings_by_hash(self, hashes: list[str], model: str) -> dict[str, np.ndarray]:
        if not hashes:
            return {}
        rows = await self._fetch(
            "SELECT DISTINCT ON (content_hash) content_hash, embedding FROM memories "
            "WHERE embedding_model = %s AND embedding IS NOT NULL AND content_hash = ANY(%s)",
            (model, list(dict.fromkeys(hashes))),
        )
        return {r["content_hash"]: _as_array(r["embedding"]) for r in rows}

    async def chunks_by_hash(self, hashes: list[str], model: str) -> dict[str, list[np.ndarray]]:
        if not hashes:
            return {}
        rows = await self._fetch(
            "WITH pick AS (SELECT DISTINCT ON (content_hash) content_hash, id FROM memories m "
            "WHERE embedding_model = %s AND content_hash = ANY(%s) "
            "AND EXISTS (SELECT 1 FROM memory_chunks c WHERE c.memory_id = m.id) ORDER BY content_hash, id) "
            "SELECT p.content_hash, c.embedding FROM pick p JOIN memory_chunks c ON c.memory_id = p.id "
            "ORDER BY p.content_hash, c.chunk_no",
            (model, list(dict.fromkeys(hashes))),
        )
        out: dict[str, list[np.ndarray]] = {}
        for r in rows:
            out.setdefault(r["content_hash"], []).append(_as_array(r["embedding"]))
        return out

    async def missing_chunks(self, agent_id: str, min_chars: int, limit: int) -> list[tuple[Memory, str]]:
        rows = await self._fetch(
            f"SELECT {SELECT_COLUMNS} FROM memories m WHERE agent_id = %s AND embedding IS NOT NULL "
            "AND length(content) > %s AND NOT EXISTS (SELECT 1 FROM memory_chunks c WHERE c.memory_id = m.id) "
            "ORDER BY seq LIMIT %s",
            (agent_id, min_chars, limit),
        )
        return [(row_to_memory(r), r["content_hash"]) for r in rows]

    async def missing_embeddings(self, agent_id: str | None, limit: int) -> list[tuple[Memory, str]]:
        scope = "AND agent_id = %s" if agent_id else ""
        params: list[Any] = [agent_id] if agent_id else []
        rows = await self._fetch(
            f"SELECT {SELECT_COLUMNS} FROM memories WHERE embedding IS NULL {scope} ORDER BY seq LIMIT %s",
            [*params, limit],
        )
        return [(row_to_memory(r), r["content_hash"]) for r in rows]

    async def claim_events(
        self, agent_id: str, worker_id: str, *, limit: int, lease_until: datetime, now: datetime
    ) -> list[Event]:
        try:
            async with self._conn() as conn:
                return await claim_events(conn, agent_id, worker_id, limit, lease_until, now)
        except psycopg.Error as exc:
            raise StorageError(f"claiming events failed: {exc}") from exc

    async def events(
        self,
        agent_id: str,
        *,
        status: EventStatus | None = None,
        event_id: str | None = None,
        limit: int = 100,
    ) -> list[Event]:
        async with self._conn() as conn:
            return await read_events(conn, agent_id, status, event_id, limit)

    async def event_counts(self, agent_id: str) -> dict[EventStatus, int]:
        async with self._conn() as conn:
            return await count_events(conn, agent_id)

    async def api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        async with self._conn() as conn:
            found = await read_keys(conn, key_id)
        return found[0] if found else None

    async def api_keys(self) -> list[ApiKey]:
        async with self._conn() as conn:
            return [k for k, _ in await read_keys(conn, None)]

    async def llm_usage(self, agent_id: str) -> list[LLMUsage]:
        async with self._conn() as conn:
            return await read_llm_usage(conn, agent_id)

    async def session(self, agent_id: str, session_id: str) -> SessionState | None:
        async with self._conn() as conn:
            found = await read_sessions(conn, agent_id, session_id, None, 1)
        return found[0] if found else None

    async def sessions(
        self,
        agent_id: str,
        *,
        ended: bool | None = None,
        idle_before: datetime | None = None,
        limit: int = 100,
    ) -> list[SessionState]:
        async with self._conn() as conn:
            return await read_sessions(conn, agent_id, None, ended, limit, idle_before)

    async def identity(self, agent_id: str) -> list[IdentitySection]:
        async with self._conn() as conn:
            return await read_identity(conn, agent_id)

    async def working_memory(self, agent_id: str, session_id: str) -> WorkingMemory | None:
        rows = await self._fetch(
            "SELECT data FROM working_memory WHERE agent_id = %s AND session_id = %s", (agent_id, session_id)
        )
        return WorkingMemory.model_validate(rows[0]["data"]) if rows else None

    async def stats(self, agent_id: str) -> StoreStats:
        async with self._conn() as conn:

            async def one(q: str) -> Any:
                cur = await conn.execute(q, (agent_id,))
                return _scalar(await cur.fetchone())

            cur = await conn.execute(
                "SELECT kind, count(*) FROM memories WHERE agent_id = %s AND active AND superseded_by IS NULL "
                "GROUP BY kind",
                (agent_id,),
            )
            by_kind = {k: int(n) for k, n in await cur.fetchall()}
            cur = await conn.execute(
                "SELECT lifecycle, count(*) FROM memories WHERE agent_id = %s AND active "
                "AND superseded_by IS NULL GROUP BY lifecycle",
                (agent_id,),
            )
            by_lifecycle = {k: int(n) for k, n in await cur.fetchall()}
            inactive = await one(
                "SELECT count(*) FROM memories WHERE agent_id = %s AND (NOT active OR superseded_by IS NOT NULL)"
            )
            edges = await one("SELECT count(*) FROM edges WHERE agent_id = %s")
            history = await one("SELECT count(*) FROM history WHERE agent_id = %s")
            missing = await one("SELECT count(*) FROM memories WHERE agent_id = %s AND embedding IS NULL")
            cur = await conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations")
            version = _scalar(await cur.fetchone())
        return StoreStats(
            backend="postgres",
            location=self.info.location,
            agent_id=agent_id,
            active_by_kind=by_kind,
            active_by_lifecycle=by_lifecycle,
            inactive=inactive,
            edges=edges,
            history_rows=history,
            missing_embeddings=missing,
            schema_version=version,
        )

    async def iter_memories(self, agent_id: str, batch_size: int = 500) -> AsyncIterator[Memory]:
        last = 0
        while True:
            rows = await self._fetch(
                f"SELECT seq, {SELECT_COLUMNS} FROM memories WHERE agent_id = %s AND seq > %s "
                "ORDER BY seq LIMIT %s",
                (agent_id, last, batch_size),
            )
            if not rows:
                return
            for row in rows:
                yield row_to_memory(row)
            last = rows[-1]["seq"]


async def _replace_chunks(
    conn: psycopg.AsyncConnection, memory_id: str, agent_id: str, chunks: list[np.ndarray] | None
) -> None:
    """Replace a memory's chunk vectors (none: just delete the stored ones)."""
    await conn.execute("DELETE FROM memory_chunks WHERE memory_id = %s", (memory_id,))
    if chunks:
        async with conn.cursor() as cur:
            await cur.executemany(
                "INSERT INTO memory_chunks (memory_id, chunk_no, agent_id, embedding) VALUES (%s, %s, %s, %s)",
                [
                    (memory_id, no, agent_id, np.asarray(v, np.float32))
                    for no, v in enumerate(chunks, start=1)
                ],
            )


def _as_array(value: Any) -> np.ndarray:
    """pgvector returns numpy arrays or ``Vector`` objects depending on the version."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


def _edge(r: dict[str, Any]) -> Edge:
    return Edge(**{**r, "relation": EdgeRelation(r["relation"])})


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _redact(url: str) -> str:
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def _scalar(row: tuple[Any, ...] | None) -> Any:
    """The first column of a one-row result."""
    if row is None:
        raise StorageError("PostgreSQL returned no row where one was expected")
    return row[0]
