"""Session rows on PostgreSQL: every counter is incremented in SQL, each op one statement, so
concurrent processes never lose an update."""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg.rows import dict_row

from nous.errors import ConflictError, NotFoundError
from nous.models.session import IdentitySection, SessionState
from nous.storage.base import (
    ClaimSessionEpisode,
    EndSession,
    NoteReply,
    NoteUserTurn,
    PutSession,
    SetIdentitySection,
)

SessionOp = NoteUserTurn | NoteReply | ClaimSessionEpisode | EndSession | PutSession | SetIdentitySection
_KEY = "agent_id = %s AND session_id = %s"


async def apply_session_op(conn: psycopg.AsyncConnection, op: SessionOp) -> bool:
    """Apply one session op inside the caller's transaction."""
    match op:
        case NoteUserTurn():
            cur = await conn.execute(
                "INSERT INTO sessions (agent_id, session_id, user_id, frame, active_censors, topic, last_user_text, "
                "user_chars, remember, started_at, last_active_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (agent_id, session_id) DO UPDATE SET "
                "user_chars = sessions.user_chars + excluded.user_chars, "
                "remember = sessions.remember OR excluded.remember, frame = excluded.frame, "
                "active_censors = excluded.active_censors, topic = coalesce(excluded.topic, sessions.topic), "
                "last_user_text = excluded.last_user_text, "
                "user_id = coalesce(sessions.user_id, excluded.user_id), "
                "last_active_at = excluded.last_active_at WHERE sessions.ended_at IS NULL",
                (
                    op.agent_id,
                    op.session_id,
                    op.user_id,
                    op.frame,
                    json.dumps(op.active_censors),
                    op.topic,
                    op.text,
                    op.chars,
                    op.remember,
                    op.at,
                    op.at,
                ),
            )
            if cur.rowcount == 0:
                raise ConflictError(f"session {op.session_id!r} has ended; start a new one")
            return True
        case NoteReply():
            cur = await conn.execute(
                "UPDATE sessions SET turn_count = turn_count + 1, assistant_chars = assistant_chars + %s, "
                f"last_active_at = %s WHERE {_KEY} AND ended_at IS NULL",
                (op.chars, op.at, op.agent_id, op.session_id),
            )
            if cur.rowcount == 0:
                await _missing_or_ended(conn, op.agent_id, op.session_id)
            for tool in op.tools:
                await conn.execute(
                    "INSERT INTO session_tools (agent_id, session_id, tool) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (op.agent_id, op.session_id, tool),
                )
            return True
        case ClaimSessionEpisode():
            cur = await conn.execute(
                f"UPDATE sessions SET episode_id = %s WHERE {_KEY} AND episode_id IS NULL AND ended_at IS NULL",
                (op.episode_id, op.agent_id, op.session_id),
            )
            if cur.rowcount == 0:
                raise ConflictError(f"session {op.session_id!r} already has an episode or has ended")
            return True
        case EndSession():
            cur = await conn.execute(
                f"UPDATE sessions SET ended_at = %s WHERE {_KEY} AND ended_at IS NULL",
                (op.at, op.agent_id, op.session_id),
            )
            if cur.rowcount == 0 and not await _exists(conn, op.agent_id, op.session_id):
                raise NotFoundError(f"no session {op.session_id!r}")
            return cur.rowcount > 0
        case PutSession(state=st):
            cur = await conn.execute(
                "INSERT INTO sessions (agent_id, session_id, user_id, frame, active_censors, topic, last_user_text, "
                "turn_count, user_chars, assistant_chars, remember, episode_id, started_at, last_active_at, ended_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (agent_id, session_id) DO NOTHING",
                (
                    st.agent_id,
                    st.session_id,
                    st.user_id,
                    st.frame,
                    json.dumps(st.active_censors),
                    st.topic,
                    st.last_user_text,
                    st.turn_count,
                    st.user_chars,
                    st.assistant_chars,
                    st.remember,
                    st.episode_id,
                    st.started_at,
                    st.last_active_at,
                    None if st.ended_at is None else st.ended_at,
                ),
            )
            return cur.rowcount > 0
        case SetIdentitySection():
            old = await (
                await conn.execute(
                    "SELECT content FROM identity WHERE agent_id = %s AND section = %s FOR UPDATE",
                    (op.agent_id, op.section),
                )
            ).fetchone()
            await conn.execute(
                "INSERT INTO identity (agent_id, section, content, version, updated_at) VALUES (%s, %s, %s, 1, %s) "
                "ON CONFLICT (agent_id, section) DO UPDATE SET content = excluded.content, "
                "version = identity.version + 1, updated_at = excluded.updated_at",
                (op.agent_id, op.section, op.content, op.at),
            )
            await conn.execute(
                "INSERT INTO history (memory_id, agent_id, action, old_value, new_value, actor, at) "
                "VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, %s, %s)",
                (
                    f"identity:{op.section}",
                    op.agent_id,
                    "create" if old is None else "update",
                    None if old is None else json.dumps({"content": old[0]}),
                    json.dumps({"content": op.content}),
                    op.actor,
                    op.at,
                ),
            )
            return True
    raise AssertionError(f"not a session op: {op!r}")


async def _exists(conn: psycopg.AsyncConnection, agent_id: str, session_id: str) -> bool:
    cur = await conn.execute(f"SELECT 1 FROM sessions WHERE {_KEY}", (agent_id, session_id))
    return await cur.fetchone() is not None


async def _missing_or_ended(conn: psycopg.AsyncConnection, agent_id: str, session_id: str) -> None:
    if not await _exists(conn, agent_id, session_id):
        raise NotFoundError(f"no session {session_id!r}; a session starts with its first user turn")
    raise ConflictError(f"session {session_id!r} has ended; start a new one")


async def read_sessions(
    conn: psycopg.AsyncConnection,
    agent_id: str,
    session_id: str | None,
    ended: bool | None,
    limit: int,
    idle_before: Any = None,
) -> list[SessionState]:
    """Sessions of an agent (one, or the latest ``limit`` by activity), with their tools."""
    where, params = ["s.agent_id = %s"], [agent_id]
    if session_id is not None:
        where.append("s.session_id = %s")
        params.append(session_id)
    if ended is not None:
        where.append("s.ended_at IS NOT NULL" if ended else "s.ended_at IS NULL")
    if idle_before is not None:
        where.append("s.last_active_at < %s")
        params.append(idle_before)
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(
            "SELECT s.*, coalesce((SELECT array_agg(t.tool ORDER BY t.tool) FROM session_tools t "
            "WHERE t.agent_id = s.agent_id AND t.session_id = s.session_id), '{}') AS tools_used "
            f"FROM sessions s WHERE {' AND '.join(where)} "
            "ORDER BY s.last_active_at DESC, s.session_id LIMIT %s",
            [*params, limit],
        )
        rows: list[dict[str, Any]] = await cur.fetchall()
    for row in rows:
        row["active_censors"] = json.loads(row["active_censors"])
        row["tools_used"] = list(row["tools_used"])
    return [SessionState.model_validate(row) for row in rows]


async def read_identity(conn: psycopg.AsyncConnection, agent_id: str) -> list[IdentitySection]:
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(
            "SELECT section, content, version, updated_at FROM identity WHERE agent_id = %s ORDER BY section",
            (agent_id,),
        )
        return [IdentitySection.model_validate(r) for r in await cur.fetchall()]
