"""Storage: migrations, reopening, embedding-space checks, concurrency, cross-process visibility."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nous import Nous, Settings, StorageError
from nous.embeddings.base import EmbeddingProvider
from nous.storage import create_store
from nous.storage.migrations import Migration, load_migrations


async def test_reopen_is_idempotent_and_keeps_data(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with Nous(settings, database_url=database_url, embedding_provider=provider) as n:
        fact = await n.learn("Persisted across restarts")
        backend = "postgres" if database_url.startswith("postgres") else "sqlite"
        latest = max(m.version for m in load_migrations(f"nous.storage.{backend}"))
        assert (await n.stats()).schema_version == latest >= 2
    for _ in range(2):
        async with Nous(settings, database_url=database_url, embedding_provider=provider) as n:
            assert (await n.get(fact.id)).content == "Persisted across restarts"
            assert [h.id for h in await n.recall("persisted restarts")] == [fact.id]


async def test_other_embedding_space_is_refused(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with Nous(settings, database_url=database_url, embedding_provider=provider) as n:
        await n.learn("Anything")
    store = create_store(database_url)
    with pytest.raises(StorageError, match="built with embedding model"):
        await store.open(embedding_model="other/model", embedding_dimensions=384)
    await store.close()


async def test_concurrent_writes_all_land(nous: Nous) -> None:
    results = await asyncio.gather(*(nous.learn(f"Concurrent fact number {i}") for i in range(40)))
    assert len({r.id for r in results}) == 40
    stats = await nous.stats()
    assert stats.active_by_kind["fact"] == 40
    assert stats.history_rows == 40 and stats.missing_embeddings == 0


async def test_second_instance_sees_writes_of_the_first(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with (
        Nous(settings, database_url=database_url, embedding_provider=provider) as reader,
        Nous(settings, database_url=database_url, embedding_provider=provider) as writer,
    ):
        assert await reader.recall("saffron risotto") == []
        fact = await writer.learn("The chef's signature dish is saffron risotto")
        assert [h.id for h in await reader.recall("saffron risotto")] == [fact.id]
        await writer.forget(fact.id)
        assert await reader.recall("saffron risotto") == []


def test_unsupported_urls_are_refused() -> None:
    with pytest.raises(StorageError, match="unsupported database URL"):
        create_store("mysql://localhost/db")
    with pytest.raises(StorageError, match="needs a path"):
        create_store("sqlite://")


def test_sqlite_migration_applied_by_another_process_meanwhile_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes open a new file at once: one reads the applied versions, then the other
    applies every migration before the first takes the write lock. The first must skip them."""
    from nous.storage.sqlite import store as sqlite_store
    from nous.storage.sqlite.connection import connect

    path = tmp_path / "nous.db"
    real = sqlite_store.load_migrations

    def after_the_other_process(package: str) -> list[Migration]:
        monkeypatch.setattr(sqlite_store, "load_migrations", real)  # the other process: unpatched
        other = connect(path)
        try:
            sqlite_store.SQLiteStore._migrate(other)  # the other process wins the race
        finally:
            other.close()
        return list(real(package))

    first = connect(path)
    try:
        monkeypatch.setattr(sqlite_store, "load_migrations", after_the_other_process)
        sqlite_store.SQLiteStore._migrate(first)  # read 'nothing applied', then found it all done
        versions = [v for (v,) in first.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    finally:
        first.close()
    assert versions == [m.version for m in real("nous.storage.sqlite")]
