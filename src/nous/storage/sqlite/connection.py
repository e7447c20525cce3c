"""SQLite connections: one writer thread, a pool of reader threads.

As in datasette, every write goes through a single thread that owns the only
writing connection, so writers never contend for the lock; reads run
concurrently on per-thread connections (WAL mode lets them see committed data
while a write is in progress).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from nous.errors import StorageError
from nous.storage.base import unencodable

T = TypeVar("T")


def storage_error(exc: sqlite3.Error, path: Path) -> StorageError:
    """A driver error as a typed error that says what happened and what to do."""
    text = str(exc).lower()
    code = getattr(exc, "sqlite_errorcode", None)
    if "locked" in text or "busy" in text or code in (5, 6):
        message = f"store {path} is locked by another process; try again, or stop the other writer"
    elif "full" in text or code == 13:
        message = f"disk full: cannot write to store {path}; free some space and retry"
    elif "readonly" in text or "read-only" in text or code == 8:
        message = f"store {path} is read-only; check the file's and its folder's permissions"
    elif "disk i/o" in text or code == 10:
        message = f"disk I/O error on store {path}: {exc}"
    elif "unable to open" in text or code == 14:
        message = f"cannot open store {path}: {exc}"
    elif "malformed" in text or "not a database" in text or code in (11, 26):
        message = f"store {path} is damaged or not a Nous database: {exc}"
    else:
        message = f"SQLite error on store {path}: {exc}"
    return StorageError(message)


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back after a failed statement, never hiding the original error: a failed COMMIT on a
    full disk may already have ended the transaction, and its ROLLBACK then raises too."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")


def connect(path: Path, busy_timeout_s: float = 30.0) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, waiting up to
    ``busy_timeout_s`` for a lock held by another process."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_s)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
    conn.execute("PRAGMA temp_store = MEMORY")
    return conn


class WriterThread:
    """Runs callables against the single writing connection, one at a time."""

    def __init__(self, path: Path, *, busy_timeout_s: float = 30.0) -> None:
        self._path = path
        self._busy_timeout_s = busy_timeout_s
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
            conn = connect(self._path, self._busy_timeout_s)
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
            except sqlite3.Error as exc:
                reply(None, storage_error(exc, self._path))
            except UnicodeEncodeError as exc:  # binding a parameter: the caller's text
                reply(None, unencodable(exc))
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

    def __init__(self, path: Path, workers: int, *, busy_timeout_s: float = 30.0) -> None:
        self._path = path
        self._busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nous-sqlite-read")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self._path, self._busy_timeout_s)
            conn.execute("PRAGMA query_only = ON")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` on a reader thread and await its result."""
        loop = asyncio.get_running_loop()

        def call() -> T:
            try:
                return fn(self._conn())
            except sqlite3.Error as exc:
                raise storage_error(exc, self._path) from exc
            except UnicodeEncodeError as exc:  # binding a parameter: the caller's text
                raise unencodable(exc) from None

        return await loop.run_in_executor(self._executor, call)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
