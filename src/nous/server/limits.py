"""Limits on what a client can make ``nous serve`` hold: the body cap, and bounded metric labels.

The body cap counts the bytes the app actually receives, whatever the framing: a declared
``Content-Length`` above the cap is refused before a byte is read, and a body sent without one
(``Transfer-Encoding: chunked``) is refused as soon as the bytes received pass the cap, so at most
the cap plus one chunk is ever buffered. The key is checked before the body is read (see
``create_app``), so a client without one is refused having sent nothing the server kept.
"""

from typing import Any

from nous.server.problems import problem

# Large enough for any body the schema allows (a 100,000-character text of escaped characters),
# small enough that no client can make the server buffer much.
MAX_BODY_BYTES = 4_000_000

# The methods a metric is labelled with; any other method name a client sends is counted as
# "other", so made-up methods cannot create new series without bound.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_label(method: str) -> str:
    """The metric label of an HTTP method: itself if standard, else ``other``."""
    return method if method in KNOWN_METHODS else "other"


class BodyCap:
    """ASGI middleware: 413 problem details for a body over ``limit`` bytes, counted as received.

    The 413 goes out at once; the app is then told the client left, and whatever it would have
    answered (or raised, reading a body cut short) is dropped.
    """

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(scope, receive, send)
            return
        received = 0
        refused = started = False

        async def capped_receive() -> dict[str, Any]:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = dict(await receive())
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    refused = True
                    if not started:
                        await self._refuse(scope, receive, send)
                    return {"type": "http.disconnect"}
            return message

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, capped_receive, tracked_send)
        except Exception:
            if not refused:  # an error of the app's own, not of the body cut short
                raise

    async def _refuse(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        refusal = problem(
            413, f"the limit is {self.limit} bytes", headers={"connection": "close"}, code="too_large"
        )
        await refusal(scope, receive, send)
