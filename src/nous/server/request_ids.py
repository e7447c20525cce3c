"""Request ids, and answers that name no internals.

Every response of ``nous serve`` carries ``X-Request-Id``; a problem-details body carries the same
id as ``request_id``. When the store, a provider or the server itself fails, the client is told
what kind of thing failed and the id; the server log keeps the full message (a file path, a
database's user, host and port, a lock's name) under that id. A client with a key learns nothing
of the machine it runs on.
"""

import logging
import secrets
from contextvars import ContextVar
from typing import Any

from nous.errors import EmbeddingError, LLMError, LLMOutputError, NousError, StorageError

HEADER = "X-Request-Id"
log = logging.getLogger("nous.server")

_CURRENT: ContextVar[str | None] = ContextVar("nous_request_id", default=None)

# What a client is told when a request fails on the server's side, by cause.
_FAILED: list[tuple[type[NousError], str]] = [
    (StorageError, "the store failed; nothing was written"),
    (EmbeddingError, "the embedding provider failed"),
    (LLMOutputError, "the language model answered with something unusable"),
    (LLMError, "the language model failed"),
]


def current() -> str | None:
    """The id of the request being answered (None outside a request)."""
    return _CURRENT.get()


def public_message(exc: BaseException) -> str:
    """What a client may read of a server-side failure: its kind and the request id; the full
    message goes to the server log under that id."""
    rid = current() or "-"
    log.error("request %s failed: %s: %s", rid, type(exc).__name__, exc)
    said = next(
        (text for cls, text in _FAILED if isinstance(exc, cls)),
        f"unexpected {type(exc).__name__}; the request was not completed",
    )
    return f"{said} (request id {rid}; the server log has the details)"


def client_message(exc: NousError) -> str:
    """An engine error's message as a client may read it: a client's own mistake (4xx) as
    written, a server-side failure (5xx) without internals (``public_message``)."""
    return str(exc) if exc.http_status < 500 else public_message(exc)


class RequestIds:
    """ASGI middleware: a fresh id for each request, in ``X-Request-Id`` on its response (and
    ``scope["state"]["request_id"]``). A client's own ``X-Request-Id`` is not taken: it would let
    a client write into the server log."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = secrets.token_hex(8)
        _CURRENT.set(rid)  # not reset: an error answered outside this middleware still reads it
        scope.setdefault("state", {})["request_id"] = rid
        header = (HEADER.lower().encode(), rid.encode())

        async def stamped(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != header[0]]
                message = {**message, "headers": [*headers, header]}
            await send(message)

        await self.app(scope, receive, stamped)
