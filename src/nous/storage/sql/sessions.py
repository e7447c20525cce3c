"""Session and identity rows: every counter is incremented in SQL, each op one statement, so
concurrent writers (threads or processes) never lose an update."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, assert_never

from nous.errors import ConflictError, NotFoundError, StaleWriteError
from nous.models import WorkingMemory
from nous.models.session import IdentitySection, SessionState
from nous.storage.base import (
    ClaimSessionEpisode,
    EndSession,
    NoteReply,
    NoteUserTurn,
    PutSession,
    PutWorkingMemory,
    SessionOp,
    SessionStore,
    SetIdentitySection,
)
from nous.storage.sql.plan import Dialect, Plan, SQLRunner, Stmt

_KEY = "agent_id = ? AND session_id = ?"
_COLUMNS = (
    "agent_id, session_id, user_id, frame, active_censors, topic, last_user_text, turn_count, user_chars, "
    "assistant_chars, remember, episode_id, started_at, last_active_at, ended_at"
)


def apply_session_op(d: Dialect, op: SessionOp) -> Plan[bool]:
    """Apply one session op inside the caller's transaction."""
    match op:
        case NoteUserTurn():
            done = yield Stmt(
                "INSERT INTO sessions (agent_id, session_id, user_id, frame, active_censors, topic, last_user_text, "
                "user_chars, remember, started_at, last_active_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (agent_id, session_id) DO UPDATE SET "
                "user_chars = sessions.user_chars + excluded.user_chars, "
                "remember = sessions.remember OR excluded.remember, frame = excluded.frame, "
                "active_censors = excluded.active_censors, topic = coalesce(excluded.topic, sessions.topic), "
                "last_user_text = excluded.last_user_text, user_id = coalesce(sessions.user_id, excluded.user_id), "
                "last_active_at = excluded.last_active_at WHERE sessions.ended_at IS NULL",
                (
                    *(op.agent_id, op.session_id, op.user_id, op.frame, json.dumps(op.active_censors)),
                    *(op.topic, op.text, op.chars, op.remember, d.time(op.at), d.time(op.at)),
                ),
            )
            if done.rowcount == 0:
                raise ConflictError(f"session {op.session_id!r} has ended; start a new one")
            return True
        case NoteReply():
            done = yield Stmt(
                "UPDATE sessions SET turn_count = turn_count + 1, assistant_chars = assistant_chars + ?, "
                f"last_active_at = ? WHERE {_KEY} AND ended_at IS NULL",
                (op.chars, d.time(op.at), op.agent_id, op.session_id),
            )
            if done.rowcount == 0:
                if not (yield from _exists(op.agent_id, op.session_id)):
                    raise NotFoundError(
                        f"no session {op.session_id!r}; a session starts with its first user turn"
                    )
                raise ConflictError(f"session {op.session_id!r} has ended; start a new one")
            if op.tools:
                yield Stmt(
                    "INSERT INTO session_tools (agent_id, session_id, tool) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    [(op.agent_id, op.session_id, t) for t in op.tools],
                    many=True,
                )
            return True
        case ClaimSessionEpisode():
            done = yield Stmt(
                f"UPDATE sessions SET episode_id = ? WHERE {_KEY} AND episode_id IS NULL AND ended_at IS NULL",
                (op.episode_id, op.agent_id, op.session_id),
            )
            if done.rowcount == 0:
                raise ConflictError(f"session {op.session_id!r} already has an episode or has ended")
            return True
        case EndSession():
            done = yield Stmt(
                f"UPDATE sessions SET ended_at = ? WHERE {_KEY} AND ended_at IS NULL",
                (d.time(op.at), op.agent_id, op.session_id),
            )
            if done.rowcount == 0 and not (yield from _exists(op.agent_id, op.session_id)):
                raise NotFoundError(f"no session {op.session_id!r}")
            return done.rowcount > 0
        case PutSession(state=st):
            done = yield Stmt(
                f"INSERT INTO sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (agent_id, session_id) DO NOTHING",
                (
                    *(st.agent_id, st.session_id, st.user_id, st.frame, json.dumps(st.active_censors)),
                    *(st.topic, st.last_user_text, st.turn_count, st.user_chars, st.assistant_chars),
                    *(st.remember, st.episode_id, d.time(st.started_at), d.time(st.last_active_at)),
                    d.time(st.ended_at),
                ),
            )
            if done.rowcount == 0:
                owner = yield Stmt(f"SELECT user_id FROM sessions WHERE {_KEY}", (st.agent_id, st.session_id))
                if owner.rows and owner.scalar() != st.user_id:
                    # another user's session (or the agent's own): never taken over or joined
                    raise ConflictError(f"session {st.session_id!r} belongs to another user")
            return done.rowcount > 0
        case PutWorkingMemory(working_memory=wm):
            guard, params = (
                "",
                [wm.agent_id, wm.session_id, d.json(wm.model_dump(mode="json")), d.time(wm.updated_at)],
            )
            if op.check:
                # updated_at is never NULL: expecting None (it did not exist) fails on any stored row
                guard = " WHERE working_memory.updated_at = ?"
                params.append(d.time(op.expect_updated_at))
            done = yield Stmt(
                "INSERT INTO working_memory VALUES (?, ?, ?, ?) ON CONFLICT (agent_id, session_id) "
                f"DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at{guard}",
                params,
            )
            if done.rowcount == 0:
                raise StaleWriteError(
                    f"working memory of session {wm.session_id!r} changed since it was read"
                )
            return True
        case SetIdentitySection():
            old = yield Stmt(
                f"SELECT content FROM identity WHERE agent_id = ? AND section = ?{d.for_update}",
                (op.agent_id, op.section),
            )
            yield Stmt(
                "INSERT INTO identity (agent_id, section, content, version, updated_at) VALUES (?, ?, ?, 1, ?) "
                "ON CONFLICT (agent_id, section) DO UPDATE SET content = excluded.content, "
                "version = identity.version + 1, updated_at = excluded.updated_at",
                (op.agent_id, op.section, op.content, d.time(op.at)),
            )
            yield Stmt(
                "INSERT INTO history (memory_id, agent_id, action, old_value, new_value, actor, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    *(f"identity:{op.section}", op.agent_id, "update" if old.rows else "create"),
                    d.json({"content": old.scalar()} if old.rows else None),
                    *(d.json({"content": op.content}), op.actor, d.time(op.at)),
                ),
            )
            return True
        case _:
            assert_never(op)


def _exists(agent_id: str, session_id: str) -> Plan[bool]:
    return bool((yield Stmt(f"SELECT 1 FROM sessions WHERE {_KEY}", (agent_id, session_id))).rows)


def read_sessions(
    d: Dialect, agent_id: str, session_id: str | None, ended: bool | None, limit: int, idle_before: Any = None
) -> Plan[list[SessionState]]:
    """Sessions of an agent (one, or the latest ``limit`` by activity), with their tools."""
    where, params = ["agent_id = ?"], [agent_id]
    if session_id is not None:
        where.append("session_id = ?")
        params.append(session_id)
    if ended is not None:
        where.append("ended_at IS NOT NULL" if ended else "ended_at IS NULL")
    if idle_before is not None:
        where.append("last_active_at < ?")
        params.append(d.time(idle_before))
    found = yield Stmt(
        f"SELECT {_COLUMNS} FROM sessions WHERE {' AND '.join(where)} "
        "ORDER BY last_active_at DESC, session_id LIMIT ?",
        [*params, limit],
    )
    rows = found.dicts()
    tools: dict[str, list[str]] = {r["session_id"]: [] for r in rows}
    for batch in d.batches(tools) if tools else []:
        among, ids = d.in_("session_id", batch)
        used = yield Stmt(
            f"SELECT session_id, tool FROM session_tools WHERE agent_id = ? AND {among} ORDER BY tool",
            [agent_id, *ids],
        )
        for sid, tool in used.rows:
            tools[sid].append(tool)
    for r in rows:
        r["active_censors"] = json.loads(r["active_censors"])
        r["remember"] = bool(r["remember"])
        for name in ("started_at", "last_active_at", "ended_at"):
            r[name] = d.read_time(r[name])
    return [SessionState(**r, tools_used=tools[r["session_id"]]) for r in rows]


def read_identity(d: Dialect, agent_id: str) -> Plan[list[IdentitySection]]:
    found = yield Stmt(
        "SELECT section, content, version, updated_at FROM identity WHERE agent_id = ? ORDER BY section",
        (agent_id,),
    )
    return [
        IdentitySection(section=s, content=c, version=v, updated_at=d.read_time(at))
        for s, c, v, at in found.rows
    ]


class SQLSessions(SQLRunner, SessionStore):
    """The session reads every SQL backend shares."""

    async def session(self, agent_id: str, session_id: str) -> SessionState | None:
        found = await self._read(read_sessions(self.dialect, agent_id, session_id, None, 1))
        return found[0] if found else None

    async def sessions(
        self,
        agent_id: str,
        *,
        ended: bool | None = None,
        idle_before: datetime | None = None,
        limit: int = 100,
    ) -> list[SessionState]:
        return await self._read(read_sessions(self.dialect, agent_id, None, ended, limit, idle_before))

    async def identity(self, agent_id: str) -> list[IdentitySection]:
        return await self._read(read_identity(self.dialect, agent_id))

    async def working_memory(self, agent_id: str, session_id: str) -> WorkingMemory | None:
        found = await self._select(
            "SELECT data FROM working_memory WHERE agent_id = ? AND session_id = ?", [agent_id, session_id]
        )
        return WorkingMemory.model_validate(self.dialect.read_json(found.scalar())) if found.rows else None
