"""The SQL store: every read and write op written once, over a backend that runs plans."""

from __future__ import annotations

from typing import assert_never

from nous.storage.base import (
    AddHistory,
    ClaimSessionEpisode,
    CompleteEvent,
    EmitEvent,
    EndSession,
    EventStep,
    FailEvent,
    NoteReply,
    NoteUserTurn,
    PurgeMemory,
    PutApiKey,
    PutEdge,
    PutMemory,
    PutSession,
    PutWorkingMemory,
    RecordLLMCall,
    RetryEvent,
    RevokeApiKey,
    SetEmbedding,
    SetIdentitySection,
    SetLifecycle,
    Store,
    WriteOp,
)
from nous.storage.sql.events import SQLOutbox, apply_event_op
from nous.storage.sql.keys import SQLKeys, apply_key_op
from nous.storage.sql.memories import SQLMemories, apply_memory_op
from nous.storage.sql.plan import Dialect, Plan
from nous.storage.sql.sessions import SQLSessions, apply_session_op


def apply_op(d: Dialect, op: WriteOp, rev: int | None, previous_changed: bool) -> Plan[bool]:
    """One write op, by its aggregate; ``assert_never`` makes mypy report an op left out."""
    match op:
        case PutMemory() | PutEdge() | AddHistory() | PurgeMemory() | SetEmbedding() | SetLifecycle():
            return (yield from apply_memory_op(d, op, rev))
        case (
            NoteUserTurn()
            | NoteReply()
            | ClaimSessionEpisode()
            | EndSession()
            | PutSession()
            | SetIdentitySection()
            | PutWorkingMemory()
        ):
            return (yield from apply_session_op(d, op))
        case EmitEvent() | CompleteEvent() | FailEvent() | RetryEvent() | RecordLLMCall() | EventStep():
            return (yield from apply_event_op(d, op, previous_changed))
        case PutApiKey() | RevokeApiKey():
            return (yield from apply_key_op(d, op))
        case _:
            assert_never(op)


def apply_ops(d: Dialect, ops: list[WriteOp], rev: int | None) -> Plan[list[bool]]:
    """Every op in order (the caller holds the transaction); per op, whether it changed anything."""
    results: list[bool] = []
    for op in ops:
        results.append((yield from apply_op(d, op, rev, bool(results) and results[-1])))
    return results


class SQLStore(SQLMemories, SQLSessions, SQLOutbox, SQLKeys, Store):
    """A store whose SQL is shared; a backend adds connections, transactions and search."""

    async def apply(self, ops: list[WriteOp]) -> list[bool]:
        return await self._write(self._apply_plan(ops)) if ops else []

    def _apply_plan(self, ops: list[WriteOp]) -> Plan[list[bool]]:
        return apply_ops(self.dialect, ops, None)
