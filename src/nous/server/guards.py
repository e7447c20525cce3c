"""Slow-client guards for ``nous serve``: a client that trickles its request cannot hold a
connection or a handler forever.

uvicorn bounds the wait between requests on a kept-alive connection, but not the time a client
takes to send one: a client sending a header byte every few seconds (or none) keeps its socket
open indefinitely, and one that stops halfway through its body keeps a handler waiting. Two
guards, both bounded by ``NOUS_REQUEST_TIMEOUT_S``:

- ``GuardedH11Protocol`` closes a connection whose request headers are not complete in time;
- ``BodyTimeout`` answers 408 when the body does not arrive in time (it stops guarding once the
  body is complete, so streamed answers and disconnect detection are unaffected).
"""

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from nous.server import request_ids

PROBLEM = "application/problem+json"


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers."""

    header_timeout: float = 30.0

    def connection_made(self, transport: Any) -> None:
        self._header_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._awaiting_headers():
            self._arm()  # the deadline runs from the first byte of the request (or the connection)
        elif self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().connection_lost(exc)

    def _awaiting_headers(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._too_slow)

    def _too_slow(self) -> None:
        self._header_timer = None
        if self._awaiting_headers() and not self.transport.is_closing():
            self.transport.close()


def guarded_protocol(timeout: float) -> type[GuardedH11Protocol]:
    """The protocol class for uvicorn's ``http=`` with this header deadline."""
    return type("GuardedH11", (GuardedH11Protocol,), {"header_timeout": timeout})


class BodyTimeout:
    """ASGI middleware: 408 problem details when a request body stalls for ``timeout`` seconds.
    The 408 is sent at once; the handler then sees the client as gone, and whatever it would
    answer is dropped."""

    def __init__(self, app: Any, timeout: float) -> None:
        self.app, self.timeout = app, timeout

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body_done = answered = started = False

        async def guarded_receive() -> dict[str, Any]:
            nonlocal body_done, answered
            if answered:  # the 408 has gone out: the handler is told the client left
                return {"type": "http.disconnect"}
            if body_done:  # unguarded from here: disconnect detection may wait indefinitely
                return dict(await receive())
            try:
                message = dict(await asyncio.wait_for(receive(), self.timeout))
            except TimeoutError:
                if not started:
                    await self._timed_out(send)
                answered = True
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            if answered:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, guarded_receive, tracked_send)

    async def _timed_out(self, send: Any) -> None:
        body = {
            "type": "about:blank",
            "title": "Request Timeout",
            "code": "timeout",
            "status": 408,
            "detail": f"the request body did not arrive within {self.timeout:g} s",
        }
        if (rid := request_ids.current()) is not None:
            body["request_id"] = rid
        payload = json.dumps(body).encode()
        headers = [
            (b"content-type", PROBLEM.encode()),
            (b"content-length", str(len(payload)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 408, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
