"""The SQLite vector index kept on disk (``<db>.vindex``): opened instead of rebuilt, with the same
answers as a rebuild; rows written after it was saved are found; a stale, foreign or damaged file
is rebuilt, never used."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from nous import Nous, Settings
from nous.embeddings import Embedded
from nous.embeddings.base import EmbeddingProvider
from nous.models import Fact, MemoryKind, Procedure, Provenance
from nous.storage import MemoryQuery
from nous.storage.sqlite import vector_index
from nous.storage.sqlite.index_file import TOKEN_KEY
from nous.storage.sqlite.store import SQLiteStore

AGENT = "test-agent"
N = 400


@pytest.fixture(autouse=True)
def small_pca(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reduced-space (PCA) pass on a small store, so its arrays go through the file too."""
    monkeypatch.setattr(vector_index, "APPROX_MIN_ROWS", 200)
    monkeypatch.setattr(vector_index, "PCA_SAMPLE", 200)


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(384).astype(np.float32)
    return np.asarray(v / np.linalg.norm(v), dtype=np.float32)


async def add(nous: Nous, count: int, seed: int, prefix: str, agent: str = AGENT) -> list[str]:
    """``count`` memories (every fifth a procedure, every seventh inactive, every fourth with two
    chunk vectors) with random vectors; their ids."""
    rng = np.random.default_rng(seed)
    memories = [
        Procedure(agent_id=agent, name=f"{prefix} {i}", content=f"{prefix} step {i}", provenance=Provenance())
        if i % 5 == 0
        else Fact(agent_id=agent, content=f"{prefix} fact {i}", provenance=Provenance(), active=i % 7 != 3)
        for i in range(count)
    ]
    embedded = [Embedded(unit(rng), [unit(rng), unit(rng)] if i % 4 == 0 else []) for i in range(count)]
    await nous.repo.create_many(memories, actor="test", embedded=embedded)
    return [m.id for m in memories]


QUERIES = [
    MemoryQuery(agent_id=AGENT),
    MemoryQuery(agent_id=AGENT, include_inactive=True),
    MemoryQuery(agent_id=AGENT, kinds=(MemoryKind.PROCEDURE,)),
]


async def answers(nous: Nous, seed: int = 99) -> list[list[tuple[str, float]]]:
    """The top 10 of a few query vectors under a few filters, with and without chunks."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(4):
        vector = unit(rng)
        for query in QUERIES:
            for chunks in (True, False):
                hits = await nous.store.vector_search(query, vector, 10, chunks=chunks)
                out.append([(h.id, round(h.score, 5)) for h in hits])
    return out


def store_of(nous: Nous) -> SQLiteStore:
    assert isinstance(nous.store, SQLiteStore)
    return nous.store


@pytest.fixture
def run(tmp_path: Path) -> Settings:
    return Settings(
        home=tmp_path / "home",
        database_url=f"sqlite:///{tmp_path / 'n.db'}",
        agent_id=AGENT,
        events_worker="off",
    )


async def rebuilt_answers(run: Settings, provider: EmbeddingProvider) -> list[list[tuple[str, float]]]:
    """The answers of an index rebuilt from the rows (the file moved aside, then put back)."""
    db = Path(run.resolved_database_url().removeprefix("sqlite:///"))
    file = Path(f"{db}.vindex")
    aside = file.with_suffix(".aside")
    shutil.move(file, aside)
    try:
        async with Nous(run, embedding_provider=provider) as nous:
            assert not store_of(nous).index_restored
            return await answers(nous)
    finally:
        shutil.move(aside, file)


async def test_the_file_round_trip_gives_the_rebuilds_answers(
    run: Settings, provider: EmbeddingProvider
) -> None:
    async with Nous(run, embedding_provider=provider) as nous:
        await add(nous, N, seed=1, prefix="first")
        built = await answers(nous)
        assert not store_of(nous).index_restored
        assert await store_of(nous).save_index()
        assert not await store_of(nous).save_index()  # nothing new since
    async with Nous(run, embedding_provider=provider) as nous:
        assert await answers(nous) == built
        assert store_of(nous).index_restored
    assert await rebuilt_answers(run, provider) == built


async def test_rows_written_after_the_save_are_found(run: Settings, provider: EmbeddingProvider) -> None:
    async with Nous(run, embedding_provider=provider) as nous:
        first = await add(nous, N, seed=1, prefix="first")
        await answers(nous)
        assert await store_of(nous).save_index()
        # After the save: new rows, one memory purged and one soft-forgotten; closed unsaved.
        later = await add(nous, 50, seed=2, prefix="later")
        await nous.forget(first[1], hard=True)
        await nous.forget(first[2])
    async with Nous(run, embedding_provider=provider) as nous:
        got = await answers(nous)
        assert store_of(nous).index_restored
        vecs = await nous.store.vectors(AGENT, later)
        assert set(vecs) == set(later)
        every = MemoryQuery(agent_id=AGENT, include_inactive=True)
        for mid in later:  # each later row is its own vector's nearest
            assert (await nous.store.vector_search(every, vecs[mid], 1))[0].id == mid
        found = {mid for answer in got for mid, _ in answer}
        assert first[1] not in found
        own = (await nous.store.vectors(AGENT, [first[2]]))[first[2]]
        assert (await nous.store.vector_search(every, own, 1))[0].id == first[2]
        assert first[2] not in {h.id for h in await nous.store.vector_search(QUERIES[0], own, 10)}
    assert await rebuilt_answers(run, provider) == got


def db_path(run: Settings) -> Path:
    return Path(run.resolved_database_url().removeprefix("sqlite:///"))


def flip_byte_at(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage", ["array byte", "header byte", "truncated", "token", "other store", "empty"]
)
async def test_a_stale_or_damaged_file_is_rebuilt_with_correct_answers(
    run: Settings, provider: EmbeddingProvider, tmp_path: Path, damage: str
) -> None:
    async with Nous(run, embedding_provider=provider) as nous:
        await add(nous, N, seed=1, prefix="first")
        built = await answers(nous)
        assert await store_of(nous).save_index()
    file = Path(f"{db_path(run)}.vindex")
    size = file.stat().st_size
    if damage == "array byte":
        flip_byte_at(file, size - 1000)  # inside the last arrays
    elif damage == "header byte":
        flip_byte_at(file, 40)
    elif damage == "truncated":
        file.write_bytes(file.read_bytes()[: size // 2])
    elif damage == "token":  # the store records another save's token (a restored backup)
        with sqlite3.connect(db_path(run)) as conn:
            conn.execute("UPDATE meta SET value = 'another' WHERE key = ?", (TOKEN_KEY,))
    elif damage == "other store":  # the file of another store with the same model
        other = run.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'other.db'}"})
        async with Nous(other, embedding_provider=provider) as nous:
            await add(nous, N, seed=5, prefix="other")
            await answers(nous)
            assert await store_of(nous).save_index()
        shutil.copy(tmp_path / "other.db.vindex", file)
    else:
        file.write_bytes(b"")
    async with Nous(run, embedding_provider=provider) as nous:
        assert await answers(nous) == built
        assert not store_of(nous).index_restored
        assert await store_of(nous).save_index()  # replaced by a sound one
    async with Nous(run, embedding_provider=provider) as nous:
        assert await answers(nous) == built
        assert store_of(nous).index_restored


async def test_a_file_that_cannot_be_written_leaves_the_store_working(
    run: Settings, provider: EmbeddingProvider, caplog: pytest.LogCaptureFixture
) -> None:
    Path(f"{db_path(run)}.vindex.lock").mkdir(parents=True)  # the save's lock cannot be opened
    async with Nous(run, embedding_provider=provider) as nous:
        await add(nous, N, seed=1, prefix="first")
        built = await answers(nous)
        assert not await store_of(nous).save_index()
        assert "vector index not saved" in caplog.text
        assert await answers(nous) == built
    assert not Path(f"{db_path(run)}.vindex").exists()


async def test_an_agent_with_a_small_share_of_the_rows_is_searched_among_its_own(
    run: Settings, provider: EmbeddingProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a store mostly of another agent's rows, the reduced pass scores only the asking agent's
    rows, and the answers are the ones scoring every row gives."""
    other = run.model_copy(update={"agent_id": "other-agent"})
    async with Nous(other, embedding_provider=provider) as nous:
        await add(nous, 1_200, seed=4, prefix="other", agent="other-agent")
    async with Nous(run, embedding_provider=provider) as nous:
        await add(nous, 250, seed=3, prefix="own")
        index = store_of(nous)._index
        assert index is not None
        everything = index._reduced_scores
        monkeypatch.setattr(vector_index, "OWN_ROWS_SHARE", 10**9)  # every row scored
        full = await answers(nous)
        monkeypatch.setattr(vector_index, "OWN_ROWS_SHARE", 4)

        def not_every_row(vector: np.ndarray, n: int) -> np.ndarray:
            raise AssertionError("every row was scored for an agent holding a fifth of them")

        monkeypatch.setattr(index, "_reduced_scores", not_every_row)
        own = await answers(nous)
        monkeypatch.setattr(index, "_reduced_scores", everything)
    assert index._basis is not None  # the reduced pass ran
    assert own == full
    assert all(hits for hits in own[:2])
