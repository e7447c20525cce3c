"""Cold start: how soon a restarted `nous serve` answers, and what the SQLite vector index file saves.

Two measures on one SQLite store of N memories (``run_fill``'s synthetic ones):

- the first vector search after opening the store, with the index rebuilt from the rows (its file
  removed) and opened from its file, with both answers compared;
- a real `nous serve --workers W` started on the store, then killed with SIGKILL and started again:
  for each start, the time until its socket accepts, until ``/health`` answers 200 and until a
  recall sent as soon as the socket accepts is answered, and the CPU its processes used until
  ready (on a busy machine the wall times stretch; the CPU barely does).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from nous.api import Nous
from nous.bench.load import _cpu_s, _free_port, _tree
from nous.bench.scale import run_fill
from nous.config import Settings
from nous.embeddings import EmbeddingProvider, create_provider
from nous.server.keys import create_key
from nous.storage.base import MemoryQuery
from nous.storage.sqlite.store import SQLiteStore

AGENT = "bench-cold"
QUERY = "how do I rotate the database credentials?"
POLL_S = 0.01


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(db)
    try:
        (n,) = conn.execute("SELECT count(*) FROM memories WHERE agent_id = ?", (AGENT,)).fetchone()
    except sqlite3.Error:
        return 0
    finally:
        conn.close()
    return int(n)


async def first_search(settings: Settings, provider: EmbeddingProvider, vector: np.ndarray) -> dict[str, Any]:
    """Open the store, time its first vector search; the ids found and where the index came from."""
    started = time.perf_counter()
    async with Nous(settings, agent_id=AGENT, embedding_provider=provider) as nous:
        opened = time.perf_counter()
        hits = await nous.store.vector_search(MemoryQuery(agent_id=AGENT), vector, 10)
        searched = time.perf_counter()
        store = nous.store
        from_file = isinstance(store, SQLiteStore) and store.index_restored
        save_started = time.perf_counter()
        if isinstance(store, SQLiteStore):
            await store.save_index()
        saved = time.perf_counter()
    return {
        "open_s": round(opened - started, 3),
        "first_search_s": round(searched - opened, 3),
        "save_s": round(saved - save_started, 3),
        "from_file": from_file,
        "ids": [h.id for h in hits],
    }


async def index_reopen(db: Path, settings: Settings, provider: EmbeddingProvider) -> dict[str, Any]:
    """The first search with the index rebuilt from the rows, then opened from the file it saved."""
    vector = np.asarray(provider.embed([QUERY])[0], dtype=np.float32)
    Path(f"{db}.vindex").unlink(missing_ok=True)
    rebuilt = await first_search(settings, provider, vector)
    opened = await first_search(settings, provider, vector)
    size = Path(f"{db}.vindex").stat().st_size if Path(f"{db}.vindex").exists() else 0
    return {
        "rebuilt": {k: v for k, v in rebuilt.items() if k != "ids"},
        "from_file": {k: v for k, v in opened.items() if k != "ids"},
        "same_results": rebuilt["ids"] == opened["ids"],
        "ratio_rebuild_to_file": round(rebuilt["first_search_s"] / max(opened["first_search_s"], 1e-6), 1),
        "file_mb": round(size / 2**20, 1),
    }


async def _accepts(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    return True


async def start_server(
    home: Path, db: Path, key: str, workers: int, deadline_s: float = 600.0
) -> tuple[subprocess.Popen[bytes], dict[str, float]]:
    """Start `nous serve` and time it: until its socket accepts, /health says ok, a recall answers."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    env |= {"NOUS_HOME": str(home), "NOUS_DATABASE_URL": f"sqlite:///{db}", "NOUS_EVENTS_WORKER": "off"}
    command = [sys.executable, "-m", "nous", "serve", "--host", "127.0.0.1", "--port", str(port)]
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*command, "--workers", str(workers)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    end = time.monotonic() + deadline_s

    def check() -> None:
        if proc.poll() is not None:
            raise RuntimeError(f"nous serve exited with {proc.returncode}")
        if time.monotonic() > end:
            raise RuntimeError("nous serve did not become ready")

    figures: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=base, timeout=deadline_s) as http:
        while True:  # the socket is bound by `nous serve` and accepts once a worker serves
            check()
            try:
                await http.get("/health")  # any answer: the socket accepts
                break
            except httpx.TransportError:
                await asyncio.sleep(POLL_S)
        figures["socket_s"] = time.perf_counter() - started

        async def recall() -> None:
            answer = await http.post(
                "/v1/recall", json={"query": QUERY, "limit": 10}, headers={"Authorization": f"Bearer {key}"}
            )
            answer.raise_for_status()
            figures["first_recall_s"] = time.perf_counter() - started

        recalling = asyncio.create_task(recall())
        while (await http.get("/health")).status_code != 200:
            check()
            await asyncio.sleep(POLL_S)
        figures["health_ok_s"] = time.perf_counter() - started
        figures["cpu_to_ready_s"] = _cpu_s(proc.pid) or 0.0  # the server's processes, whatever the load
        await recalling
    return proc, {k: round(v, 3) for k, v in figures.items()}


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the server and its workers at once (a crash: nothing is saved on the way out)."""
    for pid in _tree(proc.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait()


async def run_cold_start(
    memories: int,
    *,
    workers: int = 2,
    db: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fill a SQLite store to ``memories`` (reusing ``db`` if given), then measure both."""
    say = progress or (lambda _: None)
    with tempfile.TemporaryDirectory(prefix="nous-cold-") as tmp:
        path = db or Path(tmp) / "cold.db"
        settings = Settings(home=Path(tmp), database_url=f"sqlite:///{path}", events_worker="off")
        provider = create_provider(settings)
        have = _count(path)
        if have < memories:
            say(f"filling {path} with {memories - have} memories")
            await run_fill(memories - have, settings, agent_id=AGENT, provider=provider)
        async with Nous(settings, agent_id=AGENT, embedding_provider=provider) as nous:
            _, key = await create_key(nous.store, agent_id=AGENT, name="bench cold-start")
        say("first search after reopening: index rebuilt, then opened from its file")
        index = await index_reopen(path, settings, provider)
        say(f"starting nous serve --workers {workers}")
        proc, first = await start_server(Path(tmp), path, key, workers)
        _kill(proc)
        say("killed it with SIGKILL; starting it again")
        proc, again = await start_server(Path(tmp), path, key, workers)
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _kill(proc)
    return {
        "load_average": round(os.getloadavg()[0], 1),  # other work on the machine slows every figure
        "backend": "sqlite",
        "memories": max(memories, have),
        "workers": workers,
        "index": index,
        "serve": {"first_start": first, "after_sigkill": again},
        "cores": os.cpu_count(),
    }
