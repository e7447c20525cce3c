"""The embedded SQLite backend: WAL file, FTS5 keyword index, in-process vector index."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nous._time import as_utc
from nous.errors import StorageError
from nous.models.metadata import RANGE_OPS, MetaCondition
from nous.storage.base import (
    COMMON_TERM_SHARE,
    CONTEXT_WEIGHT,
    INDEX_OPS,
    LARGE_STORE,
    MemoryQuery,
    ScoredId,
    StoreInfo,
    WriteOp,
    selective_terms,
)
from nous.storage.filters import where_clause
from nous.storage.locks import FileSlots, SlotLocks, hold, slot_of
from nous.storage.migrations import load_migrations
from nous.storage.sql.plan import RANGE_SQL, Dialect, Plan, Result, Rows, Stmt, T, to_json
from nous.storage.sql.store import SQLStore, apply_ops, claim_embedding_space
from nous.storage.sqlite.connection import ReaderPool, WriterThread, rollback
from nous.storage.sqlite.index_file import IndexFile
from nous.storage.sqlite.vector_index import IndexFilter, VectorIndex

log = logging.getLogger(__name__)

CHUNK = 500  # ids per statement: SQLite binds each as its own parameter


def fmt_time(value: datetime) -> str:
    """Fixed-width UTC text, so string order is time order (a naive time is taken as UTC).

    ``isoformat`` pads the year to four digits; ``strftime("%Y")`` wrote year 1 as "1-01-01...",
    which ``fromisoformat`` cannot read back (and which sorted after every later year)."""
    return as_utc(value).isoformat(timespec="microseconds")


class SQLiteDialect(Dialect):
    """SQLite keeps times as fixed-width UTC text, JSON as text and vectors as float32 bytes."""

    for_update = ""
    chunk_agent = False

    def time(self, value: datetime | None) -> Any:
        return None if value is None else fmt_time(value)

    def read_time(self, value: Any) -> Any:  # a datetime, or None for NULL
        return None if value is None else datetime.fromisoformat(value)

    def json(self, value: Any) -> Any:
        return None if value is None else to_json(value)

    def read_json(self, value: Any) -> Any:
        return None if value is None else json.loads(value)

    def json_text(self, column: str, key: str) -> str:
        return f"json_extract({column}, '$.{key}')"

    def meta_condition(self, column: str, c: MetaCondition, mark: str) -> tuple[str, list[Any]]:
        # json_each rather than json_extract: a JSON path cannot name every key (quotes, backslashes)
        entry = f"EXISTS (SELECT 1 FROM json_each({column}) WHERE key = {mark}"
        if c.op == "exists":
            return f"{'' if c.value else 'NOT '}{entry})", [c.key]
        if c.op in RANGE_OPS:
            return f"{entry} AND type IN ('integer', 'real') AND value {RANGE_SQL[c.op]} {mark})", [
                c.key,
                c.value,
            ]
        tests: list[str] = []
        params: list[Any] = [c.key]
        for v in [c.value] if c.op == "eq" else c.value:
            if isinstance(v, bool):  # JSON true and false are types of their own in json_each
                tests.append(f"type = '{str(v).lower()}'")
            else:
                types = "= 'text'" if isinstance(v, str) else "IN ('integer', 'real')"
                tests.append(f"(type {types} AND value = {mark})")
                params.append(v)
        return f"{entry} AND ({' OR '.join(tests)}))", params

    def vector(self, value: np.ndarray) -> Any:
        return np.asarray(value, np.float32).tobytes()

    def read_vector(self, value: Any) -> np.ndarray:
        return np.frombuffer(value, dtype=np.float32).copy()

    def batches(self, values: Iterable[str]) -> list[list[str]]:
        items = list(dict.fromkeys(values))
        return [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]

    def in_(self, column: str, values: list[str]) -> tuple[str, list[Any]]:
        return f"{column} IN ({_marks(len(values))})", list(values)

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        return f"{column} >= ? AND {column} < ?", [prefix, prefix + "\uffff"]

    def pin(self, column: str) -> str:
        return f"+{column}"


def drive(conn: sqlite3.Connection, plan: Plan[T]) -> T:
    """Run a plan's statements on ``conn``, sending each its result."""
    result: Result | None = None
    try:
        while True:
            stmt = next(plan) if result is None else plan.send(result)
            if isinstance(stmt, Rows):  # one batched INSERT: SQLite has no faster way in
                result = Result(conn.executemany(stmt.insert(), stmt.rows).rowcount if stmt.rows else 0)
                continue
            cur = (
                conn.executemany(stmt.sql, stmt.params) if stmt.many else conn.execute(stmt.sql, stmt.params)
            )
            rows = cur.fetchall()  # before rowcount: an UPDATE ... RETURNING counts as its rows are read
            columns = [c[0] for c in cur.description] if cur.description else []
            result = Result(cur.rowcount, rows, columns)
    except StopIteration as stop:
        return stop.value


def _transaction(conn: sqlite3.Connection, plan: Plan[T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        value = drive(conn, plan)
        conn.execute("COMMIT")
        return value
    except BaseException:
        rollback(conn)
        raise


def _marks(n: int) -> str:
    return ", ".join("?" * n)


class SQLiteStore(SQLStore):
    """Embedded store in one SQLite file."""

    def __init__(self, path: Path, *, readers: int = 4, busy_timeout_s: float = 30.0) -> None:
        self.path = path
        self._readers_count = readers
        self._busy_timeout_s = busy_timeout_s
        self.info = StoreInfo(backend="sqlite", location=str(path))
        self.dialect = SQLiteDialect()
        self._writer: WriterThread | None = None
        self._readers: ReaderPool | None = None
        self._index: VectorIndex | None = None
        self._term_counts = _TermCounts()
        self._slots = SlotLocks()
        self._saving: asyncio.Task[bool] | None = None

    # -- lifecycle -----------------------------------------------------------------
    async def open(self, *, embedding_model: str, embedding_dimensions: int) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = WriterThread(self.path, busy_timeout_s=self._busy_timeout_s)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open SQLite store at {self.path}: {exc}") from exc
        await self._writer.run(self._migrate)
        claim = claim_embedding_space(embedding_model, embedding_dimensions, "database")
        await self._writer.run(lambda conn: drive(conn, claim))  # outside a transaction: see the plan
        self.info.embedding_model = embedding_model
        self.info.embedding_dimensions = embedding_dimensions
        self._readers = ReaderPool(self.path, self._readers_count, busy_timeout_s=self._busy_timeout_s)
        file = IndexFile(self.path, model=embedding_model, dimensions=embedding_dimensions)
        self._index = VectorIndex(embedding_dimensions, file)

    async def warm_up(self) -> None:
        """Open the vector index from its file (or build it) and catch it up with the rows."""
        index = self._index
        if index is None:
            raise StorageError("store is not open")
        await self._r().run(index.refresh)
        self._save_soon()

    @property
    def index_restored(self) -> bool:
        """Whether the vector index was opened from its file (not rebuilt from the rows)."""
        return self._index is not None and self._index.restored

    async def save_index(self) -> bool:
        """Write the vector index's file now if it holds rows the file lacks; whether it wrote."""
        if self._saving is not None:
            await asyncio.gather(self._saving, return_exceptions=True)
        index = self._index
        if index is None or index.file is None:
            return False
        return await asyncio.to_thread(self._save_index, index)

    def _save_index(self, index: VectorIndex) -> bool:
        state = index.snapshot()
        if state is None or index.file is None:
            return False
        try:
            return index.file.save(state, self._busy_timeout_s)
        except (OSError, ValueError, sqlite3.Error) as exc:
            log.warning(
                "vector index not saved to %s: %s (it is rebuilt on the next open)", index.file.path, exc
            )
            return False

    def _save_soon(self) -> None:
        """Save the index in the background once enough new rows came in (one save at a time)."""
        index = self._index
        if index is not None and index.wants_save() and (self._saving is None or self._saving.done()):
            self._saving = asyncio.get_running_loop().create_task(asyncio.to_thread(self._save_index, index))

    @asynccontextmanager
    async def exclusive(self, key: str) -> AsyncIterator[None]:
        slot = slot_of(key)
        # This process's waiters queue on an asyncio lock, so at most one per slot waits on a
        # thread for the file lock: each waiter held a default-executor thread, and a few of them
        # starved everything else that runs there.
        async with self._slots.get(slot):
            try:
                slots = FileSlots.for_path(f"{self.path}.lock")
                await hold(slots, slot)  # waits on a worker thread: the event loop keeps serving
            except OSError as exc:
                raise StorageError(f"cannot lock {self.path}.lock: {exc}") from exc
            try:
                yield
            finally:
                slots.release(slot)

    async def close(self) -> None:
        if self._saving is not None:
            await asyncio.gather(self._saving, return_exceptions=True)
            self._saving = None
        if self._index is not None and self._index.wants_save() and self._writer is not None:
            await asyncio.to_thread(self._save_index, self._index)
        if self._readers is not None:
            self._readers.close()
            self._readers = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        applied = {v for (v,) in conn.execute("SELECT version FROM schema_migrations")}
        for migration in load_migrations("nous.storage.sqlite"):
            if migration.version in applied:
                continue
            # Decide under the write lock: another process opening the same file may have
            # applied this migration since the read above, and running it twice fails.
            conn.execute("BEGIN IMMEDIATE")
            try:
                done = conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
                ).fetchone()
                if done:
                    conn.execute("COMMIT")
                    continue
                for statement in _split_sql(migration.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT OR IGNORE INTO schema_migrations VALUES (?, ?, ?)",
                    (migration.version, migration.name, fmt_time(datetime.now(UTC))),
                )
                conn.execute("COMMIT")
            except BaseException:
                rollback(conn)
                raise

    # -- running plans -------------------------------------------------------------
    def _w(self) -> WriterThread:
        if self._writer is None:
            raise StorageError("store is not open")
        return self._writer

    def _r(self) -> ReaderPool:
        if self._readers is None:
            raise StorageError("store is not open")
        return self._readers

    async def _read(self, plan: Plan[T]) -> T:
        return await self._r().run(lambda conn: drive(conn, plan))

    async def _write(self, plan: Plan[T]) -> T:
        return await self._w().run(lambda conn: _transaction(conn, plan))

    def _apply_plan(self, ops: list[WriteOp]) -> Plan[list[bool]]:
        rev = 0  # nothing the vector index holds changes: no refresh needed
        if any(isinstance(op, INDEX_OPS) for op in ops):
            bump = "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'rev' RETURNING CAST(value AS INTEGER)"
            rev = (yield Stmt(bump)).scalar()
        return (yield from apply_ops(self.dialect, ops, rev))

    # -- search --------------------------------------------------------------------
    async def vector_search(
        self, query: MemoryQuery, embedding: np.ndarray, limit: int, *, chunks: bool = True
    ) -> list[ScoredId]:
        index = self._index
        if index is None:
            raise StorageError("store is not open")
        vector = np.asarray(embedding, dtype=np.float32)

        def read(conn: sqlite3.Connection) -> list[ScoredId]:
            index.refresh(conn)
            allowed: np.ndarray | None = None
            if query.narrows_beyond_kind():
                where, params = where_clause(
                    _beyond_index(query), "?", dialect=self.dialect, time_param=fmt_time
                )
                # a metadata filter is kept and brought up to date by rev (see rows_where)
                allowed = index.rows_where(conn, where, params, keep=_metadata_only(query))
            flt = IndexFilter(
                agent_id=query.agent_id,
                kinds=tuple(k.value for k in query.kinds) if query.kinds else None,
                include_inactive=query.include_inactive,
                # as of a past time, the SQL above decides what was current then
                include_superseded=query.include_superseded or query.as_of is not None,
                allowed_rows=allowed,
            )
            return [
                ScoredId(i, s, main=m) for i, s, m in index.search(conn, vector, flt, limit, chunks=chunks)
            ]

        found = await self._r().run(read)
        self._save_soon()
        return found

    async def vectors(self, agent_id: str, ids: list[str]) -> dict[str, np.ndarray]:
        index = self._index
        if index is None:
            raise StorageError("store is not open")

        def read(conn: sqlite3.Connection) -> dict[str, np.ndarray]:
            index.refresh(conn)
            return index.vectors(conn, ids, agent_id)

        return await self._r().run(read) if ids else {}

    async def keyword_search(
        self, query: MemoryQuery, terms: list[str], limit: int, *, own: bool = False
    ) -> list[ScoredId]:
        if not terms:
            return []
        where, params = where_clause(query, "?", dialect=self.dialect, time_param=fmt_time, prefix="m.")
        # bm25() is lower-is-better; its weights are per column: (search_text, search_context).
        score = f"bm25(memories_fts, 1.0, {CONTEXT_WEIGHT!r})"
        # Fast path: rank in the FTS index alone, then filter the best few by scope. Joining every
        # match to its row before ranking costs more than the ranking itself on large stores.
        fast = (
            "SELECT m.id, -f.score, m.seq FROM (SELECT rowid, "
            f"{score} AS score FROM memories_fts WHERE memories_fts MATCH ? ORDER BY score LIMIT ?) f "
            f"JOIN memories m ON m.seq = f.rowid WHERE {where} ORDER BY f.score"
        )
        exact = (
            f"SELECT m.id, -{score} AS score, m.seq FROM memories_fts "
            "JOIN memories m ON m.seq = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {where} ORDER BY {score} LIMIT ?"
        )
        window = limit * 3

        def read(conn: sqlite3.Connection) -> list[ScoredId]:
            selective = self._term_counts.selective(conn, terms)
            if not selective:
                return []
            match = " OR ".join(_quote(t) for t in selective)
            rows = conn.execute(fast, [match, window, *params]).fetchall()
            if len(rows) < limit:
                (total,) = conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)",
                    (match, window + 1),
                ).fetchone()
                if total > window:  # the scope filtered out too many: rank within the scope instead
                    rows = conn.execute(exact, [match, *params, limit]).fetchall()
            rows = rows[:limit]
            own_score: dict[int, float] = {}
            if own and rows:  # the own-text rank of the returned hits only
                seqs = [r[2] for r in rows]
                own_score = dict(
                    conn.execute(
                        "SELECT rowid, -bm25(memories_fts, 1.0, 0.0) FROM memories_fts WHERE memories_fts "
                        f"MATCH ? AND rowid IN ({_marks(len(seqs))})",
                        [match, *seqs],
                    ).fetchall()
                )
            return [
                ScoredId(i, float(s), own_score.get(q, 0.0) + 0.0 if own else None)  # + 0.0: no -0.0
                for i, s, q in rows
            ]

        return await self._r().run(read)


def _beyond_index(query: MemoryQuery) -> MemoryQuery:
    """What the SQL of a filtered vector search must check: the index's filter applies kind,
    activity and supersession itself (but as of a past time, or for superseded memories only, the
    SQL decides those). Left to the index, they leave a metadata filter to a covering index."""
    if query.as_of is not None or query.superseded_only:
        return query
    # With a time bound the kinds stay: the (agent, kind, time) index then reads just those rows
    # (the episodes of two days, not every memory of two days).
    timed = query.since is not None or query.until is not None
    return replace(
        query, kinds=query.kinds if timed else None, include_inactive=True, include_superseded=True
    )


def _metadata_only(query: MemoryQuery) -> bool:
    """Whether the only filter beyond the index's own is on metadata (which changes only with a
    write of the row, and so with its rev)."""
    return query.where is not None and not replace(query, where=None).narrows_beyond_kind()


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class _TermCounts:
    """Capped document counts of query terms, cached until the store grows by a tenth.

    On large stores keyword search leaves out terms found in over COMMON_TERM_SHARE of all
    memories: their IDF is near zero but every memory holding them must be scored.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._cache: dict[str, tuple[int, int]] = {}  # term -> (count, store rows when counted)
        self._lock = threading.Lock()

    def selective(self, conn: sqlite3.Connection, terms: list[str]) -> list[str]:
        """``terms`` without the very common ones on large stores (see ``selective_terms``)."""
        (total,) = conn.execute("SELECT max(seq) FROM memories").fetchone()
        if not total or total < LARGE_STORE:
            return terms
        cap = int(total * COMMON_TERM_SHARE) + 1
        return selective_terms(terms, {t: self._count(conn, t, total, cap) / total for t in terms})

    def _count(self, conn: sqlite3.Connection, term: str, total: int, cap: int) -> int:
        with self._lock:
            cached = self._cache.get(term)
        if cached is not None and total <= cached[1] * 1.1:
            return cached[0]
        (n,) = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)",
            (_quote(term), cap + 1),
        ).fetchone()
        with self._lock:
            if len(self._cache) >= self._size:
                self._cache.clear()
            self._cache[term] = (n, total)
        return n


def _split_sql(script: str) -> list[str]:
    """Split a script into complete statements (trigger bodies stay whole)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        if not buffer and (not line.strip() or line.lstrip().startswith("--")):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise StorageError(f"incomplete SQL statement in migration: {buffer[:80]!r}")
    return statements
