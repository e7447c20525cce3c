"""API key rows on sqlite."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any

from nous.errors import ConflictError, NotFoundError
from nous.models.keys import ApiKey
from nous.storage.base import PutApiKey, RevokeApiKey

_COLUMNS = "id, agent_id, user_id, name, admin, created_at, revoked_at"


def apply_key_op(
    conn: sqlite3.Connection, op: PutApiKey | RevokeApiKey, fmt_time: Callable[[datetime], Any]
) -> bool:
    """Apply one key op inside the caller's transaction."""
    match op:
        case PutApiKey(key=k):
            cur = conn.execute(
                "INSERT INTO api_keys (id, secret_hash, agent_id, user_id, name, admin, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (k.id, op.secret_hash, k.agent_id, k.user_id, k.name, k.admin, fmt_time(k.created_at)),
            )
            if cur.rowcount == 0:
                raise ConflictError(f"an API key with id {k.id!r} exists")
            return True
        case RevokeApiKey():
            cur = conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (fmt_time(op.at), op.key_id),
            )
            if cur.rowcount == 0:
                found = conn.execute("SELECT 1 FROM api_keys WHERE id = ?", (op.key_id,))
                if found.fetchone() is None:
                    raise NotFoundError(f"no API key {op.key_id!r}")
            return cur.rowcount > 0
    raise TypeError(f"not a key op: {op!r}")


def read_keys(conn: sqlite3.Connection, key_id: str | None) -> list[tuple[ApiKey, str]]:
    where, params = ("WHERE id = ?", (key_id,)) if key_id is not None else ("", ())
    cur = conn.execute(
        f"SELECT {_COLUMNS}, secret_hash FROM api_keys {where} ORDER BY created_at DESC", params
    )
    rows = cur.fetchall()
    return [
        (
            ApiKey(
                id=r[0],
                agent_id=r[1],
                user_id=r[2],
                name=r[3],
                admin=bool(r[4]),
                created_at=r[5] if isinstance(r[5], datetime) else datetime.fromisoformat(r[5]),
                revoked_at=None
                if r[6] is None
                else r[6]
                if isinstance(r[6], datetime)
                else datetime.fromisoformat(r[6]),
            ),
            r[7],
        )
        for r in rows
    ]
