"""API key rows: the key ops and reads."""

from __future__ import annotations

from typing import assert_never

from nous.errors import ConflictError, NotFoundError
from nous.models.keys import ApiKey
from nous.storage.base import KeyOp, KeyStore, PutApiKey, RevokeApiKey
from nous.storage.sql.plan import Dialect, Plan, SQLRunner, Stmt

_COLUMNS = "id, agent_id, user_id, name, admin, created_at, revoked_at, secret_hash"


def apply_key_op(d: Dialect, op: KeyOp) -> Plan[bool]:
    """Apply one key op inside the caller's transaction."""
    match op:
        case PutApiKey(key=k):
            done = yield Stmt(
                "INSERT INTO api_keys (id, secret_hash, agent_id, user_id, name, admin, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (k.id, op.secret_hash, k.agent_id, k.user_id, k.name, k.admin, d.time(k.created_at)),
            )
            if done.rowcount == 0:
                raise ConflictError(f"an API key with id {k.id!r} exists")
            return True
        case RevokeApiKey():
            done = yield Stmt(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (d.time(op.at), op.key_id),
            )
            if (
                done.rowcount == 0
                and not (yield Stmt("SELECT 1 FROM api_keys WHERE id = ?", (op.key_id,))).rows
            ):
                raise NotFoundError(f"no API key {op.key_id!r}")
            return done.rowcount > 0
        case _:
            assert_never(op)


def read_keys(d: Dialect, key_id: str | None) -> Plan[list[tuple[ApiKey, str]]]:
    """Keys (one, or all) newest first, each with its secret's hash."""
    where, params = ("WHERE id = ?", (key_id,)) if key_id is not None else ("", ())
    found = yield Stmt(f"SELECT {_COLUMNS} FROM api_keys {where} ORDER BY created_at DESC", params)
    return [
        (
            ApiKey(
                id=r["id"],
                agent_id=r["agent_id"],
                user_id=r["user_id"],
                name=r["name"],
                admin=bool(r["admin"]),
                created_at=d.read_time(r["created_at"]),
                revoked_at=d.read_time(r["revoked_at"]),
            ),
            r["secret_hash"],
        )
        for r in found.dicts()
    ]


class SQLKeys(SQLRunner, KeyStore):
    """The key reads every SQL backend shares."""

    async def api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        found = await self._read(read_keys(self.dialect, key_id))
        return found[0] if found else None

    async def api_keys(self) -> list[ApiKey]:
        return [k for k, _ in await self._read(read_keys(self.dialect, None))]
