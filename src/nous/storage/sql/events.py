"""The event outbox: emit, complete, fail and retry events, record LLM usage, mark handler steps."""

from __future__ import annotations

from datetime import datetime
from typing import Any, assert_never

from nous.errors import LeaseLostError, NotFoundError, StepDoneError
from nous.models.events import Event, EventStatus
from nous.models.llm import LLMUsage
from nous.storage.base import (
    CompleteEvent,
    EmitEvent,
    EventOp,
    EventStep,
    FailEvent,
    Outbox,
    RecordLLMCall,
    RetryEvent,
)
from nous.storage.sql.plan import Dialect, Plan, Rows, SQLRunner, Stmt

_NEW_COLUMNS = "id, agent_id, kind, subject_id, payload, status, attempts, available_at, created_at"
_COLUMNS = f"{_NEW_COLUMNS}, lease_owner, lease_until, last_error, done_at"


def event_rows(d: Dialect, events: list[Event]) -> Rows:
    """New outbox rows."""
    return Rows(
        "events",
        tuple(_NEW_COLUMNS.split(", ")),
        [
            (
                *(e.id, e.agent_id, e.kind.value, e.subject_id, d.json(e.payload), e.status.value),
                *(e.attempts, d.time(e.available_at), d.time(e.created_at)),
            )
            for e in events
        ],
    )


def apply_event_op(d: Dialect, op: EventOp, previous_changed: bool) -> Plan[bool]:
    """Apply one outbox op inside the caller's transaction."""
    match op:
        case EmitEvent(event=e):
            if op.if_changed and not previous_changed:
                return False
            emit = event_rows(d, [e])
            yield Stmt(emit.insert(), emit.rows[0])
            return True
        case CompleteEvent():
            done = yield Stmt(
                "UPDATE events SET status = 'done', done_at = ?, lease_owner = NULL, lease_until = NULL "
                "WHERE id = ? AND status = 'running' AND lease_owner = ?",
                (d.time(op.at), op.event_id, op.lease_owner),
            )
            if done.rowcount == 0:
                raise LeaseLostError(f"event {op.event_id} is no longer leased to {op.lease_owner}")
            return True
        case FailEvent():
            done = yield Stmt(
                "UPDATE events SET status = ?, last_error = ?, available_at = coalesce(?, available_at), "
                "lease_owner = NULL, lease_until = NULL WHERE id = ? AND status = 'running' AND lease_owner = ?",
                (
                    *("dead" if op.retry_at is None else "pending", op.error[:2000], d.time(op.retry_at)),
                    *(op.event_id, op.lease_owner),
                ),
            )
            return done.rowcount > 0
        case RetryEvent():
            done = yield Stmt(
                "UPDATE events SET status = 'pending', attempts = 0, available_at = ?, lease_owner = NULL, "
                "lease_until = NULL WHERE id = ? AND agent_id = ? AND status IN ('dead', 'pending')",
                (d.time(op.at), op.event_id, op.agent_id),
            )
            if done.rowcount == 0:
                found = yield Stmt(
                    "SELECT 1 FROM events WHERE id = ? AND agent_id = ?", (op.event_id, op.agent_id)
                )
                if not found.rows:
                    raise NotFoundError(f"no event {op.event_id!r}")
            return done.rowcount > 0
        case RecordLLMCall(call=c):
            yield Stmt(
                "INSERT INTO llm_usage (agent_id, provider, model, purpose, input_tokens, output_tokens, "
                "latency_ms, ok, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    *(c.agent_id, c.provider, c.model, c.purpose, c.input_tokens, c.output_tokens),
                    *(c.latency_ms, c.ok, d.time(c.at)),
                ),
            )
            return True
        case EventStep():
            done = yield Stmt(
                "INSERT INTO event_steps (event_id, step) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (op.event_id, op.step),
            )
            if done.rowcount == 0:
                raise StepDoneError(f"step {op.step!r} of event {op.event_id} was already applied")
            return True
        case _:
            assert_never(op)


def claim_events(
    d: Dialect, agent_id: str, worker_id: str, limit: int, lease_until: Any, now: Any
) -> Plan[list[Event]]:
    """Lease due events in one statement; the caller runs it in a write transaction. PostgreSQL
    skips rows another worker is claiming (``SKIP LOCKED``), so several processes share one queue
    and never take the same event; SQLite's single writer needs no row locks."""
    skip = f"{d.for_update} SKIP LOCKED" if d.for_update else ""
    found = yield Stmt(
        "UPDATE events SET status = 'running', lease_owner = ?, lease_until = ?, attempts = attempts + 1 "
        "WHERE id IN (SELECT id FROM events WHERE agent_id = ? AND ("
        "(status = 'pending' AND available_at <= ?) OR (status = 'running' AND lease_until < ?)) "
        f"ORDER BY available_at, created_at LIMIT ?{skip}) RETURNING {_COLUMNS}",
        (worker_id, d.time(lease_until), agent_id, d.time(now), d.time(now), limit),
    )
    return sorted((_event(d, r) for r in found.dicts()), key=lambda e: (e.available_at, e.created_at))


def read_events(
    d: Dialect, agent_id: str, status: EventStatus | None, event_id: str | None, limit: int
) -> Plan[list[Event]]:
    where, params = "agent_id = ?", [agent_id]
    if status is not None:
        where += " AND status = ?"
        params.append(status.value)
    if event_id is not None:
        where += " AND id = ?"
        params.append(event_id)
    found = yield Stmt(
        f"SELECT {_COLUMNS} FROM events WHERE {where} ORDER BY created_at DESC, id LIMIT ?", (*params, limit)
    )
    return [_event(d, r) for r in found.dicts()]


def count_events(agent_id: str | None) -> Plan[dict[EventStatus, int]]:
    where, params = ("", ()) if agent_id is None else ("WHERE agent_id = ?", (agent_id,))
    found = yield Stmt(f"SELECT status, count(*) FROM events {where} GROUP BY status", params)
    return {EventStatus(s): n for s, n in found.rows}


def _event(d: Dialect, row: dict[str, Any]) -> Event:
    for name in ("available_at", "lease_until", "created_at", "done_at"):
        row[name] = d.read_time(row[name])
    return Event.model_validate({**row, "payload": d.read_json(row["payload"])})


def read_llm_usage(agent_id: str) -> Plan[list[LLMUsage]]:
    found = yield Stmt(
        "SELECT provider, model, purpose, count(*), count(*) FILTER (WHERE NOT ok), "
        "sum(input_tokens), sum(output_tokens) FROM llm_usage WHERE agent_id = ? "
        "GROUP BY provider, model, purpose ORDER BY provider, model, purpose",
        (agent_id,),
    )
    return [
        LLMUsage(provider=p, model=m, purpose=u, calls=n, failed=f, input_tokens=i, output_tokens=o)
        for p, m, u, n, f, i, o in found.rows
    ]


class SQLOutbox(SQLRunner, Outbox):
    """The outbox reads and claims every SQL backend shares."""

    async def claim_events(
        self, agent_id: str, worker_id: str, *, limit: int, lease_until: datetime, now: datetime
    ) -> list[Event]:
        return await self._write(claim_events(self.dialect, agent_id, worker_id, limit, lease_until, now))

    async def events(
        self,
        agent_id: str,
        *,
        status: EventStatus | None = None,
        event_id: str | None = None,
        limit: int = 100,
    ) -> list[Event]:
        return await self._read(read_events(self.dialect, agent_id, status, event_id, limit))

    async def event_counts(self, agent_id: str | None) -> dict[EventStatus, int]:
        return await self._read(count_events(agent_id))

    async def llm_usage(self, agent_id: str) -> list[LLMUsage]:
        return await self._read(read_llm_usage(agent_id))
