"""``Idempotency-Key`` on the POSTs that create something: a retry gets the first answer.

A client sends ``Idempotency-Key: <any visible ASCII, up to 255>`` with a creating POST (the ones
named in ``CREATING``). The key is kept in the store per caller (the agent of the API key, and its
user), so every worker and a restarted server see it, for NOUS_IDEMPOTENCY_RETENTION_HOURS:

- the first request claims the key in one statement (INSERT ... ON CONFLICT), runs, and its answer
  (status, body, Location) is kept before it is sent;
- the same key with the same request (method, path, query, body) answers that kept answer again,
  with ``Idempotent-Replayed: true``;
- the same key with another request is 422 (``code: idempotency_key_reused``);
- while the first request is still running, a retry is 409 (``code: idempotency_key_in_use``,
  ``Retry-After``): it does not wait.

Exactly once across a crash: the request's writes carry a guard (``write_riders``) that marks the
key written in the same transaction as what it stores, and fails (rolling the write back) if
another request took the key over. A request that stopped (a killed server) before writing leaves
its key to the first retry once its lease (NOUS_IDEMPOTENCY_LEASE_SECONDS) runs out: it runs again.
One that stopped after writing, before its answer was kept, answers retries 409
(``code: idempotency_answer_lost``): what it stored is stored once, its answer is gone. A 5xx answer
of a request that wrote nothing is not kept (a retry runs again).

The OpenAI proxy's ``POST /v1/chat/completions`` takes a key too: a retry of a request whose answer
was lost gets that answer again, and the exchange is stored once. Its refusals are in OpenAI's
error shape (a reused key is 400 there); a streamed answer is sent as it comes and kept when it
ends; the session bookkeeping before the model is asked does not count as written
(``without_riders``), so a model that failed (502, 504) is asked again on the retry.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from uuid import uuid4

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nous._time import utcnow
from nous.api import Nous
from nous.server import openai_proxy
from nous.server.keys import request_key
from nous.server.problems import problem
from nous.storage.base import (
    AnswerIdempotencyKey,
    ClaimIdempotencyKey,
    GuardIdempotencyKey,
    IdempotentRequest,
    ReleaseIdempotencyKey,
    write_riders,
)

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
# The handlers (route names) of the POSTs that create something; their operationIds in camelCase.
CREATING = frozenset(
    {
        "create_memory",
        "create_decision",
        "start_episode",
        "ingest",
        "import_memories",
        "pre_turn",
        "post_turn",
        "supersede_memory",
        "chat_completions",  # the OpenAI proxy (nous.server.openai_proxy): its errors in OpenAI's shape
    }
)
_VALID = re.compile(r"[\x21-\x7e]{1,255}")
# Headers of an answer not kept: the server sets them anew on each answer.
_NOT_KEPT = frozenset({"content-length", "date", "server", "x-request-id"})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def document(spec: dict[str, Any]) -> None:
    """Add the ``Idempotency-Key`` header to the creating operations of an OpenAPI document."""
    ids = {_camel(name) for name in CREATING}
    parameter = {
        "name": HEADER,
        "in": "header",
        "required": False,
        "description": "Any text (visible ASCII, up to 255): a retry with the same key and body gets "
        "the first answer again (with `Idempotent-Replayed: true`); another body is 422, a retry "
        "while the first is running 409. Kept per API key's agent and user for "
        "NOUS_IDEMPOTENCY_RETENTION_HOURS.",
        "schema": {"type": "string", "maxLength": 255},
    }
    for operations in spec.get("paths", {}).values():
        for operation in operations.values():
            if operation.get("operationId") in ids:
                operation.setdefault("parameters", []).append(parameter)


class Idempotency:
    """The ASGI middleware: claims, replays and keeps answers of keyed creating POSTs."""

    def __init__(self, app: ASGIApp, *, root: Callable[[], Nous], router: Router, auth: bool) -> None:
        self.app, self.root, self.router, self.auth = app, root, router, auth
        self._routes: list[APIRoute] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = _header(scope, b"idempotency-key") if scope["type"] == "http" else None
        if key is None or scope["method"] != "POST" or not self._creates(scope):
            await self.app(scope, receive, send)
            return
        if not _VALID.fullmatch(key):
            await _refusal(
                scope,
                422,
                f"{HEADER}: visible ASCII, 1 to 255 characters",
                code="invalid_input",
                field=HEADER,
            )(scope, receive, send)
            return
        caller = await self._caller(scope)
        if caller is None:  # no valid agent key: the route answers 401 or 403 as usual
            await self.app(scope, receive, send)
            return
        body, receive = await _buffered(receive)
        await self._keyed(scope, receive, send, caller, key, _fingerprint(scope, body))

    def _creates(self, scope: Scope) -> bool:
        if self._routes is None:
            self._routes = [r for r in self.router.routes if isinstance(r, APIRoute) and r.name in CREATING]
        return any(r.matches(scope)[0] == Match.FULL for r in self._routes)

    async def _caller(self, scope: Scope) -> tuple[str, str] | None:
        """The (agent, user) a key is kept for: the API key's ('' for an agent's key)."""
        root = self.root()
        if not self.auth:
            return root.agent_id, ""
        found = await request_key(root.store, Request(scope))  # the lookup the key check made
        if found is None or found.admin or found.agent_id is None:
            return None
        return found.agent_id, found.user_id or ""

    async def _keyed(
        self, scope: Scope, receive: Receive, send: Send, caller: tuple[str, str], key: str, digest: str
    ) -> None:
        root = self.root()
        store, settings = root.store, root.settings
        agent_id, user_id = caller
        owner, now = uuid4().hex, utcnow()
        claim = ClaimIdempotencyKey(
            agent_id,
            user_id,
            key,
            digest,
            owner,
            at=now,
            lease_until=now + timedelta(seconds=settings.idempotency_lease_seconds),
            expired_before=now - timedelta(hours=settings.idempotency_retention_hours),
        )
        (claimed,) = await store.apply([claim])
        if not claimed:
            kept = await store.idempotency_key(agent_id, user_id, key)
            if kept is not None:  # (None: it expired and was pruned just now; claim it again)
                await _answer_kept(kept, digest, scope, receive, send)
                return
            (claimed,) = await store.apply([claim])
            if not claimed:
                await _in_use(scope, 1)(scope, receive, send)
                return
        # Run the request with the guard riding along each of its writes; keep its answer, then send
        # it. A streamed answer (server-sent events: the OpenAI proxy's) is sent as it comes and
        # kept whole when it ends; if the server stops in between, its retries are told the answer
        # was lost, as for any answer not kept.
        messages: list[Message] = []
        streamed = False

        async def hold(message: Message) -> None:
            nonlocal streamed
            if message["type"] == "http.response.start":
                streamed = _streams(message)
            messages.append(message)
            if streamed:
                await send(message)

        token = write_riders.set(
            (*write_riders.get(), GuardIdempotencyKey(agent_id, user_id, key, owner, now))
        )
        try:
            await self.app(scope, receive, hold)
        except BaseException:
            await store.apply([ReleaseIdempotencyKey(agent_id, user_id, key, owner)])
            raise
        finally:
            write_riders.reset(token)
        start = next(m for m in messages if m["type"] == "http.response.start")
        status = int(start["status"])
        released = False
        if status >= 500:  # nothing written: a retry runs again; written: the answer is kept
            (released,) = await store.apply([ReleaseIdempotencyKey(agent_id, user_id, key, owner)])
        if not released:
            headers = [
                (n.decode("latin-1"), v.decode("latin-1"))
                for n, v in start.get("headers", [])
                if n.decode("latin-1").lower() not in _NOT_KEPT
            ]
            body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
            await store.apply(
                [
                    AnswerIdempotencyKey(
                        agent_id, user_id, key, owner, status, headers, body.decode("utf-8", "replace")
                    )
                ]
            )
        if not streamed:
            for message in messages:
                await send(message)


def _streams(start: Message) -> bool:
    """Whether a response is a stream of server-sent events."""
    for name, value in start.get("headers", []):
        if name.lower() == b"content-type" and value.split(b";")[0].strip() == b"text/event-stream":
            return True
    return False


async def _answer_kept(
    kept: IdempotentRequest, digest: str, scope: Scope, receive: Receive, send: Send
) -> None:
    """The answer to a retry of a key already claimed."""
    if kept.request_hash != digest:
        answer: Response = _refusal(
            scope,
            422,
            f"this {HEADER} was sent with another request: use a new key for a new request",
            code="idempotency_key_reused",
            field=HEADER,
        )
    elif kept.status is not None:
        headers = {n: v for n, v in kept.headers} | {REPLAYED: "true"}
        answer = Response((kept.body or "").encode("utf-8"), status_code=kept.status, headers=headers)
    elif kept.written_at is not None and kept.lease_until < utcnow():
        answer = _refusal(
            scope,
            409,
            f"the first request with this {HEADER} was stored, but the server stopped before its "
            "answer was kept; it is not run again",
            code="idempotency_answer_lost",
        )
    else:
        answer = _in_use(scope, max(1, math.ceil((kept.lease_until - utcnow()).total_seconds())))
    await answer(scope, receive, send)


def _in_use(scope: Scope, retry_after: int) -> Response:
    return _refusal(
        scope,
        409,
        f"a request with this {HEADER} is still running; retry when it has answered",
        headers={"Retry-After": str(retry_after)},
        code="idempotency_key_in_use",
    )


def _refusal(
    scope: Scope,
    status: int,
    message: str,
    *,
    code: str,
    field: str | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """The middleware's own answer in the route's error shape: problem details, or OpenAI's on the
    OpenAI-compatible routes (where a request that cannot be taken is 400, not 422)."""
    if scope.get("path") not in openai_proxy.PATHS:
        return problem(status, message, headers=headers, code=code, field=field)
    return openai_proxy.error_response(status, message, code=code, param=field, headers=headers)


def _header(scope: Scope, name: bytes) -> str | None:
    for n, v in scope.get("headers", []):
        if n.lower() == name:
            return str(v.decode("latin-1"))
    return None


async def _buffered(receive: Receive) -> tuple[bytes, Receive]:
    """The whole body, and a ``receive`` that gives it again to the app."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    sent = False

    async def again() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return body, again


def _fingerprint(scope: Scope, body: bytes) -> str:
    """What makes two requests the same: method, path, query and body."""
    digest = hashlib.sha256()
    for part in (scope["method"], scope["path"], scope.get("query_string", b"").decode("latin-1")):
        digest.update(part.encode("utf-8") + b"\0")
    digest.update(body)
    return digest.hexdigest()
