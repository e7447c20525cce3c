"""Shared fixtures: the real embedding model, and a fresh store on each backend.

Every test that takes ``nous`` runs twice: on an SQLite file and on PostgreSQL
with pgvector (a fresh schema per test). PostgreSQL comes from
NOUS_TEST_POSTGRES_URL (default: the local server). Under CI=true or
NOUS_TEST_REQUIRE_POSTGRES=1 an unreachable PostgreSQL fails the run instead of skipping.

Creating a schema's tables and dropping them takes PostgreSQL about as long as many tests take:
a thread migrates the next schemas while a test runs and drops the used ones (``FreshSchemas``).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from nous import Nous, Settings
from nous.embeddings.base import EmbeddingProvider
from nous.embeddings.local import LocalEmbeddingProvider
from nous.storage.postgres.store import PostgresStore
from tests.openai_server import FakeOpenAI

# A terminal size in the environment (an exported COLUMNS; pytest-xdist's workers start with
# COLUMNS=80 and LINES=24) would fix the CLI's width for the whole run: rich reads COLUMNS once,
# when a console is made (nous.cli.output's, when a test module imports the CLI, after this file).
# Without them the tests that set COLUMNS (the ``cli`` fixture, the width tests) get what they set.
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)

PG_URL = os.environ.get("NOUS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
_TRUE = ("1", "true", "yes")
MUST_HAVE_POSTGRES = (
    os.environ.get("CI", "").lower() in _TRUE
    or os.environ.get("NOUS_TEST_REQUIRE_POSTGRES", "").lower() in _TRUE
)


def _postgres_ready() -> str | None:
    try:
        with psycopg.connect(PG_URL, connect_timeout=3, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return None
    except Exception as exc:
        return str(exc).splitlines()[0]


_PG_PROBLEM = _postgres_ready()


def require_postgres() -> None:
    if _PG_PROBLEM is None:
        return
    message = f"PostgreSQL with pgvector unavailable at {PG_URL}: {_PG_PROBLEM}"
    if MUST_HAVE_POSTGRES:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def provider() -> EmbeddingProvider:
    """The real local model, loaded once for the whole run."""
    p = LocalEmbeddingProvider()
    p.warm_up()
    return p


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # No background event worker: a test's store changes only when the test says so (the tests
    # of the in-process worker turn it on).
    return Settings(home=tmp_path / "home", database_url=None, agent_id="test-agent", events_worker="off")


def drop_schema(schema: str) -> None:
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def pg_url(schema: str) -> str:
    return f"{PG_URL}{'&' if '?' in PG_URL else '?'}nous_schema={schema}"


def _new_schema_name() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


def _migrated_schema(dimensions: int) -> str:
    """A new schema with every migration applied by the store's own code, nothing else: no
    embedding model claimed, no rows. Opening a store on it finds only its migrations done."""

    async def migrate(schema: str) -> None:
        store = PostgresStore(pg_url(schema), schema=schema)
        async with await psycopg.AsyncConnection.connect(PG_URL, autocommit=True) as conn:
            await store._migrate(conn, dimensions)

    schema = _new_schema_name()
    asyncio.run(migrate(schema))
    return schema


class FreshSchemas:
    """Schemas for the tests, made and dropped on a thread of their own while tests run (the work
    is PostgreSQL's, so it overlaps the test's). Each schema is used by one test only."""

    AHEAD = 2  # migrated schemas kept ready

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pg-schemas")
        self._ready: deque[Future[str]] = deque()
        self._drops: list[tuple[str, Future[None]]] = []

    def migrated(self) -> str:
        """A schema no test has used, with the store's migrations applied for the local model."""
        while len(self._ready) < self.AHEAD + 1:
            self._ready.append(self._thread.submit(_migrated_schema, LocalEmbeddingProvider.dimensions))
        try:
            return self._ready.popleft().result()
        except psycopg.Error:  # the server restarted under it (tests/test_store_faults.py): again
            return _migrated_schema(LocalEmbeddingProvider.dimensions)

    def drop(self, schema: str) -> None:
        """Drop a used schema (on the thread; one that failed is dropped again at the end of the
        session, and a second failure is raised)."""
        self._drops = [(s, f) for s, f in self._drops if not f.done() or f.exception() is not None]
        self._drops.append((schema, self._thread.submit(drop_schema, schema)))

    def close(self) -> None:
        for ready in self._ready:
            if ready.exception() is None:
                self.drop(ready.result())
        self._thread.shutdown(wait=True)
        for schema, dropped in self._drops:
            if dropped.exception() is not None:
                drop_schema(schema)


@pytest.fixture(scope="session")
def fresh_schemas() -> Iterator[FreshSchemas]:
    schemas = FreshSchemas()
    yield schemas
    schemas.close()


@pytest.fixture
def pg_schema(fresh_schemas: FreshSchemas) -> Iterator[str]:
    """A fresh, uniquely named schema that does not exist yet, dropped afterwards."""
    require_postgres()
    schema = _new_schema_name()
    yield schema
    fresh_schemas.drop(schema)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL for an empty store on each backend (on PostgreSQL, a schema no other test used, with
    the migrations applied for the local model's 384 dimensions and no embedding model claimed)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'nous.db'}"
        return
    require_postgres()
    schemas: FreshSchemas = request.getfixturevalue("fresh_schemas")
    schema = schemas.migrated()
    yield pg_url(schema)
    schemas.drop(schema)


@pytest.fixture
async def nous(database_url: str, settings: Settings, provider: EmbeddingProvider) -> AsyncIterator[Nous]:
    """An open Nous on an empty store."""
    async with Nous(settings, database_url=database_url, embedding_provider=provider) as n:
        yield n


@pytest.fixture
def fake_openai(provider: EmbeddingProvider) -> Iterator[FakeOpenAI]:
    """A loopback OpenAI-compatible server that can be switched to failing."""
    server = FakeOpenAI(provider)
    yield server
    server.close()


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """An in-process CLI runner on a fresh NOUS_HOME, with no NOUS_ setting from the environment."""
    for key in [k for k in os.environ if k.startswith("NOUS_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("NOUS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "200")
    return CliRunner()
