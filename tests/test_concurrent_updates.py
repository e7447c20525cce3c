"""Read-decide-write under concurrency: two stores on the same database (as two processes would
have) update the same memories at once, and no update is lost."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter

import pytest

from nous import Nous, Settings
from nous.embeddings.base import EmbeddingProvider
from nous.errors import StaleWriteError
from nous.models import Fact, WriteStatus
from nous.storage import WriteOp


async def test_concurrent_censor_activations_are_all_counted(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with (
        Nous(settings, database_url=database_url, embedding_provider=provider) as a,
        Nous(settings, database_url=database_url, embedding_provider=provider) as b,
    ):
        censor = (
            await a.add_censor("rm -rf", action="warn", reason="destructive", escalation_threshold=1000)
        ).memory
        checks = [n.check_action("rm -rf ./build") for n in (a, b) for _ in range(8)]
        verdicts = await asyncio.gather(*checks)
        assert all(v.decision == "warn" for v in verdicts)
        stored = await a.get(censor.id)
        assert stored.activation_count == 16  # type: ignore[attr-defined]
        history = await a.history(censor.id)
        assert sum(1 for h in history if "activation" in (h.new_value or {})) == 16


async def test_concurrent_field_updates_from_two_stores_both_land(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with (
        Nous(settings, database_url=database_url, embedding_provider=provider) as a,
        Nous(settings, database_url=database_url, embedding_provider=provider) as b,
    ):
        fact = (await a.learn("The staging cluster runs in eu-west-1.")).memory
        await asyncio.gather(
            a.update(fact.id, tags=["infra"]),
            b.update(fact.id, category="technical"),
            a.update(fact.id, subject="staging cluster"),
        )
        stored = await b.get(fact.id)
        assert (
            stored.tags == ["infra"]
            and stored.category == "technical"
            and stored.subject == "staging cluster"
        )


async def test_concurrent_focus_items_from_two_stores_are_all_kept(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with (
        Nous(settings, database_url=database_url, embedding_provider=provider) as a,
        Nous(settings, database_url=database_url, embedding_provider=provider) as b,
    ):
        await asyncio.gather(
            *(n.heart.working_memory.focus("s", f"item {n is a} {i}") for n in (a, b) for i in range(6))
        )
        wm = await a.heart.working_memory.get("s")
        assert len(wm.items) == 12


async def test_concurrent_identical_learns_store_one_memory_and_fifteen_duplicates(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    """Search-before-store is one step: 16 writers (two engines, as two processes would be)
    cannot all decide "unique". One memory, fifteen duplicates, each counted as a confirmation."""
    async with (
        Nous(settings, database_url=database_url, embedding_provider=provider) as a,
        Nous(settings, database_url=database_url, embedding_provider=provider) as b,
    ):
        text = "The billing service publishes invoices to Kafka topic invoices.v2"
        results = await asyncio.gather(*(n.learn(text) for n in (a, b) for _ in range(8)))
        statuses = Counter(r.status for r in results)
        assert statuses == {WriteStatus.CREATED: 1, WriteStatus.DUPLICATE: 15}
        (fact,) = [f for f in await a.memories("fact") if isinstance(f, Fact)]
        assert fact.confirmation_count == 15


async def test_fifty_concurrent_confirms_are_all_counted(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with (
        Nous(settings, database_url=database_url, embedding_provider=provider) as a,
        Nous(settings, database_url=database_url, embedding_provider=provider) as b,
    ):
        fact = (await a.learn("Backups are kept for 35 days in the eu-west bucket")).memory
        await asyncio.gather(*(n.heart.facts.confirm(fact.id) for n in (a, b) for _ in range(25)))
        stored = await b.get(fact.id)
        assert isinstance(stored, Fact) and stored.confirmation_count == 50


async def test_concurrent_confirms_in_one_process_take_turns_instead_of_retrying(
    nous: Nous, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Updates of one memory in one process wait for each other, so none is computed from a read
    that another made stale: no write is refused and retried. (Racing instead, each of many
    confirmations could lose round after round and run out of attempts.)"""
    fact = (await nous.learn("Backups are kept for 35 days in the eu-west bucket")).memory
    refused = 0
    apply = nous.store.apply

    async def counting(ops: list[WriteOp]) -> list[bool]:
        nonlocal refused
        try:
            return await apply(ops)
        except StaleWriteError:
            refused += 1
            raise

    monkeypatch.setattr(nous.store, "apply", counting)
    await asyncio.gather(*(nous.heart.facts.confirm(fact.id) for _ in range(30)))
    stored = await nous.get(fact.id)
    assert isinstance(stored, Fact) and stored.confirmation_count == 30
    assert refused == 0


WRITER = """
import asyncio, sys
from nous import Nous, Settings
FACTS = [f"Service {{i}} listens on port {{8000 + i}} behind the internal gateway" for i in range(8)]
async def main():
    s = Settings(home={home!r}, database_url={url!r}, agent_id={agent!r}, events_worker="off")
    async with Nous(s) as n:
        for text in FACTS:
            await n.learn(text)
asyncio.run(main())
"""


async def test_four_processes_writing_the_same_facts_leave_each_once(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with Nous(settings, database_url=database_url, embedding_provider=provider):
        pass  # migrate once before the writers start
    script = WRITER.format(home=str(settings.home), url=database_url, agent=settings.agent_id)
    procs = [
        await asyncio.create_subprocess_exec(sys.executable, "-c", script, stderr=asyncio.subprocess.PIPE)
        for _ in range(4)
    ]
    for proc in procs:
        _, err = await asyncio.wait_for(proc.communicate(), timeout=180)
        assert proc.returncode == 0, err.decode()[-2000:]
    async with Nous(settings, database_url=database_url, embedding_provider=provider) as nous:
        facts = [f for f in await nous.memories("fact", limit=100) if isinstance(f, Fact)]
        assert len(facts) == 8
        assert sum(f.confirmation_count for f in facts) == 24  # 32 writes: 8 created, 24 confirmed
