"""What the framework adapters talk to: an async ``Nous`` or ``AsyncClient``, and for blocking
callers the event loop thread of a ``SyncNous`` or ``Client``."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, assert_never

from nous.api import Nous, SyncNous
from nous.client import AsyncClient, Client

T = TypeVar("T")

# The adapters call the same methods on both: ``AsyncClient`` mirrors ``Nous`` (a test checks it).
Engine = Nous | AsyncClient
Memory = Engine | SyncNous | Client
Blocking = Callable[[Coroutine[Any, Any, Any]], Any]


def unwrap(memory: Memory) -> tuple[Engine, Blocking | None]:
    """The async engine behind ``memory``, and how to run one of its coroutines from blocking code
    (None for a bare async engine: it belongs to the caller's event loop, which blocking code
    must not re-enter)."""
    match memory:
        case SyncNous():
            # The blocking twins own an event loop thread; the async engine's connections live
            # there, so blocking calls must run on it.
            return memory.nous, memory._runner.run
        case Client():
            return memory.client, memory._runner.run
        case Nous() | AsyncClient():
            return memory, None
        case _:
            assert_never(memory)
