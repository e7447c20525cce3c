"""SQLite operations on the event outbox (run on the writer thread, inside its transaction)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any

from nous.errors import LeaseLostError, NotFoundError, StepDoneError
from nous.models.events import Event, EventStatus
from nous.models.llm import LLMUsage
from nous.storage.base import (
    CompleteEvent,
    EmitEvent,
    EventOp,
    EventStep,
    FailEvent,
    RecordLLMCall,
    RetryEvent,
)
from nous.storage.sqlite.connection import rollback

_COLUMNS = (
    "id, agent_id, kind, subject_id, payload, status, attempts, available_at, lease_owner, "
    "lease_until, last_error, created_at, done_at"
)


def apply_event_op(
    conn: sqlite3.Connection, op: EventOp, fmt_time: Callable[[datetime], str], previous_changed: bool
) -> bool:
    """Apply one outbox op inside the caller's transaction."""
    match op:
        case EmitEvent(event=e):
            if op.if_changed and not previous_changed:
                return False
            conn.execute(
                f"INSERT INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    e.id,
                    e.agent_id,
                    e.kind.value,
                    e.subject_id,
                    json.dumps(e.payload),
                    e.status.value,
                    e.attempts,
                    fmt_time(e.available_at),
                    None,
                    None,
                    None,
                    fmt_time(e.created_at),
                    None,
                ),
            )
            return True
        case CompleteEvent():
            cur = conn.execute(
                "UPDATE events SET status = 'done', done_at = ?, lease_owner = NULL, lease_until = NULL "
                "WHERE id = ? AND status = 'running' AND lease_owner = ?",
                (fmt_time(op.at), op.event_id, op.lease_owner),
            )
            if cur.rowcount == 0:
                raise LeaseLostError(f"event {op.event_id} is no longer leased to {op.lease_owner}")
            return True
        case FailEvent():
            status = "dead" if op.retry_at is None else "pending"
            cur = conn.execute(
                "UPDATE events SET status = ?, last_error = ?, available_at = coalesce(?, available_at), "
                "lease_owner = NULL, lease_until = NULL WHERE id = ? AND status = 'running' AND lease_owner = ?",
                (
                    status,
                    op.error[:2000],
                    None if op.retry_at is None else fmt_time(op.retry_at),
                    op.event_id,
                    op.lease_owner,
                ),
            )
            return cur.rowcount > 0
        case RetryEvent():
            cur = conn.execute(
                "UPDATE events SET status = 'pending', attempts = 0, available_at = ?, lease_owner = NULL, "
                "lease_until = NULL WHERE id = ? AND agent_id = ? AND status IN ('dead', 'pending')",
                (fmt_time(op.at), op.event_id, op.agent_id),
            )
            if cur.rowcount == 0:
                found = conn.execute(
                    "SELECT status FROM events WHERE id = ? AND agent_id = ?", (op.event_id, op.agent_id)
                ).fetchone()
                if found is None:
                    raise NotFoundError(f"no event {op.event_id!r}")
            return cur.rowcount > 0
        case RecordLLMCall(call=c):
            conn.execute(
                "INSERT INTO llm_usage (agent_id, provider, model, purpose, input_tokens, output_tokens, "
                "latency_ms, ok, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    c.agent_id,
                    c.provider,
                    c.model,
                    c.purpose,
                    c.input_tokens,
                    c.output_tokens,
                    c.latency_ms,
                    int(c.ok),
                    fmt_time(c.at),
                ),
            )
            return True
        case EventStep():
            cur = conn.execute(
                "INSERT INTO event_steps (event_id, step) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (op.event_id, op.step),
            )
            if cur.rowcount == 0:
                raise StepDoneError(f"step {op.step!r} of event {op.event_id} was already applied")
            return True
    raise TypeError(f"not an event op: {op!r}")


def claim_events(
    conn: sqlite3.Connection,
    agent_id: str,
    worker_id: str,
    limit: int,
    lease_until: str,
    now: str,
) -> list[Event]:
    """Lease due events (the writer thread makes select-and-update one atomic step)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows = conn.execute(
            f"UPDATE events SET status = 'running', lease_owner = ?, lease_until = ?, attempts = attempts + 1 "
            f"WHERE id IN (SELECT id FROM events WHERE agent_id = ? AND ("
            f"(status = 'pending' AND available_at <= ?) OR (status = 'running' AND lease_until < ?)) "
            f"ORDER BY available_at, created_at LIMIT ?) RETURNING {_COLUMNS}",
            (worker_id, lease_until, agent_id, now, now, limit),
        ).fetchall()
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise
    return sorted((_event(r) for r in rows), key=lambda e: (e.available_at, e.created_at))


def read_events(
    conn: sqlite3.Connection, agent_id: str, status: EventStatus | None, event_id: str | None, limit: int
) -> list[Event]:
    where, params = "agent_id = ?", [agent_id]
    if status is not None:
        where += " AND status = ?"
        params.append(status.value)
    if event_id is not None:
        where += " AND id = ?"
        params.append(event_id)
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM events WHERE {where} ORDER BY created_at DESC, id LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [_event(r) for r in rows]


def count_events(conn: sqlite3.Connection, agent_id: str) -> dict[EventStatus, int]:
    rows = conn.execute(
        "SELECT status, count(*) FROM events WHERE agent_id = ? GROUP BY status", (agent_id,)
    ).fetchall()
    return {EventStatus(s): n for s, n in rows}


def _event(row: Any) -> Event:
    return Event(
        id=row[0],
        agent_id=row[1],
        kind=row[2],
        subject_id=row[3],
        payload=json.loads(row[4]),
        status=row[5],
        attempts=row[6],
        available_at=datetime.fromisoformat(row[7]),
        lease_owner=row[8],
        lease_until=None if row[9] is None else datetime.fromisoformat(row[9]),
        last_error=row[10],
        created_at=datetime.fromisoformat(row[11]),
        done_at=None if row[12] is None else datetime.fromisoformat(row[12]),
    )


def read_llm_usage(conn: sqlite3.Connection, agent_id: str) -> list[LLMUsage]:
    rows = conn.execute(
        "SELECT provider, model, purpose, count(*), sum(1 - ok), sum(input_tokens), sum(output_tokens) "
        "FROM llm_usage WHERE agent_id = ? GROUP BY provider, model, purpose ORDER BY provider, model, purpose",
        (agent_id,),
    ).fetchall()
    return [_usage(r) for r in rows]


def _usage(r: Any) -> LLMUsage:
    return LLMUsage(
        provider=r[0],
        model=r[1],
        purpose=r[2],
        calls=r[3],
        failed=r[4],
        input_tokens=r[5],
        output_tokens=r[6],
    )
