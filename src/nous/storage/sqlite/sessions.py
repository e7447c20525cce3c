"""Session rows on SQLite: every counter is incremented in SQL on the writer thread."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

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
_KEY = "agent_id = ? AND session_id = ?"


def apply_session_op(conn: sqlite3.Connection, op: SessionOp, fmt_time: Any) -> bool:
    """Apply one session op inside the caller's transaction."""
    match op:
        case NoteUserTurn():
            at = fmt_time(op.at)
            cur = conn.execute(
                "INSERT INTO sessions (agent_id, session_id, user_id, frame, active_censors, topic, last_user_text, "
                "user_chars, remember, started_at, last_active_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (agent_id, session_id) DO UPDATE SET "
                "user_chars = user_chars + excluded.user_chars, remember = max(remember, excluded.remember), "
                "frame = excluded.frame, active_censors = excluded.active_censors, "
                "topic = coalesce(excluded.topic, topic), last_user_text = excluded.last_user_text, user_id = coalesce(user_id, excluded.user_id), "
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
                    int(op.remember),
                    at,
                    at,
                ),
            )
            if cur.rowcount == 0:
                raise ConflictError(f"session {op.session_id!r} has ended; start a new one")
            return True
        case NoteReply():
            cur = conn.execute(
                "UPDATE sessions SET turn_count = turn_count + 1, assistant_chars = assistant_chars + ?, "
                f"last_active_at = ? WHERE {_KEY} AND ended_at IS NULL",
                (op.chars, fmt_time(op.at), op.agent_id, op.session_id),
            )
            if cur.rowcount == 0:
                _missing_or_ended(conn, op.agent_id, op.session_id)
            conn.executemany(
                "INSERT OR IGNORE INTO session_tools (agent_id, session_id, tool) VALUES (?, ?, ?)",
                [(op.agent_id, op.session_id, t) for t in op.tools],
            )
            return True
        case ClaimSessionEpisode():
            cur = conn.execute(
                f"UPDATE sessions SET episode_id = ? WHERE {_KEY} AND episode_id IS NULL AND ended_at IS NULL",
                (op.episode_id, op.agent_id, op.session_id),
            )
            if cur.rowcount == 0:
                raise ConflictError(f"session {op.session_id!r} already has an episode or has ended")
            return True
        case EndSession():
            cur = conn.execute(
                f"UPDATE sessions SET ended_at = ? WHERE {_KEY} AND ended_at IS NULL",
                (fmt_time(op.at), op.agent_id, op.session_id),
            )
            if cur.rowcount == 0 and _exists(conn, op.agent_id, op.session_id) is None:
                raise NotFoundError(f"no session {op.session_id!r}")
            return cur.rowcount > 0
        case PutSession(state=st):
            cur = conn.execute(
                "INSERT INTO sessions (agent_id, session_id, user_id, frame, active_censors, topic, last_user_text, "
                "turn_count, user_chars, assistant_chars, remember, episode_id, started_at, last_active_at, ended_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, session_id) DO NOTHING",
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
                    int(st.remember),
                    st.episode_id,
                    fmt_time(st.started_at),
                    fmt_time(st.last_active_at),
                    None if st.ended_at is None else fmt_time(st.ended_at),
                ),
            )
            return cur.rowcount > 0
        case SetIdentitySection():
            old = conn.execute(
                "SELECT content FROM identity WHERE agent_id = ? AND section = ?", (op.agent_id, op.section)
            ).fetchone()
            conn.execute(
                "INSERT INTO identity (agent_id, section, content, version, updated_at) VALUES (?, ?, ?, 1, ?) "
                "ON CONFLICT (agent_id, section) DO UPDATE SET content = excluded.content, "
                "version = identity.version + 1, updated_at = excluded.updated_at",
                (op.agent_id, op.section, op.content, fmt_time(op.at)),
            )
            conn.execute(
                "INSERT INTO history (memory_id, agent_id, action, old_value, new_value, actor, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    f"identity:{op.section}",
                    op.agent_id,
                    "create" if old is None else "update",
                    None if old is None else json.dumps({"content": old[0]}),
                    json.dumps({"content": op.content}),
                    op.actor,
                    fmt_time(op.at),
                ),
            )
            return True
    raise AssertionError(f"not a session op: {op!r}")


def _exists(conn: sqlite3.Connection, agent_id: str, session_id: str) -> tuple[Any, ...] | None:
    return conn.execute(f"SELECT ended_at FROM sessions WHERE {_KEY}", (agent_id, session_id)).fetchone()


def _missing_or_ended(conn: sqlite3.Connection, agent_id: str, session_id: str) -> None:
    if _exists(conn, agent_id, session_id) is None:
        raise NotFoundError(f"no session {session_id!r}; a session starts with its first user turn")
    raise ConflictError(f"session {session_id!r} has ended; start a new one")


_COLUMNS = (
    "agent_id, session_id, user_id, frame, active_censors, topic, last_user_text, turn_count, user_chars, "
    "assistant_chars, remember, episode_id, started_at, last_active_at, ended_at"
)


def read_sessions(
    conn: sqlite3.Connection,
    agent_id: str,
    session_id: str | None,
    ended: bool | None,
    limit: int,
    idle_before: Any = None,
) -> list[SessionState]:
    """Sessions of an agent (one, or the latest ``limit`` by activity), with their tools."""
    where, params = ["agent_id = ?"], [agent_id]
    if session_id is not None:
        where.append("session_id = ?")
        params.append(session_id)
    if ended is not None:
        where.append("ended_at IS NOT NULL" if ended else "ended_at IS NULL")
    if idle_before is not None:
        where.append("last_active_at < ?")
        params.append(idle_before)
    conn_rows = conn.execute(
        f"SELECT {_COLUMNS} FROM sessions WHERE {' AND '.join(where)} "
        "ORDER BY last_active_at DESC, session_id LIMIT ?",
        [*params, limit],
    ).fetchall()
    out = []
    for row in conn_rows:
        tools = [
            t
            for (t,) in conn.execute(
                f"SELECT tool FROM session_tools WHERE {_KEY} ORDER BY tool", (row[0], row[1])
            ).fetchall()
        ]
        out.append(
            SessionState(
                agent_id=row[0],
                session_id=row[1],
                user_id=row[2],
                frame=row[3],
                active_censors=json.loads(row[4]),
                topic=row[5],
                last_user_text=row[6],
                turn_count=row[7],
                user_chars=row[8],
                assistant_chars=row[9],
                remember=bool(row[10]),
                episode_id=row[11],
                started_at=datetime.fromisoformat(row[12]),
                last_active_at=datetime.fromisoformat(row[13]),
                ended_at=None if row[14] is None else datetime.fromisoformat(row[14]),
                tools_used=tools,
            )
        )
    return out


def read_identity(conn: sqlite3.Connection, agent_id: str) -> list[IdentitySection]:
    rows = conn.execute(
        "SELECT section, content, version, updated_at FROM identity WHERE agent_id = ? ORDER BY section",
        (agent_id,),
    ).fetchall()
    return [
        IdentitySection(section=r[0], content=r[1], version=r[2], updated_at=datetime.fromisoformat(r[3]))
        for r in rows
    ]
