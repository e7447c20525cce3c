"""Coalesce concurrent embedding requests into one model call.

Requests that arrive while a model call runs wait, and the next call takes all of them (up to
``MAX_TEXTS`` texts): under load a query is embedded with the others that came with it, in one
pass of the model, instead of one at a time. Embedding 16 short queries together costs about
a quarter of embedding them one by one (a forward pass's per-layer Python overhead is paid once);
one request alone is not delayed, as nothing waits for a window to fill.

The model runs on one thread of its own, so a call never waits for a thread of the event loop's
default executor (which blocking waits elsewhere may hold), and numpy releases the GIL in its
matrix products: the event loop keeps serving while the model computes.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from nous.embeddings.base import EmbeddingProvider

# The most texts one coalesced call takes (a single larger request, such as an ingest, still
# goes whole, alone): enough for every request of a busy server's moment, small enough that a
# query does not wait behind a long batch.
MAX_TEXTS = 64


@dataclass(slots=True)
class _Request:
    texts: list[str]
    done: asyncio.Future[np.ndarray]


@dataclass(slots=True)
class EmbeddingBatcher:
    """Runs ``provider.embed`` for many awaiting callers, one call at a time, batched."""

    provider: EmbeddingProvider
    _queue: list[_Request] = field(default_factory=list)
    _draining: asyncio.Task[None] | None = None
    _executor: ThreadPoolExecutor | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    async def embed(self, texts: list[str]) -> np.ndarray:
        """The provider's vectors for ``texts``, as from ``provider.embed(texts)``."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (asyncio.run again): start afresh
            self._loop, self._queue, self._draining = loop, [], None
        request = _Request(texts, loop.create_future())
        self._queue.append(request)
        if self._draining is None or self._draining.done():
            self._draining = loop.create_task(self._drain())
        return await request.done

    async def _drain(self) -> None:
        while self._queue:
            batch = self._take()
            try:
                await self._run(batch)
            except asyncio.CancelledError:  # the loop is closing: nobody is left to answer
                for r in batch:
                    r.done.cancel()
                raise
            except Exception as exc:  # a provider answering the wrong shape
                for r in batch:
                    if not r.done.done():
                        r.done.set_exception(exc)

    def _take(self) -> list[_Request]:
        """The oldest requests whose texts fit in ``MAX_TEXTS`` (always at least one)."""
        batch: list[_Request] = []
        total = 0
        while self._queue and (not batch or total + len(self._queue[0].texts) <= MAX_TEXTS):
            request = self._queue.pop(0)
            total += len(request.texts)
            batch.append(request)
        return batch

    async def _run(self, batch: list[_Request]) -> None:
        batch = [r for r in batch if not r.done.done()]  # a caller that gave up is not served
        if not batch:
            return
        unique = list(dict.fromkeys(t for r in batch for t in r.texts))
        try:
            vectors = await self._call(unique)
        except Exception as exc:
            if len(batch) == 1:
                batch[0].done.set_exception(exc)
                return
            # One request's text may be what failed: each request alone, so only it fails.
            for r in batch:
                await self._run([r])
            return
        row = {t: i for i, t in enumerate(unique)}
        for r in batch:
            if not r.done.done():
                r.done.set_result(vectors[[row[t] for t in r.texts]])

    async def _call(self, texts: list[str]) -> np.ndarray:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nous-embed")
        loop = asyncio.get_running_loop()
        return np.asarray(await loop.run_in_executor(self._executor, self.provider.embed, texts))
