"""MCP over streamable HTTP at ``/mcp``, built on the first request that reaches it.

The MCP SDK is the largest import of the server (its protocol models for every version): a server
that nobody reaches over MCP never loads it, and one that is reached loads it once, on that first
request, instead of before its socket accepts.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context
    from starlette.types import ASGIApp, Receive, Scope, Send

    from nous.api import Nous
    from nous.server.scope import Caller

Resolver = Callable[["Context"], Awaitable[tuple["Nous", "Caller"]]]


class LazyMCP:
    """An ASGI app that builds the MCP server (stateless streamable HTTP, each request resolved
    to its agent by ``resolve``) when first called between ``open`` and ``close`` (the app's
    lifespan), runs its session manager in a task of its own until ``close``, and passes every
    request to it."""

    def __init__(self, resolve: Resolver) -> None:
        self._resolve = resolve
        self._app: ASGIApp | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = True

    def open(self) -> None:
        """Accept requests (in the running event loop); the server is built on the first."""
        self._app, self._task, self._closed = None, None, False
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app or await self._start()
        await app(scope, receive, send)

    async def _start(self) -> ASGIApp:
        async with self._lock:
            if self._app is not None:
                return self._app
            if self._closed:
                raise RuntimeError("the server is stopping")
            # Imported in a thread: requests to the other routes go on meanwhile.
            module = await asyncio.to_thread(_import_mcp)
            server = module.create_mcp_server(resolve=self._resolve)
            app = server.streamable_http_app(streamable_http_path="/", stateless_http=True)
            running = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._run(server, running))
            await running  # the session manager accepts requests once running
            self._app = app
            return app

    async def _run(self, server: Any, running: asyncio.Future[None]) -> None:
        """Run the session manager (entered and left in this one task, as anyio requires)."""
        try:
            async with server.session_manager.run():
                running.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not running.done():
                running.set_exception(exc)
            raise

    async def close(self) -> None:
        """Stop the session manager, if it was started."""
        self._closed = True
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._task
        self._app = self._task = None


def _import_mcp() -> Any:
    import nous.server.mcp

    return nous.server.mcp
