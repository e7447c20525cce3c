"""Retrying a compare-and-swap write: read, compute, write only if unchanged; on StaleWriteError
back off a little (jittered, so racing writers spread out) and try again from a fresh read."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
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
