"""The embedded SQLite backend: WAL file, FTS5 keyword index, in-process vector index."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nous._time import as_utc
from nous.errors import ConflictError, StaleWriteError, StorageError
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
    COMMON_TERM_SHARE,
    CONTEXT_WEIGHT,
    EVENT_OPS,
    INDEX_NEUTRAL_OPS,
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
from nous.storage.locks import FileSlots, hold, slot_of
from nous.storage.migrations import load_migrations
from nous.storage.sqlite.connection import ReaderPool, WriterThread, rollback
from nous.storage.sqlite.events import apply_event_op, claim_events, count_events, read_events, read_llm_usage
from nous.storage.sqlite.keys import apply_key_op, read_keys
from nous.storage.sqlite.sessions import apply_session_op, read_identity, read_sessions
from nous.storage.sqlite.vector_index import IndexFilter, VectorIndex

SELECT_COLUMNS = ", ".join(MODEL_COLUMNS)
CHUNK = 500


def fmt_time(value: datetime) -> str:
    """Fixed-width UTC text, so string order is time order (a naive time is taken as UTC).

    ``isoformat`` pads the year to four digits; ``strftime("%Y")`` wrote year 1 as "1-01-01...",
    which ``fromisoformat`` cannot read back (and which sorted after every later year)."""
    return as_utc(value).isoformat(timespec="microseconds")


def _encode(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for name in JSON_COLUMNS:
        out[name] = None if out[name] is None else json.dumps(out[name], separators=(",", ":"))
    for name in TIME_COLUMNS:
        if out[name] is not None:
            out[name] = fmt_time(out[name])
    out["active"] = int(out["active"])
    return out


def _rows(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def _chunks(items: list[str]) -> Iterable[list[str]]:
    for i in range(0, len(items), CHUNK):
        yield items[i : i + CHUNK]


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _rows_by_id(
    conn: sqlite3.Connection, columns: str, agent_id: str, ids: list[str]
) -> list[dict[str, Any]]:
    """Rows of an agent's memories by id, in chunks. ``+agent_id`` keeps SQLite on the id index."""
    out: list[dict[str, Any]] = []
    for chunk in _chunks(list(dict.fromkeys(ids))):
        cur = conn.execute(
            f"SELECT {columns} FROM memories WHERE +agent_id = ? AND id IN ({_marks(len(chunk))})",
            [agent_id, *chunk],
        )
        out.extend(_rows(cur))
    return out


class SQLiteStore(Store):
    """Embedded store in one SQLite file."""

    def __init__(self, path: Path, *, readers: int = 4, busy_timeout_s: float = 30.0) -> None:
        self.path = path
        self._readers_count = readers
        self._busy_timeout_s = busy_timeout_s
        self.info = StoreInfo(backend="sqlite", location=str(path))
        self._writer: WriterThread | None = None
        self._readers: ReaderPool | None = None
        self._index: VectorIndex | None = None
        self._term_counts = _TermCounts()

    # -- lifecycle -----------------------------------------------------------------
    async def open(self, *, embedding_model: str, embedding_dimensions: int) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = WriterThread(self.path, busy_timeout_s=self._busy_timeout_s)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open SQLite store at {self.path}: {exc}") from exc
        await self._writer.run(self._migrate)
        await self._writer.run(
            lambda c: self._check_embedding_space(c, embedding_model, embedding_dimensions)
        )
        self.info.embedding_model = embedding_model
        self.info.embedding_dimensions = embedding_dimensions
        self._readers = ReaderPool(self.path, self._readers_count, busy_timeout_s=self._busy_timeout_s)
        self._index = VectorIndex(embedding_dimensions)

    @asynccontextmanager
    async def exclusive(self, key: str) -> AsyncIterator[None]:
        slot = slot_of(key)
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

    @staticmethod
    def _check_embedding_space(conn: sqlite3.Connection, model: str, dims: int) -> None:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if "embedding_model" not in meta:
            # The first process to open a new file claims its embedding space, under the write
            # lock; OR IGNORE keeps a claim another process made first, and the read after it
            # checks against that claim. A store already claimed is opened with reads alone, so
            # it opens while another process holds the write lock.
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT OR IGNORE INTO meta VALUES (?, ?)",
                    [("embedding_model", model), ("embedding_dimensions", str(dims))],
                )
                meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
                conn.execute("COMMIT")
            except BaseException:
                rollback(conn)
                raise
        if meta["embedding_model"] != model or int(meta["embedding_dimensions"]) != dims:
            raise StorageError(
                f"this store was built with embedding model {meta['embedding_model']!r} "
                f"({meta['embedding_dimensions']} dims) but {model!r} ({dims} dims) is configured; "
                "configure the original model or use a new database"
            )

    # -- helpers -------------------------------------------------------------------
    def _w(self) -> WriterThread:
        if self._writer is None:
            raise StorageError("store is not open")
        return self._writer

    def _r(self) -> ReaderPool:
        if self._readers is None:
            raise StorageError("store is not open")
        return self._readers

    # -- writes --------------------------------------------------------------------
    async def apply(self, ops: list[WriteOp]) -> list[bool]:
        if not ops:
            return []
        return await self._w().run(lambda conn: self._apply(conn, ops))

    def _apply(self, conn: sqlite3.Connection, ops: list[WriteOp]) -> list[bool]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if all(isinstance(op, INDEX_NEUTRAL_OPS) for op in ops):
                rev = 0  # nothing the vector index holds changes: no refresh needed
            else:
                (rev,) = conn.execute(
                    "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'rev' "
                    "RETURNING CAST(value AS INTEGER)"
                ).fetchone()
            results: list[bool] = []
            for op in ops:
                if isinstance(op, EVENT_OPS):
                    results.append(apply_event_op(conn, op, fmt_time, bool(results) and results[-1]))
                elif isinstance(op, KEY_OPS):
                    results.append(apply_key_op(conn, op, fmt_time))
                else:
                    results.append(self._apply_one(conn, op, rev))
            conn.execute("COMMIT")
            return results
        except BaseException:
            rollback(conn)
            raise

    def _apply_one(self, conn: sqlite3.Connection, op: WriteOp, rev: int) -> bool:
        match op:
            case PutMemory():
                row = _encode(memory_to_row(op.memory, op.content_hash))
                columns = [*MODEL_COLUMNS, "rev"]
                values = [row[c] for c in MODEL_COLUMNS] + [rev]
                if not op.keep_embedding:
                    columns += ["embedding", "embedding_model"]
                    blob = None if op.embedding is None else np.asarray(op.embedding, np.float32).tobytes()
                    values += [blob, op.embedding_model if blob is not None else None]
                updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "id")
                guard = ""
                if op.expect_updated_at is not None:
                    guard = " AND memories.updated_at = ?"
                    values.append(fmt_time(op.expect_updated_at))
                cur = conn.execute(
                    f"INSERT INTO memories ({', '.join(columns)}) VALUES ({_marks(len(columns))}) "
                    f"ON CONFLICT(id) DO UPDATE SET {updates} WHERE memories.agent_id = excluded.agent_id{guard}",
                    values,
                )
                if cur.rowcount == 0 and op.expect_updated_at is not None:
                    raise StaleWriteError(f"memory {op.memory.id} changed since it was read")
                if cur.rowcount == 0:
                    raise ConflictError(f"memory id {op.memory.id} belongs to another agent")
                if not op.keep_embedding:
                    _replace_chunks(conn, op.memory.id, op.chunks if op.embedding is not None else None)
                return True
            case PutEdge(edge=e):
                cur = conn.execute(
                    "INSERT OR IGNORE INTO edges VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        e.source_id,
                        e.target_id,
                        e.relation.value,
                        e.agent_id,
                        e.weight,
                        fmt_time(e.created_at),
                    ),
                )
                return cur.rowcount > 0
            case AddHistory(entry=h):
                conn.execute(
                    "INSERT INTO history (memory_id, agent_id, action, old_value, new_value, actor, at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        h.memory_id,
                        h.agent_id,
                        h.action.value,
                        None if h.old_value is None else json.dumps(h.old_value),
                        None if h.new_value is None else json.dumps(h.new_value),
                        h.actor,
                        fmt_time(h.at),
                    ),
                )
                return True
            case PurgeMemory(memory_id=mid):
                cur = conn.execute("DELETE FROM memories WHERE id = ?", (mid,))
                conn.execute("DELETE FROM memory_chunks WHERE memory_id = ?", (mid,))
                conn.execute("DELETE FROM edges WHERE source_id = ? OR target_id = ?", (mid, mid))
                conn.execute("INSERT INTO purged (id, rev) VALUES (?, ?)", (mid, rev))
                return cur.rowcount > 0
            case (
                NoteUserTurn()
                | NoteReply()
                | ClaimSessionEpisode()
                | EndSession()
                | PutSession()
                | SetIdentitySection()
            ):
                return apply_session_op(conn, op, fmt_time)
            case PutWorkingMemory(working_memory=wm):
                guard = ""
                params: list[str | None] = [
                    wm.agent_id,
                    wm.session_id,
                    wm.model_dump_json(),
                    fmt_time(wm.updated_at),
                ]
                if op.check:
                    guard = " WHERE working_memory.updated_at IS ?"
                    params.append(None if op.expect_updated_at is None else fmt_time(op.expect_updated_at))
                cur = conn.execute(
                    "INSERT INTO working_memory VALUES (?, ?, ?, ?) ON CONFLICT (agent_id, session_id) "
                    f"DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at{guard}",
                    params,
                )
                if cur.rowcount == 0:
                    raise StaleWriteError(
                        f"working memory of session {wm.session_id!r} changed since it was read"
                    )
                return True
            case SetLifecycle():
                cur = conn.execute(
                    "UPDATE memories SET lifecycle = ?, stability = ?, review_count = ?, last_reviewed_at = ? "
                    "WHERE id = ? AND agent_id = ?",
                    (
                        op.lifecycle.value,
                        op.stability,
                        op.review_count,
                        None if op.last_reviewed_at is None else fmt_time(op.last_reviewed_at),
                        op.memory_id,
                        op.agent_id,
                    ),
                )
                return cur.rowcount > 0
            case SetEmbedding():
                cur = conn.execute(
                    "UPDATE memories SET embedding = ?, embedding_model = ?, rev = ? "
                    "WHERE id = ? AND content_hash = ?",
                    (
                        np.asarray(op.embedding, np.float32).tobytes(),
                        op.embedding_model,
                        rev,
                        op.memory_id,
                        op.content_hash,
                    ),
                )
                if cur.rowcount > 0:
                    _replace_chunks(conn, op.memory_id, op.chunks)
                return cur.rowcount > 0
        raise StorageError(f"unknown write operation {op!r}")

    # -- reads ---------------------------------------------------------------------
    async def get_many(self, agent_id: str, ids: list[str]) -> dict[str, Memory]:
        def read(conn: sqlite3.Connection) -> dict[str, Memory]:
            cur_rows = _rows_by_id(conn, SELECT_COLUMNS, agent_id, ids)
            return {row["id"]: row_to_memory(row) for row in cur_rows}

        return await self._r().run(read) if ids else {}

    async def foreign_ids(self, agent_id: str, ids: list[str]) -> set[str]:
        def read(conn: sqlite3.Connection) -> set[str]:
            found: set[str] = set()
            for chunk in _chunks(list(dict.fromkeys(ids))):
                cur = conn.execute(
                    f"SELECT id FROM memories WHERE id IN ({_marks(len(chunk))}) AND agent_id != ?",
                    [*chunk, agent_id],
                )
                found.update(row[0] for row in cur.fetchall())
            return found

        return await self._r().run(read) if ids else set()

    async def resolve_prefix(self, agent_id: str, prefix: str) -> list[str]:
        def read(conn: sqlite3.Connection) -> list[str]:
            cur = conn.execute(
                "SELECT id FROM memories WHERE agent_id = ? AND id >= ? AND id < ? LIMIT 2",
                (agent_id, prefix, prefix + "\uffff"),
            )
            return [r[0] for r in cur.fetchall()]

        return await self._r().run(read)

    async def resolve_history_prefix(self, agent_id: str, prefix: str) -> list[str]:
        def read(conn: sqlite3.Connection) -> list[str]:
            cur = conn.execute(
                "SELECT DISTINCT memory_id FROM history WHERE memory_id >= ? AND memory_id < ? "
                "AND agent_id = ? LIMIT 2",
                (prefix, prefix + "\uffff", agent_id),
            )
            return [r[0] for r in cur.fetchall()]

        return await self._r().run(read)

    async def query(self, query: MemoryQuery) -> list[Memory]:
        where, params = where_clause(query, "?", time_param=fmt_time)
        order = "DESC" if query.newest_first else "ASC"
        sql = (
            f"SELECT {SELECT_COLUMNS} FROM memories WHERE {where} "
            f"ORDER BY occurred_at {order}, seq {order} LIMIT ? OFFSET ?"
        )

        def read(conn: sqlite3.Connection) -> list[Memory]:
            return [row_to_memory(r) for r in _rows(conn.execute(sql, [*params, query.limit, query.offset]))]

        return await self._r().run(read)

    async def vector_search(
        self, query: MemoryQuery, embedding: np.ndarray, limit: int, *, chunks: bool = True
    ) -> list[ScoredId]:
        index = self._index
        if index is None:
            raise StorageError("store is not open")
        vector = np.asarray(embedding, dtype=np.float32)

        def read(conn: sqlite3.Connection) -> list[ScoredId]:
            index.refresh(conn)
            allowed: set[str] | None = None
            if query.narrows_beyond_kind():
                where, params = where_clause(query, "?", time_param=fmt_time)
                allowed = {r[0] for r in conn.execute(f"SELECT id FROM memories WHERE {where}", params)}
            flt = IndexFilter(
                agent_id=query.agent_id,
                kinds=tuple(k.value for k in query.kinds) if query.kinds else None,
                include_inactive=query.include_inactive,
                # as of a past time, the SQL above decides what was current then
                include_superseded=query.include_superseded or query.as_of is not None,
                allowed_ids=allowed,
            )
            return [
                ScoredId(i, s, main=m) for i, s, m in index.search(conn, vector, flt, limit, chunks=chunks)
            ]

        return await self._r().run(read)

    async def describe(self, agent_id: str, ids: list[str]) -> dict[str, CandidateInfo]:
        def read(conn: sqlite3.Connection) -> dict[str, CandidateInfo]:
            rows = _rows_by_id(conn, CANDIDATE_COLUMNS, agent_id, ids)
            return {row["id"]: row_to_candidate(tuple(row.values())) for row in rows}

        return await self._r().run(read) if ids else {}

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
        where, params = where_clause(query, "?", time_param=fmt_time, prefix="m.")
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
            match = " OR ".join(_quote(t) for t in self._term_counts.selective(conn, terms))
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

    async def edges(self, agent_id: str, ids: list[str]) -> list[Edge]:
        def read(conn: sqlite3.Connection) -> list[Edge]:
            out: dict[tuple[str, str, str], Edge] = {}
            for chunk in _chunks(list(dict.fromkeys(ids))):
                marks = _marks(len(chunk))
                cur = conn.execute(
                    "SELECT source_id, target_id, relation, agent_id, weight, created_at FROM edges "
                    f"WHERE agent_id = ? AND (source_id IN ({marks}) OR target_id IN ({marks}))",
                    [agent_id, *chunk, *chunk],
                )
                for e in map(_edge, cur.fetchall()):
                    out[(e.source_id, e.target_id, e.relation.value)] = e
            return list(out.values())

        return await self._r().run(read) if ids else []

    async def all_edges(self, agent_id: str) -> list[Edge]:
        def read(conn: sqlite3.Connection) -> list[Edge]:
            cur = conn.execute(
                "SELECT source_id, target_id, relation, agent_id, weight, created_at FROM edges "
                "WHERE agent_id = ? ORDER BY created_at",
                (agent_id,),
            )
            return [_edge(r) for r in cur.fetchall()]

        return await self._r().run(read)

    async def history(self, agent_id: str, memory_id: str) -> list[HistoryEntry]:
        def read(conn: sqlite3.Connection) -> list[HistoryEntry]:
            cur = conn.execute(
                "SELECT id, memory_id, agent_id, action, old_value, new_value, actor, at FROM history "
                "WHERE memory_id = ? AND agent_id = ? ORDER BY id",
                (memory_id, agent_id),
            )
            return [
                HistoryEntry(
                    id=r[0],
                    memory_id=r[1],
                    agent_id=r[2],
                    action=HistoryAction(r[3]),
                    old_value=None if r[4] is None else json.loads(r[4]),
                    new_value=None if r[5] is None else json.loads(r[5]),
                    actor=r[6],
                    at=datetime.fromisoformat(r[7]),
                )
                for r in cur.fetchall()
            ]

        return await self._r().run(read)

    async def embeddings_by_hash(self, hashes: list[str], model: str) -> dict[str, np.ndarray]:
        def read(conn: sqlite3.Connection) -> dict[str, np.ndarray]:
            out: dict[str, np.ndarray] = {}
            for chunk in _chunks(list(dict.fromkeys(hashes))):
                cur = conn.execute(
                    "SELECT content_hash, embedding FROM memories WHERE embedding_model = ? "
                    f"AND embedding IS NOT NULL AND content_hash IN ({_marks(len(chunk))})",
                    [model, *chunk],
                )
                for h, blob in cur.fetchall():
                    out[h] = np.frombuffer(blob, dtype=np.float32).copy()
            return out

        return await self._r().run(read) if hashes else {}

    async def chunks_by_hash(self, hashes: list[str], model: str) -> dict[str, list[np.ndarray]]:
        def read(conn: sqlite3.Connection) -> dict[str, list[np.ndarray]]:
            owner: dict[str, str] = {}  # hash -> the one memory whose chunks are used
            out: dict[str, list[np.ndarray]] = {}
            for chunk in _chunks(list(dict.fromkeys(hashes))):
                cur = conn.execute(
                    "SELECT m.content_hash, m.id, c.embedding FROM memories m "
                    "CROSS JOIN memory_chunks c ON c.memory_id = m.id "
                    f"WHERE m.embedding_model = ? AND m.content_hash IN ({_marks(len(chunk))}) "
                    "ORDER BY m.id, c.chunk_no",
                    [model, *chunk],
                )
                for h, mid, blob in cur.fetchall():
                    if owner.setdefault(h, mid) == mid:
                        out.setdefault(h, []).append(np.frombuffer(blob, dtype=np.float32).copy())
            return out

        return await self._r().run(read) if hashes else {}

    async def missing_chunks(self, agent_id: str, min_chars: int, limit: int) -> list[tuple[Memory, str]]:
        def read(conn: sqlite3.Connection) -> list[tuple[Memory, str]]:
            cur = conn.execute(
                f"SELECT {SELECT_COLUMNS} FROM memories m WHERE agent_id = ? AND embedding IS NOT NULL "
                "AND length(content) > ? AND NOT EXISTS (SELECT 1 FROM memory_chunks c WHERE c.memory_id = m.id) "
                "ORDER BY seq LIMIT ?",
                (agent_id, min_chars, limit),
            )
            return [(row_to_memory(r), r["content_hash"]) for r in _rows(cur)]

        return await self._r().run(read)

    async def missing_embeddings(self, agent_id: str | None, limit: int) -> list[tuple[Memory, str]]:
        scope = "AND agent_id = ?" if agent_id else ""
        params: list[Any] = [agent_id] if agent_id else []

        def read(conn: sqlite3.Connection) -> list[tuple[Memory, str]]:
            cur = conn.execute(
                f"SELECT {SELECT_COLUMNS} FROM memories WHERE embedding IS NULL {scope} ORDER BY seq LIMIT ?",
                [*params, limit],
            )
            return [(row_to_memory(r), r["content_hash"]) for r in _rows(cur)]

        return await self._r().run(read)

    async def session(self, agent_id: str, session_id: str) -> SessionState | None:
        found = await self._r().run(lambda conn: read_sessions(conn, agent_id, session_id, None, 1))
        return found[0] if found else None

    async def sessions(
        self,
        agent_id: str,
        *,
        ended: bool | None = None,
        idle_before: datetime | None = None,
        limit: int = 100,
    ) -> list[SessionState]:
        before = None if idle_before is None else fmt_time(idle_before)
        return await self._r().run(lambda conn: read_sessions(conn, agent_id, None, ended, limit, before))

    async def identity(self, agent_id: str) -> list[IdentitySection]:
        return await self._r().run(lambda conn: read_identity(conn, agent_id))

    async def claim_events(
        self, agent_id: str, worker_id: str, *, limit: int, lease_until: datetime, now: datetime
    ) -> list[Event]:
        until, at = fmt_time(lease_until), fmt_time(now)
        return await self._w().run(lambda conn: claim_events(conn, agent_id, worker_id, limit, until, at))

    async def events(
        self,
        agent_id: str,
        *,
        status: EventStatus | None = None,
        event_id: str | None = None,
        limit: int = 100,
    ) -> list[Event]:
        return await self._r().run(lambda conn: read_events(conn, agent_id, status, event_id, limit))

    async def event_counts(self, agent_id: str) -> dict[EventStatus, int]:
        return await self._r().run(lambda conn: count_events(conn, agent_id))

    async def api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        found = await self._r().run(lambda conn: read_keys(conn, key_id))
        return found[0] if found else None

    async def api_keys(self) -> list[ApiKey]:
        return [k for k, _ in await self._r().run(lambda conn: read_keys(conn, None))]

    async def llm_usage(self, agent_id: str) -> list[LLMUsage]:
        return await self._r().run(lambda conn: read_llm_usage(conn, agent_id))

    async def working_memory(self, agent_id: str, session_id: str) -> WorkingMemory | None:
        def read(conn: sqlite3.Connection) -> WorkingMemory | None:
            row = conn.execute(
                "SELECT data FROM working_memory WHERE agent_id = ? AND session_id = ?",
                (agent_id, session_id),
            ).fetchone()
            return None if row is None else WorkingMemory.model_validate_json(row[0])

        return await self._r().run(read)

    async def stats(self, agent_id: str) -> StoreStats:
        def read(conn: sqlite3.Connection) -> StoreStats:
            by_kind = dict(
                conn.execute(
                    "SELECT kind, count(*) FROM memories WHERE agent_id = ? AND active = 1 "
                    "AND superseded_by IS NULL GROUP BY kind",
                    (agent_id,),
                ).fetchall()
            )
            (inactive,) = conn.execute(
                "SELECT count(*) FROM memories WHERE agent_id = ? AND (active = 0 OR superseded_by IS NOT NULL)",
                (agent_id,),
            ).fetchone()
            by_lifecycle = dict(
                conn.execute(
                    "SELECT lifecycle, count(*) FROM memories WHERE agent_id = ? AND active = 1 "
                    "AND superseded_by IS NULL GROUP BY lifecycle",
                    (agent_id,),
                ).fetchall()
            )
            (edges,) = conn.execute("SELECT count(*) FROM edges WHERE agent_id = ?", (agent_id,)).fetchone()
            (history,) = conn.execute(
                "SELECT count(*) FROM history WHERE agent_id = ?", (agent_id,)
            ).fetchone()
            (missing,) = conn.execute(
                "SELECT count(*) FROM memories WHERE agent_id = ? AND embedding IS NULL", (agent_id,)
            ).fetchone()
            (version,) = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
            return StoreStats(
                backend="sqlite",
                location=str(self.path),
                agent_id=agent_id,
                active_by_kind=by_kind,
                active_by_lifecycle=by_lifecycle,
                inactive=inactive,
                edges=edges,
                history_rows=history,
                missing_embeddings=missing,
                schema_version=version,
            )

        return await self._r().run(read)

    async def iter_memories(self, agent_id: str, batch_size: int = 500) -> AsyncIterator[Memory]:
        last = 0
        while True:

            def read(conn: sqlite3.Connection, after: int = last) -> list[dict[str, Any]]:
                cur = conn.execute(
                    f"SELECT seq, {SELECT_COLUMNS} FROM memories WHERE agent_id = ? AND seq > ? "
                    "ORDER BY seq LIMIT ?",
                    (agent_id, after, batch_size),
                )
                return _rows(cur)

            rows = await self._r().run(read)
            if not rows:
                return
            for row in rows:
                yield row_to_memory(row)
            last = rows[-1]["seq"]


def _replace_chunks(conn: sqlite3.Connection, memory_id: str, chunks: list[np.ndarray] | None) -> None:
    """Replace a memory's chunk vectors (none: just delete the stored ones)."""
    conn.execute("DELETE FROM memory_chunks WHERE memory_id = ?", (memory_id,))
    if chunks:
        conn.executemany(
            "INSERT INTO memory_chunks (memory_id, chunk_no, embedding) VALUES (?, ?, ?)",
            [(memory_id, no, np.asarray(v, np.float32).tobytes()) for no, v in enumerate(chunks, start=1)],
        )


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
        """``terms`` without the very common ones on large stores; the rarest is always kept."""
        if len(terms) < 2:
            return terms
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


def _edge(r: tuple[Any, ...]) -> Edge:
    return Edge(
        source_id=r[0],
        target_id=r[1],
        relation=EdgeRelation(r[2]),
        agent_id=r[3],
        weight=r[4],
        created_at=datetime.fromisoformat(r[5]),
    )


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
