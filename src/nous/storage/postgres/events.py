"""PostgreSQL operations on the event outbox. Claims use ``FOR UPDATE SKIP LOCKED``, so several
worker processes share one queue and never take the same event."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

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

_COLUMNS = (
    "id, agent_id, kind, subject_id, payload, status, attempts, available_at, lease_owner, "
    "lease_until, last_error, created_at, done_at"
)


async def apply_event_op(conn: psycopg.AsyncConnection, op: EventOp, previous_changed: bool) -> bool:
    """Apply one outbox op inside the caller's transaction."""
    match op:
        case EmitEvent(event=e):
            if op.if_changed and not previous_changed:
                return False
            await conn.execute(
                "INSERT INTO events (id, agent_id, kind, subject_id, payload, status, attempts, "
                "available_at, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    e.id,
                    e.agent_id,
                    e.kind.value,
                    e.subject_id,
                    Jsonb(e.payload),
                    e.status.value,
                    e.attempts,
                    e.available_at,
                    e.created_at,
                ),
            )
            return True
        case CompleteEvent():
            cur = await conn.execute(
                "UPDATE events SET status = 'done', done_at = %s, lease_owner = NULL, lease_until = NULL "
                "WHERE id = %s AND status = 'running' AND lease_owner = %s",
                (op.at, op.event_id, op.lease_owner),
            )
            if cur.rowcount == 0:
                raise LeaseLostError(f"event {op.event_id} is no longer leased to {op.lease_owner}")
            return True
        case FailEvent():
            cur = await conn.execute(
                "UPDATE events SET status = %s, last_error = %s, available_at = coalesce(%s, available_at), "
                "lease_owner = NULL, lease_until = NULL WHERE id = %s AND status = 'running' AND lease_owner = %s",
                (
                    "dead" if op.retry_at is None else "pending",
                    op.error[:2000],
                    op.retry_at,
                    op.event_id,
                    op.lease_owner,
                ),
            )
            return cur.rowcount > 0
        case RetryEvent():
            cur = await conn.execute(
                "UPDATE events SET status = 'pending', attempts = 0, available_at = %s, lease_owner = NULL, "
                "lease_until = NULL WHERE id = %s AND agent_id = %s AND status IN ('dead', 'pending')",
                (op.at, op.event_id, op.agent_id),
            )
            if cur.rowcount == 0:
                found = await conn.execute(
                    "SELECT 1 FROM events WHERE id = %s AND agent_id = %s", (op.event_id, op.agent_id)
                )
                if await found.fetchone() is None:
                    raise NotFoundError(f"no event {op.event_id!r}")
            return cur.rowcount > 0
        case RecordLLMCall(call=c):
            await conn.execute(
                "INSERT INTO llm_usage (agent_id, provider, model, purpose, input_tokens, output_tokens, "
                "latency_ms, ok, at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    c.agent_id,
                    c.provider,
                    c.model,
                    c.purpose,
                    c.input_tokens,
                    c.output_tokens,
                    c.latency_ms,
                    c.ok,
                    c.at,
                ),
            )
            return True
        case EventStep():
            cur = await conn.execute(
                "INSERT INTO event_steps (event_id, step) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (op.event_id, op.step),
            )
            if cur.rowcount == 0:
                raise StepDoneError(f"step {op.step!r} of event {op.event_id} was already applied")
            return True
    raise TypeError(f"not an event op: {op!r}")


async def claim_events(
    conn: psycopg.AsyncConnection, agent_id: str, worker_id: str, limit: int, lease_until: Any, now: Any
) -> list[Event]:
    async with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(
            "UPDATE events SET status = 'running', lease_owner = %s, lease_until = %s, attempts = attempts + 1 "
            "WHERE id IN (SELECT id FROM events WHERE agent_id = %s AND ("
            "(status = 'pending' AND available_at <= %s) OR (status = 'running' AND lease_until < %s)) "
            "ORDER BY available_at, created_at LIMIT %s FOR UPDATE SKIP LOCKED) "
            f"RETURNING {_COLUMNS}",
            (worker_id, lease_until, agent_id, now, now, limit),
        )
        rows = await cur.fetchall()
    return sorted((Event.model_validate(r) for r in rows), key=lambda e: (e.available_at, e.created_at))


async def read_events(
    conn: psycopg.AsyncConnection, agent_id: str, status: EventStatus | None, event_id: str | None, limit: int
) -> list[Event]:
    where, params = "agent_id = %s", [agent_id]
    if status is not None:
        where += " AND status = %s"
        params.append(status.value)
    if event_id is not None:
        where += " AND id = %s"
        params.append(event_id)
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(
            f"SELECT {_COLUMNS} FROM events WHERE {where} ORDER BY created_at DESC, id LIMIT %s",
            (*params, limit),
        )
        return [Event.model_validate(r) for r in await cur.fetchall()]


async def count_events(conn: psycopg.AsyncConnection, agent_id: str) -> dict[EventStatus, int]:
    cur = await conn.execute(
        "SELECT status, count(*) FROM events WHERE agent_id = %s GROUP BY status", (agent_id,)
    )
    return {EventStatus(s): n for s, n in await cur.fetchall()}


async def read_llm_usage(conn: psycopg.AsyncConnection, agent_id: str) -> list[LLMUsage]:
    cur = await conn.execute(
        "SELECT provider, model, purpose, count(*), count(*) FILTER (WHERE NOT ok), "
        "sum(input_tokens), sum(output_tokens) FROM llm_usage WHERE agent_id = %s "
        "GROUP BY provider, model, purpose ORDER BY provider, model, purpose",
        (agent_id,),
    )
    return [
        LLMUsage(
            provider=r[0],
            model=r[1],
            purpose=r[2],
            calls=r[3],
            failed=r[4],
            input_tokens=r[5],
            output_tokens=r[6],
        )
        for r in await cur.fetchall()
    ]
