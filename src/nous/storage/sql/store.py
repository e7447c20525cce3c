"""The SQL store: every read and write op written once, over a backend that runs plans."""

from __future__ import annotations

from typing import assert_never

from nous.errors import StorageError
from nous.storage.base import (
    AddHistory,
    EmitEvent,
    EventOp,
    IdempotencyOp,
    KeyOp,
    MemoryOp,
    PutMemory,
    SessionOp,
    Store,
    ThreadOp,
    UserOp,
    WriteOp,
    write_riders,
)
from nous.storage.sql.erase import erase_user
from nous.storage.sql.events import SQLOutbox, apply_event_op, event_rows
from nous.storage.sql.idempotency import SQLIdempotency, apply_idempotency_op
from nous.storage.sql.keys import SQLKeys, apply_key_op
from nous.storage.sql.memories import SQLMemories, apply_memory_op, history_rows, put_memories
from nous.storage.sql.plan import Dialect, Plan, Stmt
from nous.storage.sql.sessions import SQLSessions, apply_session_op
from nous.storage.sql.threads import SQLThreads, apply_thread_op


def apply_op(d: Dialect, op: WriteOp, rev: int | None, previous_changed: bool) -> Plan[bool]:
    """One write op, by its aggregate; ``assert_never`` makes mypy report an op left out."""
    if isinstance(op, MemoryOp):
        return (yield from apply_memory_op(d, op, rev))
    if isinstance(op, SessionOp):
        return (yield from apply_session_op(d, op))
    if isinstance(op, EventOp):
        return (yield from apply_event_op(d, op, previous_changed))
    if isinstance(op, KeyOp):
        return (yield from apply_key_op(d, op))
    if isinstance(op, IdempotencyOp):
        return (yield from apply_idempotency_op(d, op))
    if isinstance(op, UserOp):
        return (yield from erase_user(d, op, rev))
    if isinstance(op, ThreadOp):
        return (yield from apply_thread_op(d, op))
    assert_never(op)


# A run of at least this many new-memory writes is written in bulk (see ``apply_ops``); a few go
# one statement per op, which costs less than staging them.
BULK_MIN = 16


def _bulkable(op: WriteOp) -> bool:
    """Ops whose effect does not depend on what an earlier op of the same write changed."""
    match op:
        case PutMemory():
            return op.expect_updated_at is None and not op.keep_embedding
        case AddHistory():
            return True
        case EmitEvent():
            return not op.if_changed
        case _:
            return False


def apply_bulk(d: Dialect, run: list[WriteOp], rev: int | None) -> Plan[None]:
    """A run of bulkable ops, table by table: the memories (and their chunks), then the audit rows,
    then the events, each in the run's order. Nothing inside the transaction reads between them,
    so the rows written are those of the ops one by one (serial ids keep their relative order)."""
    yield from put_memories(d, [op for op in run if isinstance(op, PutMemory)], rev)
    audit = [op.entry for op in run if isinstance(op, AddHistory)]
    if audit:
        yield history_rows(d, audit)
    events = [op.event for op in run if isinstance(op, EmitEvent)]
    if events:
        yield event_rows(d, events)


def apply_ops(d: Dialect, ops: list[WriteOp], rev: int | None) -> Plan[list[bool]]:
    """Every op in order (the caller holds the transaction); per op, whether it changed anything.

    A run of consecutive bulkable ops with at least BULK_MIN memories, none twice, is written with
    ``apply_bulk`` (many rows per statement; COPY on PostgreSQL): what ``create_many`` and imports
    write. Each of its ops changes something (a put that cannot raises ConflictError)."""
    results: list[bool] = []
    i = 0
    while i < len(ops):
        end = i
        while end < len(ops) and _bulkable(ops[end]):
            end += 1
        run = ops[i:end]
        ids = [op.memory.id for op in run if isinstance(op, PutMemory)]
        if len(ids) >= BULK_MIN and len(set(ids)) == len(ids):
            yield from apply_bulk(d, run, rev)
            results += [True] * len(run)
            i = end
            continue
        for op in run or ops[i : i + 1]:
            results.append((yield from apply_op(d, op, rev, bool(results) and results[-1])))
        i += max(len(run), 1)
    return results


def claim_embedding_space(model: str, dims: int, fresh: str) -> Plan[None]:
    """Check that the store's embedding space is ``model`` at ``dims`` (else StorageError, which
    suggests a new ``fresh``). The first process to open a new store claims it; DO NOTHING keeps a
    claim another process made first, and the read after it checks against that claim. A store
    already claimed is only read, so it opens while another process holds the write lock."""
    meta = dict((yield Stmt("SELECT key, value FROM meta")).rows)
    if "embedding_model" not in meta:
        yield Stmt(
            "INSERT INTO meta (key, value) VALUES (?, ?), (?, ?) ON CONFLICT DO NOTHING",
            ("embedding_model", model, "embedding_dimensions", str(dims)),
        )
        meta = dict((yield Stmt("SELECT key, value FROM meta")).rows)
    if meta["embedding_model"] != model or int(meta["embedding_dimensions"]) != dims:
        raise StorageError(
            f"this store was built with embedding model {meta['embedding_model']!r} "
            f"({meta['embedding_dimensions']} dims) but {model!r} ({dims} dims) is configured; "
            f"configure the original model or use a new {fresh}"
        )


class SQLStore(SQLMemories, SQLSessions, SQLOutbox, SQLKeys, SQLIdempotency, SQLThreads, Store):
    """A store whose SQL is shared; a backend adds connections, transactions and search."""

    async def apply(self, ops: list[WriteOp]) -> list[bool]:
        if not ops:
            return []
        riders = write_riders.get()  # written in the same transaction; their results not returned
        return (await self._write(self._apply_plan([*ops, *riders])))[: len(ops)]

    def _apply_plan(self, ops: list[WriteOp]) -> Plan[list[bool]]:
        return apply_ops(self.dialect, ops, None)
