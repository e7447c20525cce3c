"""Retrying a compare-and-swap write: read, compute, write only if unchanged; on StaleWriteError
back off a little (jittered, so racing writers spread out) and try again from a fresh read.

Writers in one process that would race for the same row take turns instead (``KeyedLocks``):
compare-and-swap then only arbitrates between processes. Without the turns, fifty concurrent
confirmations of one fact in one process each lose most rounds and can run out of attempts."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from nous.errors import StaleWriteError

T = TypeVar("T")
ATTEMPTS = 30
BACKOFF_S = 0.002  # the n-th retry waits up to n times this


async def with_retries(attempt: Callable[[], Awaitable[T]]) -> T:
    """``attempt()`` until it does not raise StaleWriteError (at most ATTEMPTS times)."""
    for n in range(ATTEMPTS):
        try:
            return await attempt()
        except StaleWriteError:
            if n == ATTEMPTS - 1:
                raise
            await asyncio.sleep(random.uniform(0, BACKOFF_S * (n + 1)))
    raise AssertionError("unreachable")


class KeyedLocks:
    """An asyncio lock per key (e.g. a memory id), kept only while a task holds or awaits it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # key -> (lock, holders and waiters)

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (None, 0))
        lock = lock or asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            _, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
