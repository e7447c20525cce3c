"""An event loop on a daemon thread, for the blocking twins of the async classes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Runner:
    """Runs coroutines to completion on an event loop of its own thread, so blocking callers
    (scripts, notebooks with a loop of their own) can use the async engine."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="nous-sync", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


async def collect(items: AsyncIterator[T]) -> list[T]:
    """Every item of an async iterator, as a list."""
    return [item async for item in items]
