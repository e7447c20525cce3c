"""Read-decide-write under concurrency: two stores on the same database (as two processes would
have) update the same memories at once, and no update is lost."""

from __future__ import annotations

import asyncio

from nous import Nous, Settings
from nous.embeddings.base import EmbeddingProvider


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
