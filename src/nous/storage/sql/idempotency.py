"""Idempotency-Key rows: the claim, the guard that rides along a request's writes, the answer."""

from __future__ import annotations

from datetime import datetime
from typing import assert_never

from nous.errors import ConflictError
from nous.storage.base import (
    AnswerIdempotencyKey,
    ClaimIdempotencyKey,
    GuardIdempotencyKey,
    IdempotencyOp,
    IdempotencyStore,
    IdempotentRequest,
    ReleaseIdempotencyKey,
)
from nous.storage.sql.plan import Dialect, Plan, SQLRunner, Stmt, one

_KEY = "agent_id = ? AND user_id = ? AND key = ?"
# A claim takes over a kept row only when it expired, or when its request stopped (lease run
# out) before answering or writing anything and the same request is sent again.
_CLAIM = (
    "INSERT INTO idempotency_keys (agent_id, user_id, key, request_hash, owner, created_at, lease_until) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, user_id, key) DO UPDATE SET "
    "request_hash = excluded.request_hash, owner = excluded.owner, created_at = excluded.created_at, "
    "lease_until = excluded.lease_until, written_at = NULL, status = NULL, headers = NULL, body = NULL "
    "WHERE idempotency_keys.created_at < ? OR (idempotency_keys.status IS NULL "
    "AND idempotency_keys.written_at IS NULL AND idempotency_keys.lease_until < ? "
    "AND idempotency_keys.request_hash = excluded.request_hash)"
)


def apply_idempotency_op(d: Dialect, op: IdempotencyOp) -> Plan[bool]:
    """Apply one idempotency-key op inside the caller's transaction."""
    match op:
        case ClaimIdempotencyKey():
            done = yield Stmt(
                _CLAIM,
                (
                    op.agent_id,
                    op.user_id,
                    op.key,
                    op.request_hash,
                    op.owner,
                    d.time(op.at),
                    d.time(op.lease_until),
                    d.time(op.expired_before),
                    d.time(op.at),
                ),
            )
            return done.rowcount > 0
        case GuardIdempotencyKey():
            done = yield Stmt(
                f"UPDATE idempotency_keys SET written_at = COALESCE(written_at, ?) WHERE {_KEY} AND owner = ?",
                (d.time(op.at), op.agent_id, op.user_id, op.key, op.owner),
            )
            if done.rowcount == 0:
                raise ConflictError(
                    "another request took over this Idempotency-Key: this one's write was not stored"
                )
            return True
        case AnswerIdempotencyKey():
            done = yield Stmt(
                f"UPDATE idempotency_keys SET status = ?, headers = ?, body = ? WHERE {_KEY} AND owner = ?",
                (
                    op.status,
                    d.json([list(h) for h in op.headers]),
                    op.body,
                    op.agent_id,
                    op.user_id,
                    op.key,
                    op.owner,
                ),
            )
            return done.rowcount > 0
        case ReleaseIdempotencyKey():
            done = yield Stmt(
                f"DELETE FROM idempotency_keys WHERE {_KEY} AND owner = ? AND written_at IS NULL",
                (op.agent_id, op.user_id, op.key, op.owner),
            )
            return done.rowcount > 0
        case _:
            assert_never(op)


def read_idempotency_key(d: Dialect, agent_id: str, user_id: str, key: str) -> Plan[IdempotentRequest | None]:
    found = yield Stmt(
        "SELECT request_hash, owner, created_at, lease_until, written_at, status, headers, body "
        f"FROM idempotency_keys WHERE {_KEY}",
        (agent_id, user_id, key),
    )
    rows = found.dicts()
    if not rows:
        return None
    r = rows[0]
    return IdempotentRequest(
        request_hash=r["request_hash"],
        owner=r["owner"],
        created_at=d.read_time(r["created_at"]),
        lease_until=d.read_time(r["lease_until"]),
        written_at=d.read_time(r["written_at"]),
        status=r["status"],
        headers=[(str(n), str(v)) for n, v in d.read_json(r["headers"]) or []],
        body=r["body"],
    )


class SQLIdempotency(SQLRunner, IdempotencyStore):
    """The idempotency-key reads and upkeep every SQL backend shares."""

    async def idempotency_key(self, agent_id: str, user_id: str, key: str) -> IdempotentRequest | None:
        return await self._read(read_idempotency_key(self.dialect, agent_id, user_id, key))

    async def prune_idempotency_keys(self, agent_id: str, before: datetime) -> int:
        done = await self._write(
            one(
                Stmt(
                    "DELETE FROM idempotency_keys WHERE agent_id = ? AND created_at < ?",
                    (agent_id, self.dialect.time(before)),
                )
            )
        )
        return done.rowcount
