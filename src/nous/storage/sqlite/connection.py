"""SQLite connections: one writer thread, a pool of reader threads.

As in datasette, every write goes through a single thread that owns the only
writing connection, so writers never contend for the lock; reads run
concurrently on per-thread connections (WAL mode lets them see committed data
while a write is in progress).
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, with a busy timeout."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA temp_store = MEMORY")
    return conn


class WriterThread:
    """Runs callables against the single writing connection, one at a time."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._queue: queue.Queue[tuple[Callable[[sqlite3.Connection], Any], Callable[..., None]] | None]
        self._queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="nous-sqlite-writer", daemon=True)
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            raise self._startup_error

    def _run(self) -> None:
        try:
            conn = connect(self._path)
        except BaseException as exc:
            self._startup_error = exc
            self._ready.set()
            return
        self._ready.set()
        while True:
            item = self._queue.get()
            if item is None:
                break
            fn, reply = item
            try:
                reply(fn(conn), None)
            except BaseException as exc:
                reply(None, exc)
        conn.close()

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` on the writer thread and await its result."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def reply(result: Any, exc: BaseException | None) -> None:
            def settle() -> None:
                if future.cancelled():
                    return
                if exc is not None:
                    future.set_exception(exc)
                else:
                    future.set_result(result)

            loop.call_soon_threadsafe(settle)

        self._queue.put((fn, reply))
        return await future

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)


class ReaderPool:
    """Thread pool whose threads each hold their own read connection."""

    def __init__(self, path: Path, workers: int) -> None:
        self._path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nous-sqlite-read")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self._path)
            conn.execute("PRAGMA query_only = ON")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` on a reader thread and await its result."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(self._conn()))

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
