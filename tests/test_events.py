"""The durable outbox on both backends: events written with their change, claimed with a lease,
effects committed with the 'done' mark (exactly once, even when a worker is killed), retries,
dead letters, and two workers sharing one queue."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nous import ConflictError, Event, EventKind, EventStatus, EventWorker, NotFoundError, Nous, Settings
from nous._time import utcnow
from nous.embeddings.base import EmbeddingProvider
from nous.events import Handler, PipelineContext
from nous.models import EdgeRelation, HistoryAction, HistoryEntry
from nous.storage import WriteOp
from nous.storage.base import AddHistory
from tests.waiting import eventually_async

EFFECT_ACTOR = "event-effect"


@pytest.fixture
def quiet(settings: Settings) -> Settings:
    """Settings without the in-process worker, so a test decides when events run."""
    return settings.model_copy(update={"events_worker": "off"})


@pytest.fixture
async def store_nous(database_url: str, quiet: Settings, provider: EmbeddingProvider) -> AsyncIterator[Nous]:
    async with Nous(quiet, database_url=database_url, embedding_provider=provider) as n:
        yield n


async def count_effect(event: Event, ctx: PipelineContext) -> list[WriteOp]:
    """A test handler whose effect is an append-only audit row: applied twice, it shows twice."""
    return [
        AddHistory(
            HistoryEntry(
                memory_id=event.subject_id or event.id,
                agent_id=ctx.repo.agent_id,
                action=HistoryAction.LINK,
                new_value={"event": event.id},
                actor=EFFECT_ACTOR,
            )
        )
    ]


async def effects(nous: Nous, memory_id: str) -> int:
    return sum(1 for h in await nous.history(memory_id) if h.actor == EFFECT_ACTOR)


async def test_changes_write_their_events_in_the_same_transaction(store_nous: Nous) -> None:
    nous = store_nous
    fact = await nous.learn("The staging database runs PostgreSQL 16 on port 5433")
    await nous.pre_turn("s1", "Should we move the billing service to Kafka?")
    decision = await nous.record_decision(
        "Move billing events to Kafka",
        confidence=0.7,
        session_id="s1",
        reasons=[{"type": "analysis", "text": "Replay"}],
    )
    await nous.post_turn("s1", "Moving billing to Kafka gives replay and ordering per account. " * 3)
    ends = await asyncio.gather(*(nous.end_session("s1") for _ in range(3)))
    events = await nous.events()
    kinds = Counter(e.kind for e in events)
    assert kinds[EventKind.SESSION_ENDED] == 1  # one end, however many callers tried
    assert kinds[EventKind.DECISION_RECORDED] == 1 and kinds[EventKind.EPISODE_CLOSED] == 1
    assert {e.subject_id for e in events if e.kind == EventKind.FACT_WRITTEN} >= {fact.memory.id}
    assert sum(e.ended_now for e in ends) == 1
    assert all(e.status == EventStatus.PENDING and e.attempts == 0 for e in events)
    assert (await nous.event_counts())[EventStatus.PENDING] == len(events)
    by_kind = {e.kind: e for e in events}
    assert by_kind[EventKind.DECISION_RECORDED].subject_id == decision.id
    assert by_kind[EventKind.SESSION_ENDED].subject_id == "s1"


async def test_worker_links_session_decisions_to_the_episode_once(store_nous: Nous) -> None:
    nous = store_nous
    await nous.pre_turn("s1", "Which queue should billing use, Kafka or RabbitMQ?")
    decision = await nous.record_decision("Use Kafka for billing events", confidence=0.8, session_id="s1")
    await nous.post_turn("s1", "Kafka keeps a replayable log per partition, which billing audits need. " * 2)
    ended = await nous.end_session("s1")
    assert ended.episode is not None
    report = await nous.process_events()
    assert report.done == len(await nous.events()) and report.dead == 0
    edges = [
        e for e in await nous.store.edges(nous.agent_id, [decision.id]) if e.relation == EdgeRelation.PART_OF
    ]
    assert [(e.source_id, e.target_id) for e in edges] == [(decision.id, ended.episode.id)]
    assert all(e.status == EventStatus.DONE and e.done_at is not None for e in await nous.events())
    assert (await nous.process_events()).handled == 0  # nothing left to do


async def test_failures_retry_with_backoff_then_dead_letter_and_can_be_revived(store_nous: Nous) -> None:
    nous = store_nous
    fact = await nous.learn("The deploy window is Tuesday 14:00 UTC")
    calls = 0

    async def flaky(event: Event, ctx: PipelineContext) -> list[WriteOp]:
        nonlocal calls
        calls += 1
        raise RuntimeError("upstream answered 500")

    now = [utcnow()]  # the worker's clock, moved by the test: no wait depends on the machine
    worker = EventWorker(
        nous.pipeline_context(),
        handlers={EventKind.FACT_WRITTEN: [flaky]},
        max_attempts=3,
        retry_base=timedelta(seconds=20),
        clock=lambda: now[0],
    )
    first = await worker.run_once()
    assert first.retried == 1 and first.errors
    (event,) = await nous.events(status="pending")
    assert event.attempts == 1 and event.last_error == "RuntimeError: upstream answered 500"
    assert event.available_at >= now[0] + timedelta(seconds=16)  # backoff: 20 s, give or take 20 %
    assert (await worker.run_once()).handled == 0  # not due yet
    now[0] += timedelta(seconds=15)
    assert (await worker.run_once()).handled == 0  # still not due
    for _ in range(10):
        now[0] += timedelta(minutes=10)
        await worker.run_once()
        if await nous.events(status="dead"):
            break
    (dead,) = await nous.events(status="dead")
    assert dead.attempts == 3 and calls == 3 and "upstream answered 500" in (dead.last_error or "")
    assert await nous.memories("fact")  # the fact itself is untouched and readable
    revived = await nous.retry_event(dead.id)
    assert revived.status == EventStatus.PENDING and revived.attempts == 0
    ok = EventWorker(nous.pipeline_context(), handlers={EventKind.FACT_WRITTEN: [count_effect]})
    assert (await ok.drain()).done == 1
    assert await effects(nous, fact.memory.id) == 1
    with pytest.raises(ConflictError, match="done"):
        await nous.retry_event(dead.id)
    with pytest.raises(NotFoundError):
        await nous.retry_event("no-such-event")


async def test_an_expired_lease_passes_the_event_on_and_the_late_worker_commits_nothing(
    store_nous: Nous,
) -> None:
    nous = store_nous
    fact = await nous.learn("Backups are kept for 35 days in the eu-west bucket")
    handlers = {EventKind.FACT_WRITTEN: [count_effect]}
    slow = EventWorker(
        nous.pipeline_context(), handlers=handlers, worker_id="slow", lease=timedelta(seconds=1)
    )
    fast = EventWorker(nous.pipeline_context(), handlers=handlers, worker_id="fast")
    now = utcnow()
    (claimed,) = await nous.store.claim_events(
        nous.agent_id, "slow", limit=10, lease_until=now + timedelta(seconds=1), now=now
    )
    assert (await fast.run_once(now)).handled == 0  # leased: nobody else gets it
    assert (await fast.run_once(now + timedelta(seconds=2))).done == 1  # the lease ran out
    late = await slow.handle(claimed)
    assert late.lost == 1 and late.done == 0
    assert await effects(nous, fact.memory.id) == 1


async def test_two_workers_share_one_queue_and_never_run_an_event_twice(
    database_url: str, quiet: Settings, provider: EmbeddingProvider
) -> None:
    async with (
        Nous(quiet, database_url=database_url, embedding_provider=provider) as a,
        Nous(quiet, database_url=database_url, embedding_provider=provider) as b,
    ):
        facts = [f"Service {i} runs on port {8000 + i} behind the internal gateway" for i in range(30)]
        for text in facts:
            await a.learn(text)
        seen: list[tuple[str, str]] = []

        def recording(name: str) -> Handler:
            async def handle(event: Event, ctx: PipelineContext) -> list[WriteOp]:
                seen.append((name, event.id))
                await asyncio.sleep(0.002)
                return await count_effect(event, ctx)

            return handle

        wa = EventWorker(a.pipeline_context(), handlers={EventKind.FACT_WRITTEN: [recording("a")]}, batch=3)
        wb = EventWorker(b.pipeline_context(), handlers={EventKind.FACT_WRITTEN: [recording("b")]}, batch=3)
        ra, rb = await asyncio.gather(wa.drain(), wb.drain())
        events = await a.events(limit=1000)
        assert ra.done + rb.done == len(events) == len(facts)
        assert ra.done > 0 and rb.done > 0
        assert len({eid for _, eid in seen}) == len(seen)  # no event was handled twice
        for fact in await a.memories("fact"):
            assert await effects(a, fact.id) == 1


WORKER_SCRIPT = """
import asyncio, sys
from nous import EventKind, EventWorker, Nous, Settings
sys.path.insert(0, {tests!r})
from test_events import count_effect

async def slow_effect(event, ctx):
    ops = await count_effect(event, ctx)
    print("handling", event.subject_id, flush=True)
    await asyncio.sleep(0.4)
    return ops

async def main():
    s = Settings(home={home!r}, database_url={url!r}, agent_id={agent!r}, events_worker="off")
    async with Nous(s) as n:
        w = EventWorker(n.pipeline_context(), handlers={{EventKind.FACT_WRITTEN: [slow_effect]}}, lease={lease}, batch=1)
        while True:
            report = await w.run_once()
            if report.done:
                print("done", flush=True)
asyncio.run(main())
"""


async def test_a_worker_killed_mid_handler_leaves_each_effect_applied_exactly_once(
    database_url: str, quiet: Settings, provider: EmbeddingProvider, tmp_path: Path
) -> None:
    async with Nous(quiet, database_url=database_url, embedding_provider=provider) as nous:
        for i in range(4):
            await nous.learn(f"Runbook {i}: restart the ingest workers one zone at a time")
        script = WORKER_SCRIPT.format(
            tests=str(Path(__file__).parent),
            home=str(quiet.home),
            url=database_url,
            agent=quiet.agent_id,
            lease="__import__('datetime').timedelta(seconds=1)",
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        lines: list[str] = []
        try:
            while sum(line == "done" for line in lines) < 2 or not lines[-1].startswith("handling"):
                line = proc.stdout.readline().strip()
                assert line or proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                lines.append(line)
            os.kill(proc.pid, signal.SIGKILL)  # mid-handler: its third event's effect is not committed
        finally:
            proc.kill()
            proc.wait(timeout=30)
        counts = await nous.event_counts()
        assert counts[EventStatus.DONE] == 2 and counts[EventStatus.RUNNING] == 1
        later = utcnow() + timedelta(seconds=2)  # the killed worker's one-second lease has run out
        worker = EventWorker(
            nous.pipeline_context(), handlers={EventKind.FACT_WRITTEN: [count_effect]}, clock=lambda: later
        )
        report = await worker.drain()
        assert report.done == 2 and report.dead == 0
        assert (await nous.event_counts()) == {EventStatus.DONE: 4}
        for fact in await nous.memories("fact"):
            assert await effects(nous, fact.id) == 1
        retried = [e for e in await nous.events() if e.attempts == 2]
        assert len(retried) == 1  # the one in hand when the worker died was run again


async def test_the_in_process_worker_runs_events_in_the_background(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    fast = settings.model_copy(update={"events_worker": "in-process", "event_poll_seconds": 0.05})
    async with Nous(fast, database_url=database_url, embedding_provider=provider) as nous:
        await nous.learn("The on-call rotation changes every Monday at 09:00")

        async def done() -> bool:
            return (await nous.event_counts()).get(EventStatus.DONE) == 1

        assert await eventually_async(done)
        assert await nous.event_counts() == {EventStatus.DONE: 1}


async def test_bad_event_input_is_a_typed_error(store_nous: Nous) -> None:
    from nous import InvalidInputError

    with pytest.raises(InvalidInputError):
        await store_nous.events(status="finished")
    with pytest.raises(InvalidInputError):
        await store_nous.retry_event("  ")


async def test_idle_sessions_are_ended_once_by_the_timeout(
    database_url: str, quiet: Settings, provider: EmbeddingProvider
) -> None:
    t0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    async with (
        Nous(quiet, database_url=database_url, embedding_provider=provider) as a,
        Nous(quiet, database_url=database_url, embedding_provider=provider) as b,
    ):
        await a.pre_turn("idle", "Help me plan the ski trip to Verbier in March", at=t0)
        await a.post_turn("idle", "Verbier in March has good snow; book passes a week ahead. " * 4, at=t0)
        await a.pre_turn("busy", "Which ski passes should we buy?", at=t0 + timedelta(minutes=20))
        now = t0 + timedelta(minutes=45)  # idle: 45 minutes; busy: 25 minutes
        ends_a, ends_b = await asyncio.gather(a.end_idle_sessions(now=now), b.end_idle_sessions(now=now))
        assert [e.session.session_id for e in ends_a + ends_b] == ["idle"]  # once, by one of them
        (ended,) = ends_a + ends_b
        assert ended.episode is not None and ended.episode.ended_at is not None
        assert ended.session.ended_at == ended.session.last_active_at  # ended when it went quiet
        assert not (await a.session("busy")).ended
        kinds = Counter(e.kind for e in await a.events())
        assert kinds[EventKind.SESSION_ENDED] == 1 and kinds[EventKind.EPISODE_CLOSED] == 1
        off = quiet.model_copy(update={"session_timeout_minutes": 0})
        async with Nous(off, database_url=database_url, embedding_provider=provider) as never:
            assert await never.end_idle_sessions(now=now + timedelta(days=30)) == []
