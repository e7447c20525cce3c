"""Driver faults become typed errors that say what happened: a store locked by another process,
a read-only store; bookkeeping never turns a successful read into a failure."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nous import Nous, Settings, StorageError
from nous.embeddings.base import EmbeddingProvider
from nous.storage.sqlite.connection import storage_error

HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(30)
"""


def test_a_store_locked_by_another_process_is_a_clear_error_and_reads_still_work(
    tmp_path: Path, provider: EmbeddingProvider
) -> None:
    db = tmp_path / "nous.db"
    settings = Settings(
        home=tmp_path, database_url=f"sqlite:///{db}", events_worker="off", lock_timeout_s=0.3
    )

    async def prepare() -> None:
        async with Nous(settings, embedding_provider=provider) as nous:
            await nous.learn("The staging cluster runs in eu-west-1")

    asyncio.run(prepare())
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"

        async def under_lock() -> None:
            async with Nous(settings, embedding_provider=provider) as nous:
                started = time.monotonic()
                with pytest.raises(StorageError, match="locked by another process") as caught:
                    await nous.learn("Backups are kept for 35 days")
                assert time.monotonic() - started < 10
                assert not isinstance(caught.value, sqlite3.Error) and "\n" not in str(caught.value)
                hits = await nous.recall("where does staging run?", limit=3)  # reads are not blocked
                assert hits and "eu-west-1" in hits[0].content
            # closing flushed the recall's review bookkeeping, which could not be written: no error

        asyncio.run(under_lock())
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_driver_errors_are_named_for_what_happened(tmp_path: Path) -> None:
    """Real SQLite errors (a write to a read-only connection, a file that is not a database) are
    translated into one-line errors that say what happened."""
    db = tmp_path / "plain.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    read_only = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    with pytest.raises(sqlite3.Error) as raw:
        read_only.execute("INSERT INTO t VALUES (1)")
    assert "read-only" in str(storage_error(raw.value, db))
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database file at all" * 100)
    with pytest.raises(sqlite3.Error) as raw:
        sqlite3.connect(junk).execute("SELECT * FROM sqlite_master")
    assert "damaged or not a Nous database" in str(storage_error(raw.value, junk))


async def test_opening_a_file_that_is_not_a_store_is_a_typed_error(
    tmp_path: Path, provider: EmbeddingProvider
) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database file at all" * 100)
    settings = Settings(home=tmp_path, database_url=f"sqlite:///{junk}", events_worker="off")
    with pytest.raises(StorageError, match=r"not a Nous database|cannot open"):
        async with Nous(settings, embedding_provider=provider):
            pass


async def test_a_postgres_server_that_never_answers_fails_within_the_connect_timeout(
    tmp_path: Path, provider: EmbeddingProvider
) -> None:
    """A real listener on loopback that accepts TCP connections and never says a word."""
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    settings = Settings(
        home=tmp_path,
        database_url=f"postgresql://nobody@127.0.0.1:{port}/none",
        events_worker="off",
        connect_timeout_s=1.0,
    )
    started = time.monotonic()
    try:
        with pytest.raises(StorageError, match=r"did not answer|cannot prepare"):
            async with Nous(settings, embedding_provider=provider):
                pass
    finally:
        server.close()
        for writer in accepted:
            writer.close()
    assert time.monotonic() - started < 10 and accepted


@pytest.mark.postgres
async def test_a_lost_postgres_connection_is_a_typed_error_and_the_store_recovers(
    tmp_path: Path, provider: EmbeddingProvider, pg_schema: str
) -> None:
    from datetime import UTC, datetime

    import psycopg

    from tests.conftest import PG_URL, pg_url

    settings = Settings(home=tmp_path, database_url=pg_url(pg_schema), events_worker="off")
    async with Nous(settings, embedding_provider=provider) as nous:
        await nous.learn("The staging cluster runs in eu-west-1")
        opened = datetime.now(UTC)
        async with await psycopg.AsyncConnection.connect(PG_URL, autocommit=True) as admin:
            await admin.execute(  # the server drops every connection this store holds
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND state = 'idle' AND backend_start < %s",
                (opened,),
            )
        errors = []
        for _ in range(6):  # the pool hands out dead connections until it has replaced them
            try:
                hits = await nous.recall("where does staging run?", limit=3)
                break
            except StorageError as exc:
                errors.append(str(exc))
        else:
            pytest.fail(f"the store did not recover: {errors}")
        assert errors and all("PostgreSQL" in e and "\n" not in e.strip() for e in errors)
        assert hits and "eu-west-1" in hits[0].content


async def test_a_full_disk_fails_the_write_cleanly_and_the_store_recovers(
    tmp_path: Path, provider: EmbeddingProvider
) -> None:
    """SQLite's page-count limit stands in for a full disk: the write fails with a clear error,
    nothing of it is stored, everything acknowledged before is intact, and once there is room
    again writes succeed."""
    settings = Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 'nous.db'}", events_worker="off")
    async with Nous(settings, embedding_provider=provider) as nous:
        kept = [(await nous.learn(f"Service {i} listens on port {8000 + i}")).memory.id for i in range(5)]
        writer = nous.store._w()  # type: ignore[attr-defined]  # fault injection on the writer
        (pages,) = await writer.run(lambda c: c.execute("PRAGMA page_count").fetchone())
        await writer.run(lambda c: c.execute(f"PRAGMA max_page_count = {pages}"))
        before = (await nous.stats()).history_rows
        with pytest.raises(StorageError, match="disk full") as caught:
            await nous.learn(
                "A long runbook that no longer fits: " + "restart the workers one zone at a time. " * 400
            )
        assert "\n" not in str(caught.value)
        assert (await nous.stats()).history_rows == before  # nothing of the failed write landed
        assert set(kept) <= set((await nous.store.get_many(nous.agent_id, kept)).keys())
        await writer.run(lambda c: c.execute("PRAGMA max_page_count = 1073741823"))  # room again
        after = await nous.learn("Backups are kept for 35 days in the eu-west bucket")
        assert after.memory.id in (await nous.store.get_many(nous.agent_id, [after.memory.id]))


async def test_a_read_only_store_refuses_writes_clearly_and_still_reads(
    tmp_path: Path, provider: EmbeddingProvider
) -> None:
    """The writer's connection made read-only (as a read-only file or mount would): writes fail
    with a one-line error naming it, reads go on."""
    settings = Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 'nous.db'}", events_worker="off")
    async with Nous(settings, embedding_provider=provider) as nous:
        fact = (await nous.learn("The staging cluster runs in eu-west-1")).memory
        writer = nous.store._w()  # type: ignore[attr-defined]  # fault injection on the writer
        await writer.run(lambda c: c.execute("PRAGMA query_only = ON"))
        with pytest.raises(StorageError, match="read-only"):
            await nous.learn("Backups are kept for 35 days")
        hits = await nous.recall("where does staging run?", limit=3)
        assert hits and hits[0].id == fact.id
        await writer.run(lambda c: c.execute("PRAGMA query_only = OFF"))


def _pg_ctl(action: str) -> None:
    version = sorted(p.name for p in Path("/etc/postgresql").iterdir())[-1]
    cmd = ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action]
    subprocess.run([*cmd, *(["-m", "fast"] if action == "stop" else [])], check=True, timeout=120)


def _can_restart_postgres() -> str | None:
    from tests.conftest import PG_URL

    if not Path("/etc/postgresql").is_dir() or not Path("/usr/bin/pg_ctlcluster").exists():
        return "no local PostgreSQL cluster to restart (pg_ctlcluster)"
    if "127.0.0.1" not in PG_URL and "localhost" not in PG_URL:
        return "the test PostgreSQL is not on this machine"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return "restarting PostgreSQL needs root"
    return None


@pytest.mark.postgres
async def test_postgres_restarted_mid_run_loses_no_acknowledged_write(
    tmp_path: Path, provider: EmbeddingProvider, pg_schema: str
) -> None:
    """PostgreSQL is stopped and started while a writer runs: writes during the outage fail with a
    typed error, the pool reconnects by itself, and every acknowledged write is there, whole."""
    from tests.conftest import pg_url

    reason = _can_restart_postgres()
    if reason:
        pytest.skip(reason)
    settings = Settings(
        home=tmp_path, database_url=pg_url(pg_schema), events_worker="off", connect_timeout_s=2
    )
    acknowledged: dict[str, str] = {}
    failures: list[str] = []
    async with Nous(settings, embedding_provider=provider) as nous:
        stop = asyncio.Event()

        async def writer() -> None:
            n = 0
            while not stop.is_set():
                n += 1
                text = f"Maintenance note {n}: checked rack {n * 7919 % 1000} and replaced fan {n}"
                try:
                    result = await nous.learn(text, category="event")
                    acknowledged[result.memory.id] = text
                except StorageError as exc:
                    failures.append(str(exc))
                    await asyncio.sleep(0.2)

        task = asyncio.create_task(writer())
        await asyncio.sleep(1.5)
        before_outage = len(acknowledged)
        await asyncio.to_thread(_pg_ctl, "stop")
        try:
            await asyncio.sleep(1.5)
        finally:
            await asyncio.to_thread(_pg_ctl, "start")
        deadline = time.monotonic() + 60
        after_restart = len(acknowledged)
        while len(acknowledged) < after_restart + 5 and time.monotonic() < deadline:
            await asyncio.sleep(0.2)  # the writer succeeds again without anyone reopening the store
        stop.set()
        await task
        assert before_outage > 0 and len(acknowledged) >= after_restart + 5, (
            before_outage,
            len(acknowledged),
        )
        assert failures and all("\n" not in f.strip() for f in failures)  # typed, one line each
        stored = await nous.store.get_many(nous.agent_id, list(acknowledged))
        assert set(stored) == set(acknowledged)
        assert all(stored[i].content == text for i, text in acknowledged.items())
        for memory_id in list(acknowledged)[:: max(1, len(acknowledged) // 20)]:
            assert await nous.history(memory_id)  # the write and its audit row went in together
