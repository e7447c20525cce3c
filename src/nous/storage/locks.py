"""Named exclusive sections across every process using one store.

A read-decide-write step (search before store: "is this a duplicate?" then the insert) is only
correct if no other writer decides between its read and its write. Writers of the same key run
one at a time: in-process through an asyncio lock per slot, across processes through the
backend's lock (a byte-range lock on a file beside the SQLite database, a PostgreSQL advisory
lock). Keys hash into a fixed number of slots; two keys sharing a slot only wait for each other.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import threading
from typing import ClassVar

SLOTS = 1 << 16


def slot_of(key: str) -> int:
    """A stable slot for ``key`` (the same in every process)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") % SLOTS


class SlotLocks:
    """One asyncio lock per slot, created on first use."""

    def __init__(self) -> None:
        self._locks: dict[int, asyncio.Lock] = {}

    def get(self, slot: int) -> asyncio.Lock:
        return self._locks.setdefault(slot, asyncio.Lock())


class FileSlots:
    """Cross-process slot locks on one lock file: a byte-range lock per slot, plus a thread lock
    per slot, because byte-range locks belong to the process (two stores on one file in one
    process, or two event loops, would otherwise both "hold" the slot). The file stays open for
    the life of the process: closing any descriptor of it would drop every lock the process
    holds on it."""

    _registry: ClassVar[dict[str, FileSlots]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self._threads: dict[int, threading.Lock] = {}
        self._guard = threading.Lock()

    @classmethod
    def for_path(cls, path: str) -> FileSlots:
        real = os.path.realpath(path)
        with cls._registry_lock:
            found = cls._registry.get(real)
            if found is None:
                found = cls._registry[real] = cls(real)
            return found

    def _thread_lock(self, slot: int) -> threading.Lock:
        with self._guard:
            return self._threads.setdefault(slot, threading.Lock())

    def acquire(self, slot: int) -> None:
        """Block until this thread holds the slot in this process and across processes."""
        lock = self._thread_lock(slot)
        lock.acquire()
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_EX, 1, slot)
        except BaseException:
            lock.release()
            raise

    def release(self, slot: int) -> None:
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, slot)
        finally:
            self._thread_lock(slot).release()


async def hold(slots: FileSlots, slot: int) -> None:
    """Acquire ``slot`` without blocking the event loop. If the caller is cancelled while the
    worker thread still waits, the slot is released as soon as that thread gets it."""
    waiting = asyncio.ensure_future(asyncio.to_thread(slots.acquire, slot))
    try:
        await asyncio.shield(waiting)
    except asyncio.CancelledError:
        waiting.add_done_callback(
            lambda f: slots.release(slot) if not f.cancelled() and f.exception() is None else None
        )
        raise
