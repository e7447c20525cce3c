"""Waiting for something another thread or process does, without assuming how fast it is: poll
until it holds, up to a bound far beyond any machine's pace (a bound that, when reached, means the
thing will not happen, not that the machine was slow)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

BOUND_S = 120.0


def eventually(holds: Callable[[], bool], *, within: float = BOUND_S, every: float = 0.05) -> bool:
    """Whether ``holds()`` became true within ``within`` seconds (polled every ``every``)."""
    deadline = time.monotonic() + within
    while not holds():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True


async def eventually_async(
    holds: Callable[[], Awaitable[bool]], *, within: float = BOUND_S, every: float = 0.05
) -> bool:
    """``eventually`` for a check that is a coroutine."""
    deadline = time.monotonic() + within
    while not await holds():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(every)
    return True
