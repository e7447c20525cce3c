"""API keys: ``nous_<id>_<secret>``. Only a SHA-256 of the secret is stored (the secret is 256
random bits, so a fast hash is enough), compared in constant time; the key is shown once."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from starlette.requests import Request

from nous._time import utcnow
from nous.errors import InvalidInputError
from nous.models.keys import ApiKey
from nous.storage import Store
from nous.storage.base import PutApiKey, RevokeApiKey

_KEY = re.compile(r"^nous_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


async def create_key(
    store: Store, *, agent_id: str | None, user_id: str | None = None, name: str = "", admin: bool = False
) -> tuple[ApiKey, str]:
    """A new key for one agent (optionally one of its users), or an admin key; returns the record
    and the key itself, which is not stored and cannot be shown again."""
    if not admin and not (agent_id and agent_id.strip()):
        raise InvalidInputError("a key needs an agent (or --admin)", field="agent_id")
    if admin and (agent_id or user_id):
        raise InvalidInputError("an admin key is not bound to an agent or a user", field="admin")
    key = ApiKey(id=secrets.token_hex(6), agent_id=agent_id, user_id=user_id, name=name, admin=admin)
    secret = secrets.token_urlsafe(32)
    await store.apply([PutApiKey(key, _hash(secret))])
    return key, f"nous_{key.id}_{secret}"


async def revoke_key(store: Store, key_id: str) -> bool:
    """Revoke a key by its id (the ``<id>`` part); False if it was already revoked."""
    (changed,) = await store.apply([RevokeApiKey(key_id.strip(), utcnow())])
    return changed


async def verify_key(store: Store, token: str) -> ApiKey | None:
    """The active key ``token`` is, or None (malformed, unknown, wrong secret or revoked)."""
    match = _KEY.match(token.strip())
    if match is None:
        return None
    found = await store.api_key(match.group(1))
    if found is None:
        _hash(match.group(2))  # same work whether or not the id exists
        return None
    key, stored = found
    if not hmac.compare_digest(stored, _hash(match.group(2))) or not key.active:
        return None
    return key


async def key_from_header(store: Store, authorization: str | None) -> ApiKey | None:
    """The active key an ``Authorization: Bearer <key>`` header carries, or None."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        return None
    return await verify_key(store, token)


async def request_key(store: Store, request: Request) -> ApiKey | None:
    """The active key of ``request``'s Authorization header, looked up once per request (the
    middleware that checks it before the body is read and the route's own check share it)."""
    state = request.scope.setdefault("state", {})
    if "api_key" not in state:
        state["api_key"] = await key_from_header(store, request.headers.get("authorization"))
    found: ApiKey | None = state["api_key"]
    return found
