"""Topic thread rows: the thread ops and reads (see ``nous.memory.threads``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, assert_never

import numpy as np

from nous.errors import ConflictError, StaleWriteError
from nous.models import MemoryKind
from nous.storage.base import (
    AddThreadMember,
    ClearThreads,
    DropThread,
    PutThread,
    ThreadOp,
    ThreadRecord,
    ThreadStore,
)
from nous.storage.sql.plan import Dialect, Plan, SQLRunner, Stmt

_STATE = "label, size, vector_sum, keywords, first_at, last_at, last_session, updated_at"
# A member counts while its memory is active: forgotten memories leave their thread at once.
_LIVE = (
    "FROM thread_members tm JOIN memories m ON m.agent_id = tm.agent_id AND m.id = tm.memory_id AND m.active"
)


def _state(d: Dialect, t: ThreadRecord) -> tuple[Any, ...]:
    return (
        t.label,
        t.size,
        np.asarray(t.vector_sum, np.float32).tobytes(),
        d.json(t.keywords),
        d.time(t.first_at),
        d.time(t.last_at),
        t.last_session,
        d.time(t.updated_at),
    )


def apply_thread_op(d: Dialect, op: ThreadOp) -> Plan[bool]:
    """Apply one thread op inside the caller's transaction."""
    match op:
        case PutThread(thread=t) if op.expect_version is None:
            done = yield Stmt(
                f"INSERT INTO threads (id, agent_id, user_id, created_at, version, {_STATE}) "
                "VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (t.id, t.agent_id, t.user_id, d.time(t.created_at), *_state(d, t)),
            )
            if done.rowcount == 0:
                raise ConflictError(f"a thread with id {t.id!r} exists")
            return True
        case PutThread(thread=t):
            sets = ", ".join(f"{c.strip()} = ?" for c in _STATE.split(","))
            done = yield Stmt(
                f"UPDATE threads SET {sets}, version = version + 1 WHERE id = ? AND agent_id = ? AND version = ?",
                (*_state(d, t), t.id, t.agent_id, op.expect_version),
            )
            if done.rowcount == 0:
                raise StaleWriteError(f"thread {t.id!r} changed since it was read")
            return True
        case AddThreadMember():
            done = yield Stmt(
                "INSERT INTO thread_members (agent_id, memory_id, thread_id, occurred_at, added_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id, memory_id) DO NOTHING",
                (op.agent_id, op.memory_id, op.thread_id, d.time(op.occurred_at), d.time(op.at)),
            )
            if done.rowcount == 0:
                raise ConflictError(f"memory {op.memory_id!r} is in a thread already")
            return True
        case DropThread():
            done = yield Stmt(
                "DELETE FROM threads WHERE id = ? AND agent_id = ? AND version = ?",
                (op.thread_id, op.agent_id, op.expect_version),
            )
            if done.rowcount == 0:
                raise StaleWriteError(f"thread {op.thread_id!r} changed since it was read")
            yield Stmt(
                "DELETE FROM thread_members WHERE agent_id = ? AND thread_id = ?", (op.agent_id, op.thread_id)
            )
            return True
        case ClearThreads():
            gone = yield Stmt("DELETE FROM thread_members WHERE agent_id = ?", (op.agent_id,))
            threads = yield Stmt("DELETE FROM threads WHERE agent_id = ?", (op.agent_id,))
            return gone.rowcount + threads.rowcount > 0
        case _:
            assert_never(op)


def erase_user_threads(agent_id: str, user_id: str) -> Plan[None]:
    """Delete one user's threads and their memberships (part of erasing the user)."""
    mine = "SELECT id FROM threads WHERE agent_id = ? AND user_id = ?"
    yield Stmt(
        f"DELETE FROM thread_members WHERE agent_id = ? AND thread_id IN ({mine})",
        (agent_id, agent_id, user_id),
    )
    yield Stmt("DELETE FROM threads WHERE agent_id = ? AND user_id = ?", (agent_id, user_id))


def _record(d: Dialect, r: dict[str, Any]) -> ThreadRecord:
    return ThreadRecord(
        id=r["id"],
        agent_id=r["agent_id"],
        user_id=r["user_id"],
        label=r["label"],
        size=int(r["live"] if r.get("live") is not None else r["size"]),
        vector_sum=np.frombuffer(bytes(r["vector_sum"]), dtype=np.float32).copy(),
        keywords={str(k): int(v) for k, v in (d.read_json(r["keywords"]) or {}).items()},
        first_at=d.read_time(r["first_at"]),
        last_at=d.read_time(r["last_at"]),
        last_session=r["last_session"],
        created_at=d.read_time(r["created_at"]),
        updated_at=d.read_time(r["updated_at"]),
        version=int(r["version"]),
    )


def read_threads(
    d: Dialect,
    agent_id: str,
    user_id: str | None,
    any_user: bool,
    ids: list[str] | None,
    limit: int,
    live: bool,
) -> Plan[list[ThreadRecord]]:
    """Threads newest activity first, with their count of active members if ``live``."""
    where, params = ["t.agent_id = ?"], [agent_id]
    if ids is not None:
        among, values = d.in_("t.id", ids)
        where.append(among)
        params += values
    elif not any_user:
        where.append("t.user_id IS NULL" if user_id is None else "t.user_id = ?")
        params += [] if user_id is None else [user_id]
    count = f"(SELECT count(*) {_LIVE} WHERE tm.thread_id = t.id)" if live else "NULL"
    found = yield Stmt(
        f"SELECT t.id, t.agent_id, t.user_id, t.created_at, t.version, t.{_STATE.replace(', ', ', t.')}, "
        f"{count} AS live FROM threads t WHERE {' AND '.join(where)} "
        "ORDER BY t.last_at DESC, t.id LIMIT ?",
        (*params, limit),
    )
    return [_record(d, r) for r in found.dicts()]


class SQLThreads(SQLRunner, ThreadStore):
    """The thread reads every SQL backend shares."""

    async def threads(
        self,
        agent_id: str,
        *,
        user_id: str | None = None,
        any_user: bool = False,
        ids: list[str] | None = None,
        limit: int = 100,
        live: bool = True,
    ) -> list[ThreadRecord]:
        if ids is not None and not ids:
            return []
        return await self._read(read_threads(self.dialect, agent_id, user_id, any_user, ids, limit, live))

    async def thread_members(self, agent_id: str, thread_id: str) -> list[tuple[str, datetime]]:
        found = await self._select(
            f"SELECT tm.memory_id, m.occurred_at {_LIVE} WHERE tm.agent_id = ? AND tm.thread_id = ? "
            "ORDER BY m.occurred_at, tm.memory_id",
            (agent_id, thread_id),
        )
        return [(mid, self.dialect.read_time(at)) for mid, at in found.rows]

    async def thread_of(self, agent_id: str, memory_ids: list[str]) -> dict[str, str]:
        found = await self._select_in(
            "SELECT memory_id, thread_id FROM thread_members WHERE agent_id = ? AND {among}",
            "memory_id",
            memory_ids,
            (agent_id,),
        )
        return {mid: tid for mid, tid in found.rows}

    async def stale_threads(
        self, agent_id: str, *, ids: list[str] | None = None, limit: int = 100
    ) -> list[str]:
        if ids is not None and not ids:
            return []
        live = f"(SELECT count(*) {_LIVE} WHERE tm.agent_id = t.agent_id AND tm.thread_id = t.id)"
        where, params = "t.agent_id = ?", [agent_id]
        if ids is not None:
            among, values = self.dialect.in_("t.id", ids)
            where += f" AND {among}"
            params += values
        found = await self._select(
            f"SELECT t.id FROM threads t WHERE {where} AND t.size <> {live} ORDER BY t.id LIMIT ?",
            (*params, limit),
        )
        return [r[0] for r in found.rows]

    async def unthreaded(self, agent_id: str, kinds: tuple[MemoryKind, ...], limit: int) -> list[str]:
        marks = ", ".join("?" * len(kinds))
        found = await self._select(
            f"SELECT m.id FROM memories m WHERE m.agent_id = ? AND m.kind IN ({marks}) AND m.active "
            "AND m.embedding IS NOT NULL AND NOT EXISTS (SELECT 1 FROM thread_members tm "
            "WHERE tm.agent_id = m.agent_id AND tm.memory_id = m.id) ORDER BY m.occurred_at, m.id LIMIT ?",
            (agent_id, *(k.value for k in kinds), limit),
        )
        return [r[0] for r in found.rows]
