"""The PostgreSQL backend: pgvector HNSW (cosine) and tsvector/GIN keyword search."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector_async
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from nous.errors import InvalidInputError, StorageError
from nous.storage.base import (
    CONTEXT_WEIGHT,
    LARGE_STORE,
    MemoryQuery,
    PutMemory,
    ScoredId,
    SetEmbedding,
    StoreInfo,
    WriteOp,
    selective_terms,
    unencodable,
)
from nous.storage.filters import where_clause
from nous.storage.locks import SlotLocks, slot_of
from nous.storage.migrations import load_migrations
from nous.storage.postgres import bulk
from nous.storage.postgres.hnsw import SET_EF_SEARCH, SET_EF_SEARCH_ARGS, SET_ITERATIVE_SCAN
from nous.storage.sql.plan import Dialect, Plan, Result, Rows, T
from nous.storage.sql.store import SQLStore, claim_embedding_space

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_WORD = re.compile(r"\w+")
CHUNK_HITS = 3  # the chunk search fetches this many chunks per result wanted (several share a memory)
# ts_rank_cd weights, in the order {D, C, B, A}: own text is weighted A, keyword context D.
RANK_WEIGHTS = [CONTEXT_WEIGHT, 0.0, 0.0, 1.0]
OWN_WEIGHTS = [0.0, 0.0, 0.0, 1.0]
ANALYZE_AFTER_ROWS = 2000
# On large stores a word in more than this many memories does not pick rows for keyword search,
# it only ranks those the rarer words pick (see ``_selective_words``). It equals COMMON_TERM_SHARE
# of 100k memories, so up to that size no word is treated so.
RANKED_MATCHES = 5_000


@lru_cache(maxsize=1024)
def _pyformat(statement: str) -> str:
    """A shared statement in psycopg's placeholders (``?`` becomes ``%s``, a literal ``%`` doubles)."""
    return statement.replace("%", "%%").replace("?", "%s")


async def copy_rows(cur: psycopg.AsyncCursor[Any], rows: Rows) -> int:
    """Write ``rows`` with COPY; how many rows it inserted or changed. With a conflict clause the
    rows go to a staging table of the transaction first (COPY cannot resolve conflicts), then into
    their table by one INSERT ... SELECT in their order (``ord``), so serial columns number them
    as one INSERT per row would."""
    if not rows.rows:
        return 0
    if not rows.conflict:
        await _copy(cur, rows.table, rows.columns, rows.rows)
        return len(rows.rows)
    stage, columns = f"nous_stage_{rows.table}", ", ".join(rows.columns)
    await cur.execute(f"DROP TABLE IF EXISTS pg_temp.{stage}")
    await cur.execute(
        f"CREATE TEMP TABLE {stage} ON COMMIT DROP AS SELECT {columns}, 0 AS ord FROM {rows.table} WITH NO DATA"
    )
    await _copy(cur, stage, (*rows.columns, "ord"), [(*r, i) for i, r in enumerate(rows.rows)])
    await cur.execute(
        f"INSERT INTO {rows.table} ({columns}) SELECT {columns} FROM {stage} ORDER BY ord {rows.conflict}"
    )
    return cur.rowcount


async def _copy(
    cur: psycopg.AsyncCursor[Any], table: str, columns: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """COPY in binary: a vector's text form costs the client more than the rest of its row."""
    await cur.execute(
        "SELECT attname, atttypid FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0", (table,)
    )
    oids = dict(await cur.fetchall())
    async with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types([oids[c] for c in columns])
        for row in rows:
            await copy.write_row(row)


async def drive(conn: psycopg.AsyncConnection, plan: Plan[T]) -> T:
    """Run a plan's statements on ``conn``, sending each its result."""
    result: Result | None = None
    try:
        async with conn.cursor() as cur:
            while True:
                stmt = next(plan) if result is None else plan.send(result)
                if isinstance(stmt, Rows):
                    result = Result(await copy_rows(cur, stmt))
                    continue
                if stmt.many:
                    await cur.executemany(_pyformat(stmt.sql), stmt.params)
                    result = Result(cur.rowcount)
                    continue
                await cur.execute(_pyformat(stmt.sql), stmt.params)
                rows = await cur.fetchall() if cur.description else []
                result = Result(cur.rowcount, rows, [c.name for c in cur.description or []])
    except StopIteration as stop:
        return stop.value


class PostgresStore(SQLStore):
    """Store in a PostgreSQL database (with the pgvector extension), in its own schema."""

    def __init__(
        self,
        url: str,
        *,
        schema: str = "nous",
        pool_size: int = 4,
        connect_timeout_s: float = 5.0,
        index_build_mb: int = 1024,
    ) -> None:
        if not _SCHEMA_NAME.match(schema):
            raise StorageError(f"invalid schema name {schema!r}: use lowercase letters, digits, _")
        self.url = url
        self.schema = schema
        self._pool_size = pool_size
        self._connect_timeout_s = connect_timeout_s
        self._index_build_mb = index_build_mb
        self.info = StoreInfo(backend="postgres", location=_redact(url), extras={"schema": schema})
        self.dialect = Dialect()
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

        self._pool = AsyncConnectionPool(
            self.url,
            min_size=1,
            max_size=self._pool_size,
            open=False,
            configure=register_vector_async,
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
        await self._read(claim_embedding_space(embedding_model, embedding_dimensions, "schema"))
        await self._build_abandoned_indexes()
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

    @asynccontextmanager
    async def bulk_load(self) -> AsyncIterator[None]:
        """On an empty store, the vector indexes are dropped for the scope and built at its end
        (see ``postgres/bulk.py``); otherwise nothing changes. One load at a time per store."""
        async with self.exclusive(bulk.LOCK_KEY):
            async with self._conn() as conn:
                deferred = await bulk.defer_vector_indexes(conn, self.schema)
            try:
                yield
            finally:
                if deferred:
                    async with self._conn() as conn:
                        await bulk.build_deferred(conn, self._index_build_mb)
                    await self.analyze()

    async def _build_abandoned_indexes(self) -> None:
        """Build the indexes a load deferred and did not build (it died), unless a load is on."""
        async with self._conn() as conn:
            cur = await conn.execute(
                "SELECT EXISTS (SELECT 1 FROM meta WHERE key LIKE %s)", (f"{bulk.DEFERRED}%",)
            )
            if not _scalar(await cur.fetchone()):
                return
            cur = await conn.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (self._lock_space, slot_of(bulk.LOCK_KEY))
            )
            if not _scalar(await cur.fetchone()):
                return
            try:
                await bulk.build_deferred(conn, self._index_build_mb)
            finally:
                await conn.execute(
                    "SELECT pg_advisory_unlock(%s, %s)", (self._lock_space, slot_of(bulk.LOCK_KEY))
                )

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
        except psycopg.Error as exc:
            if isinstance(exc, psycopg.DataError) and "NUL (0x00)" in str(exc):
                # psycopg refuses to send it: the caller's text, not a fault
                raise InvalidInputError("text contains a NUL (0x00) character") from None
            raise StorageError(f"PostgreSQL error at {self.info.location}: {exc}") from exc
        except UnicodeEncodeError as exc:  # adapting a parameter: the caller's text
            raise unencodable(exc) from None

    async def _fetch(self, query: str, params: Any = ()) -> list[dict[str, Any]]:
        async with self._conn() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(query, params)
            return await cur.fetchall()

    async def _read(self, plan: Plan[T]) -> T:
        async with self._conn() as conn:
            return await drive(conn, plan)

    async def _write(self, plan: Plan[T]) -> T:
        async with self._conn() as conn, conn.transaction():
            return await drive(conn, plan)

    async def apply(self, ops: list[WriteOp]) -> list[bool]:
        results = await super().apply(ops)
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

    # -- search --------------------------------------------------------------------
    async def vector_search(
        self, query: MemoryQuery, embedding: np.ndarray, limit: int, *, chunks: bool = True
    ) -> list[ScoredId]:
        where, params = where_clause(query, "%s", dialect=self.dialect)
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
            where_m, params_m = where_clause(query, "%s", dialect=self.dialect, prefix="m.")
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

    async def keyword_search(
        self, query: MemoryQuery, terms: list[str], limit: int, *, own: bool = False
    ) -> list[ScoredId]:
        words = [w for t in terms for w in _WORD.findall(t)]
        if not words:
            return []
        picking, ranking = await self._selective_words(list(dict.fromkeys(words)))
        if not picking:
            return []
        where, params = where_clause(query, "%s", dialect=self.dialect, prefix="m.")
        # Rows are found by the picking tsquery (q) and ranked by the ranking one (s).
        ranked = (
            "SELECT m.id, m.tsv, ts_rank_cd(%s::float4[], m.tsv, s) AS score "
            "FROM memories m, to_tsquery('english', %s) q, to_tsquery('english', %s) s "
            f"WHERE m.tsv @@ q AND {where} ORDER BY score DESC, m.seq LIMIT %s"
        )
        args = [RANK_WEIGHTS, picking, ranking, *params, limit]
        if not own:
            rows = await self._fetch(f"SELECT id, score FROM ({ranked}) r", args)
            return [ScoredId(r["id"], float(r["score"])) for r in rows]
        rows = await self._fetch(  # the own-text rank of the returned hits only
            f"SELECT r.id, r.score, ts_rank_cd(%s::float4[], r.tsv, to_tsquery('english', %s)) AS own "
            f"FROM ({ranked}) r ORDER BY r.score DESC",
            [OWN_WEIGHTS, ranking, *args],
        )
        return [ScoredId(r["id"], float(r["score"]), float(r["own"])) for r in rows]

    async def _selective_words(self, words: list[str]) -> tuple[str, str]:
        """Two tsqueries: the one that finds the rows to rank, and the one that ranks them.

        On large stores words found in over COMMON_TERM_SHARE of memories are dropped (see
        ``selective_terms``), and a word in more than RANKED_MATCHES memories only adds to the
        score of rows the rarer words find: ranking reads each found row's ``tsv`` from the table,
        and ranking every row of a word in 1-3% of a million memories took 150-300 ms. Without a
        rarer word, the rows to rank are those holding all of the common ones (none for just one).

        Shares are estimated on a ~2000-row page sample (one query for all new words) and
        cached until the table grows by a tenth.
        """
        rows = await self._fetch("SELECT reltuples AS n FROM pg_class WHERE oid = 'memories'::regclass")
        total = float(rows[0]["n"]) if rows else 0.0
        if total < LARGE_STORE:
            return " | ".join(words), " | ".join(words)
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
        share = {w: self._term_share[w][0] for w in words}
        kept = selective_terms(words, share)
        rare = [w for w in kept if share[w] * total <= RANKED_MATCHES]
        if rare:
            return " | ".join(rare), " | ".join(kept)
        return (" & ".join(kept) if len(kept) > 1 else ""), " | ".join(kept)


def _redact(url: str) -> str:
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def _scalar(row: tuple[Any, ...] | None) -> Any:
    """The first column of a one-row result."""
    if row is None:
        raise StorageError("PostgreSQL returned no row where one was expected")
    return row[0]
