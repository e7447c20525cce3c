"""The outbox worker: claims due events with a lease, runs their handlers, and commits each
handler's effect together with the event's 'done' mark; failures retry with exponential backoff
and end as dead letters after ``max_attempts``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import uuid4

from nous._time import utcnow
from nous.errors import LeaseLostError, NousError
from nous.events.context import Handler, PipelineContext
from nous.events.handlers import HANDLERS
from nous.models.events import Event, EventKind
from nous.storage import WriteOp
from nous.storage.base import CompleteEvent, FailEvent

log = logging.getLogger(__name__)


@dataclass(slots=True)
class WorkerReport:
    """What one pass (or a drain) did."""

    done: int = 0
    retried: int = 0
    dead: int = 0
    lost: int = 0  # leases that ran out before the handler finished (another worker redoes them)
    errors: list[str] = field(default_factory=list)

    @property
    def handled(self) -> int:
        return self.done + self.retried + self.dead + self.lost

    def add(self, other: WorkerReport) -> None:
        self.done += other.done
        self.retried += other.retried
        self.dead += other.dead
        self.lost += other.lost
        self.errors.extend(other.errors)


class EventWorker:
    """Runs outbox events for one agent."""

    def __init__(
        self,
        context: PipelineContext,
        *,
        handlers: Mapping[EventKind, Sequence[Handler]] | None = None,
        worker_id: str | None = None,
        lease: timedelta = timedelta(seconds=60),
        max_attempts: int = 5,
        retry_base: timedelta = timedelta(seconds=2),
        batch: int = 10,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.context = context
        self.repo = context.repo
        self.handlers = HANDLERS if handlers is None else handlers
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid4().hex[:8]}"
        self.lease = lease
        self.max_attempts = max_attempts
        self.retry_base = retry_base
        self.batch = batch
        self.clock = clock  # when events are due, done and retried (a test passes its own)

    async def run_once(
        self, now: datetime | None = None, *, stop: asyncio.Event | None = None
    ) -> WorkerReport:
        """Claim one batch of due events and handle each; once ``stop`` is set, none after the
        one in hand (a stopping process exits promptly; the rest are claimed again when their
        lease runs out, as after a crash)."""
        now = now or self.clock()
        events = await self.repo.store.claim_events(
            self.repo.agent_id, self.worker_id, limit=self.batch, lease_until=now + self.lease, now=now
        )
        report = WorkerReport()
        for event in events:
            if stop is not None and stop.is_set():
                break
            report.add(await self.handle(event))
        return report

    async def drain(self, *, max_events: int | None = None) -> WorkerReport:
        """Handle due events until none is left (retries scheduled later are left for later)."""
        total = WorkerReport()
        while max_events is None or total.handled < max_events:
            report = await self.run_once()
            total.add(report)
            if report.handled == 0:
                break
        return total

    async def run(
        self,
        stop: asyncio.Event,
        *,
        poll_seconds: float = 1.0,
        tick: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """Handle events until ``stop`` is set, waiting ``poll_seconds`` when the queue is empty;
        ``tick`` runs before each claim (periodic upkeep such as ending idle sessions)."""
        while not stop.is_set():
            try:
                if tick is not None:
                    await tick()
                report = await self.run_once(stop=stop)
            except NousError as exc:  # the store is unreachable for now: try again later
                log.warning("event worker: %s", exc)
                report = WorkerReport()
            if report.handled == 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=poll_seconds)

    async def handle(self, event: Event) -> WorkerReport:
        """Run one claimed event's handlers and commit their effect with its 'done' mark."""
        report = WorkerReport()
        if event.attempts > self.max_attempts:  # its earlier workers all stopped mid-handler
            reason = f"gave up after {event.attempts - 1} attempts whose worker stopped before finishing"
            await self._fail(event, reason, dead=True)
            report.dead += 1
            return report
        try:
            ops: list[WriteOp] = []
            for handler in self.handlers.get(event.kind, ()):
                ops.extend(await handler(event, self.context))
            await self.repo.store.apply([*ops, CompleteEvent(event.id, self.worker_id, self.clock())])
            report.done += 1
        except LeaseLostError:
            report.lost += 1
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            dead = event.attempts >= self.max_attempts
            if await self._fail(event, reason, dead=dead):
                if dead:
                    report.dead += 1
                else:
                    report.retried += 1
                report.errors.append(f"{event.kind.value} {event.id}: {reason}")
            else:
                report.lost += 1
        return report

    async def _fail(self, event: Event, reason: str, *, dead: bool) -> bool:
        retry_at = None
        if not dead:
            delay = self.retry_base.total_seconds() * 2 ** (event.attempts - 1)
            retry_at = self.clock() + timedelta(seconds=delay * random.uniform(0.8, 1.2))
        (changed,) = await self.repo.store.apply([FailEvent(event.id, self.worker_id, reason, retry_at)])
        if dead and changed:
            log.warning("event %s (%s) is dead: %s", event.id, event.kind.value, reason)
        return changed
