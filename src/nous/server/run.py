"""Run the API on a bound socket: in this process, or in N worker processes sharing it.

Workers are forked from a fork server that imported the server's modules once (not from the
parent, which may already run threads; spawned where there is no fork server), and each opens
the store itself, so N processes serve requests on N cores. This is correct because everything
a request reads is in the store: SQLite (WAL, one writer at a time across processes, the vector index
catching up on other processes' writes by revision) and PostgreSQL both serve several processes,
exclusive sections lock across processes, and the event queue is leased per event.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from multiprocessing.connection import wait
from types import FrameType

from nous.config import Settings

SHUTDOWN_GRACE_S = 3


def serve_here(sock: socket.socket, settings: Settings, *, auth: bool, access_log: bool) -> None:
    """Serve the API on ``sock`` in this process until SIGTERM or SIGINT."""
    import uvicorn

    from nous.server import create_app
    from nous.server.guards import guarded_protocol

    app = create_app(settings, auth=auth)
    config = uvicorn.Config(
        app,
        log_level="info" if access_log else "warning",
        access_log=access_log,
        # In-flight requests get a few seconds after SIGTERM/SIGINT, then the process exits: a
        # stalled client must not keep a stopped server alive for the request timeout.
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        http=guarded_protocol(settings.request_timeout_s),  # slow clients are cut off
    )
    logging.getLogger("uvicorn.error").addFilter(_quiet_cancel)
    if not access_log:
        # The MCP session manager's start/stop lines are noise next to the banner, and so is a
        # line per call to the language model's API (httpx logs each request at INFO).
        logging.getLogger("mcp").setLevel(logging.WARNING)
        logging.getLogger("httpx").setLevel(logging.WARNING)
    uvicorn.Server(config).run(sockets=[sock])


def spread_connections() -> bool:
    """Whether each worker can listen on a socket of its own on the one port (Linux
    SO_REUSEPORT), so that the kernel spreads new connections evenly across the workers.

    On one shared listening socket, whichever worker wakes first accepts every connection waiting
    (asyncio accepts in a loop): clients opening keep-alive connections together could all land
    on one worker, which ran at one core while the other idled (`nous bench load`)."""
    return sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")


def _own_socket(bound: socket.socket) -> socket.socket:
    """A new socket on the address ``bound`` holds, in its SO_REUSEPORT group."""
    sock = socket.socket(bound.family, bound.type, bound.proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(bound.getsockname())
    return sock


def serve_workers(
    sock: socket.socket, settings: Settings, *, workers: int, auth: bool, access_log: bool
) -> int:
    """Serve on ``sock``'s port from ``workers`` processes until SIGTERM or SIGINT, or until one of
    them exits (the others are then stopped: a half-dead server is not left running). Returns the
    exit status: 0 after a signal, 1 if a worker stopped by itself.

    Where ``spread_connections()``, ``sock`` must have been bound with SO_REUSEPORT: each worker
    listens on a socket of its own on that port (``sock`` itself never listens, so no connection
    waits on it); elsewhere the workers share ``sock``."""
    context = _worker_context()
    spread = spread_connections()
    processes = [
        context.Process(
            target=_worker,
            args=(_own_socket(sock) if spread else sock, settings),
            kwargs={"auth": auth, "access_log": access_log},
            name=f"nous-serve-{n}",
        )
        for n in range(workers)
    ]
    signalled = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal signalled
        signalled = True
        _terminate(processes)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for process in processes:
            process.start()
        wait([p.sentinel for p in processes])  # until the first one ends
        _terminate(processes)
        for process in processes:
            process.join(SHUTDOWN_GRACE_S + 10)
            if process.is_alive():
                process.kill()
                process.join()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if not signalled:
        print("nous serve: a worker process stopped; the others were stopped too", file=sys.stderr)
    return 0 if signalled else 1


# What every worker imports before it can serve: loaded once by the fork server, not once per worker.
PRELOAD = ["nous.server.run", "nous.server.app", "uvicorn"]


def _worker_context() -> multiprocessing.context.ForkServerContext | multiprocessing.context.SpawnContext:
    """Where workers start: a fork server (a fresh process that imports the server's modules
    once, then forks each worker from that clean, single-threaded state) where the platform has
    one; else spawned, each importing everything itself. Forking this process instead is unsafe:
    it may already run threads."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _worker(sock: socket.socket, settings: Settings, *, auth: bool, access_log: bool) -> None:
    """A worker process: in a process group of its own, so that a Ctrl-C in the terminal reaches
    only the parent, which stops each worker with one SIGTERM (a second signal would make uvicorn
    drop the requests in hand instead of finishing them)."""
    os.setpgrp()
    parent = multiprocessing.parent_process()
    if parent is not None:  # the parent killed outright: stop too, rather than serve orphaned
        threading.Thread(target=_stop_when_gone, args=(parent.sentinel,), daemon=True).start()
    serve_here(sock, settings, auth=auth, access_log=access_log)


def _stop_when_gone(sentinel: int) -> None:
    wait([sentinel])
    os.kill(os.getpid(), signal.SIGTERM)


def _terminate(processes: Sequence[multiprocessing.process.BaseProcess]) -> None:
    for process in processes:
        if process.is_alive():
            process.terminate()  # SIGTERM: uvicorn finishes requests in hand, within the grace


def _quiet_cancel(record: logging.LogRecord) -> bool:
    """Drop the traceback of a request cancelled because the shutdown grace ran out: it is the
    intended end of a stalled request, and uvicorn already logs one line saying so."""
    exc = record.exc_info[0] if record.exc_info else None
    return not (exc is not None and issubclass(exc, asyncio.CancelledError))
