"""Chunked embeddings for long memories, on both backends with the real embedding model.

all-MiniLM-L6-v2 reads 256 word pieces; with NOUS_EMBEDDING_CHUNK_CHARS set (it is off by
default), a long memory also gets a vector per chunk of its text, and vector search scores it by
its best vector.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nous import Nous, Settings
from nous.bench.synthetic import synthetic_memories, synthetic_queries
from nous.embeddings.base import EmbeddingProvider
from nous.embeddings.chunking import CHUNK_CHARS, MAX_CHUNKS, split_text
from nous.embeddings.local import LocalEmbeddingProvider
from nous.errors import EmbeddingError
from nous.models import Fact, Turn
from nous.storage import MemoryQuery
from nous.storage.base import PurgeMemory, PutMemory
from nous.storage.codec import content_hash
from nous.storage.sqlite import vector_index
from nous.storage.sqlite.store import SQLiteStore

LONG = "\n\n".join(
    [
        (
            "Planning notes for the spring team offsite. We booked the lodge near Lake Bled for three nights in "
            "late April. The agenda starts with a half-day retrospective on the last two quarters, followed by "
            "roadmap sessions in the afternoon. Everyone should bring a laptop, hiking boots and a rain jacket, "
            "because the weather in the Julian Alps changes quickly in spring. Travel is by train to Ljubljana "
            "and then a shared minibus; receipts go to Marta, who handles the budget. Dietary requirements must "
            "be sent to the lodge two weeks ahead, and the vegetarian menu needs to be confirmed separately."
        ),
        (
            "Kitchen renovation update. The contractor finished removing the old cabinets on Monday and found "
            "water damage behind the sink, so the subfloor has to be replaced before the new units go in. The "
            "quote for the quartz worktop came in higher than expected, so we are comparing it with a laminate "
            "option that looks similar. The electrician will move two sockets and add under-cabinet lighting. "
            "Painting is scheduled for the week after the worktop is fitted, and the new dishwasher arrives on "
            "the twelfth."
        ),
        (
            "Notes on packaging the Python library. We moved from setup.py to a pyproject.toml with setuptools as"
            " the build backend, and the version is now read from a single place. Wheels are built in CI for "
            "Linux, macOS and Windows, and the release job uploads them with a trusted publisher instead of an "
            "API token. The changelog is generated from pull-request labels. Type hints ship with the package "
            "through a py.typed marker, and the documentation is built with MkDocs and deployed on every tag."
        ),
        (
            "Garden journal. The tomato seedlings went into the greenhouse at the start of May; the San Marzano "
            "plants grew fastest, while the cherry tomatoes needed extra support. We mulched the beds with straw "
            "to keep the soil moist and fed the plants every ten days with a comfrey tea. Slugs ate half of the "
            "lettuce, so we set beer traps along the path. The courgettes produced more than we could eat, and "
            "the neighbours got a basket every week in July."
        ),
        (
            "Sourdough experiments. The starter is fed twice a day with equal weights of flour and water and kept"
            " at about twenty-four degrees. A loaf uses seventy-five percent hydration, a long autolyse and four "
            "sets of stretch and folds. Cold retarding the dough overnight in the fridge gives a more open crumb "
            "and a better ear. Baking in a preheated cast-iron pot for twenty minutes with the lid on and "
            "twenty-five with it off gives a dark, crackly crust."
        ),
        (
            "Notes from the distributed databases meetup. The first talk compared leader-based replication with "
            "leaderless quorums and showed how read repair hides stale replicas until a partition heals. The "
            "second speaker described moving a ledger service from a single primary to a sharded cluster, with "
            "the shard key chosen so that one customer never spans two shards. Most of the questions were about "
            "clock skew, and the answer was always the same: do not trust wall clocks for ordering, use logical "
            "timestamps or a consensus log."
        ),
        (
            "Household admin for the quarter. The car insurance renews in June and the broker suggested raising "
            "the excess to lower the premium. The boiler service is booked for the first week of October, and the"
            " chimney sweep comes the same week. Council tax moved to twelve monthly payments instead of ten. The"
            " passport for our daughter expires next spring, so the application has to go in before the summer "
            "holidays, together with new photos from the shop on the high street."
        ),
        (
            "Field station maintenance log. The backup diesel generator at the Ny-Alesund research hut must be "
            "test-started every second Thursday and run under load for thirty minutes; the fuel level and the oil"
            " pressure are written into the red logbook by the door. If it fails to start, the duty technician "
            "calls the logistics office in Longyearbyen before noon. The spare glow plugs and the fuel filter are"
            " kept in the blue crate under the workbench. Batteries for the weather mast are swapped in September"
            " before the polar night."
        ),
        (
            "Reading list for the autumn. A history of the Hanseatic League, a novel set in post-war Trieste, a "
            "book on the design of everyday things, and a collection of essays about walking. The book club meets"
            " on the first Tuesday of the month at the cafe on the corner, and the next host picks the title."
        ),
        (
            "Training plan for the half marathon. Three runs a week: an easy run on Tuesday, intervals on "
            "Thursday and a long run on Sunday that grows by a kilometre every week until it reaches eighteen. "
            "Strength work twice a week keeps the knees happy, and the new shoes need to be broken in before race"
            " day. The race starts at nine, so the long runs should start at nine as well to get used to eating "
            "breakfast early."
        ),
    ]
)
# The answer is in the eighth of ten chunks, ~740 word pieces in: past what the model reads.
DEEP = "Field station maintenance log."
QUERY = "How often does the backup generator at the research hut have to be test-started?"
DISTRACTORS = [
    "The research hut in Svalbard has solar panels on its roof and a small wind turbine.",
    "Our cabin generator is a five kilowatt petrol model that we rarely use.",
    "The technicians at the field station rotate every six weeks.",
    "The logistics office in Longyearbyen books the flights for visiting scientists.",
    "Diesel prices on the island went up again this winter.",
    "The weather mast at the station measures wind speed, temperature and humidity.",
]
SHORT = "The spare glow plugs are kept in the blue crate under the workbench."


@pytest.fixture(scope="module")
def provider() -> EmbeddingProvider:
    """The real local model with chunking on (the loaded model is shared with the default one)."""
    return LocalEmbeddingProvider(Settings(embedding_chunk_chars=CHUNK_CHARS))


class FlakyProvider(EmbeddingProvider):
    """The real model behind a switch that makes every call fail (an outage)."""

    def __init__(self, inner: EmbeddingProvider, *, max_input_chars: int | None = CHUNK_CHARS) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dimensions = inner.dimensions
        self.max_input_chars = max_input_chars
        self.failing = False

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.failing:
            raise EmbeddingError("provider unavailable")
        return self.inner.embed(texts)


async def _store_long(nous: Nous, content: str = LONG) -> Turn:
    turn = Turn(agent_id=nous.agent_id, session_id="chat", role="assistant", content=content)
    others = [Turn(agent_id=nous.agent_id, session_id=f"d{i}", content=d) for i, d in enumerate(DISTRACTORS)]
    await nous.add_many([turn, *others])
    return turn


async def _ranked(nous: Nous, query: str = QUERY, *, chunks: bool = True) -> list[str]:
    vector = await nous.embedder.embed_one(query)
    hits = await nous.store.vector_search(MemoryQuery(agent_id=nous.agent_id), vector, 10, chunks=chunks)
    assert len({h.id for h in hits}) == len(hits)  # each memory once
    return [h.id for h in hits]


async def _chunk_rows(nous: Nous, memory_id: str) -> int:
    """Rows in memory_chunks for a memory (counted in SQL: also finds rows a purge left behind)."""
    store = nous.store
    if isinstance(store, SQLiteStore):
        sql = "SELECT count(*) FROM memory_chunks WHERE memory_id = ?"
        return await store._r().run(lambda conn: conn.execute(sql, (memory_id,)).fetchone()[0])
    rows = await store._fetch("SELECT count(*) AS n FROM memory_chunks WHERE memory_id = %s", (memory_id,))  # type: ignore[attr-defined]
    return int(rows[0]["n"])


# -- the chunker ---------------------------------------------------------------------------------
def test_short_text_is_one_chunk() -> None:
    assert split_text(SHORT) == [SHORT]
    assert split_text("x" * CHUNK_CHARS) == ["x" * CHUNK_CHARS]


def test_chunks_cover_the_text_at_boundaries() -> None:
    chunks = split_text(LONG)
    assert 5 <= len(chunks) <= MAX_CHUNKS
    assert all(len(c) <= CHUNK_CHARS for c in chunks)
    for sentence in LONG.replace("\n\n", " ").split(". "):
        assert any(sentence.strip() in c for c in chunks), sentence  # no sentence is cut or lost
    assert any(c.startswith(DEEP) for c in chunks)  # paragraphs start chunks where they can


def test_chunking_is_capped_and_splits_unbroken_text() -> None:
    assert len(split_text(LONG * 10)) == MAX_CHUNKS
    unbroken = "a" * (3 * CHUNK_CHARS + 5)
    chunks = split_text(unbroken)
    assert "".join(chunks) == unbroken and all(len(c) <= CHUNK_CHARS for c in chunks)


# -- search --------------------------------------------------------------------------------------
async def test_passage_deep_in_a_long_memory_is_found(nous: Nous) -> None:
    turn = await _store_long(nous)
    assert (await _ranked(nous, chunks=False))[0] != turn.id  # its main vector alone loses
    assert (await _ranked(nous))[0] == turn.id
    hits = await nous.recall(QUERY, preset="dense-only", reinforce=False)
    assert hits[0].id == turn.id
    vector = await nous.embedder.embed_one(QUERY)
    best = max(float(v @ vector) for v in nous.embedder.provider.embed(split_text(LONG)))
    top = (await nous.store.vector_search(MemoryQuery(agent_id=nous.agent_id), vector, 1))[0]
    assert top.score == pytest.approx(best, abs=1e-4)  # the best chunk's cosine
    main = (await nous.store.vectors(nous.agent_id, [turn.id]))[turn.id]
    assert top.main is not None
    assert top.main == pytest.approx(float(main @ vector), abs=1e-4) and top.main < top.score - 0.2


async def test_chunking_is_off_by_default(database_url: str, settings: Settings) -> None:
    default = LocalEmbeddingProvider(Settings())
    assert default.max_input_chars is None
    async with Nous(settings, database_url=database_url, embedding_provider=default) as nous:
        turn = await _store_long(nous)
        assert await _chunk_rows(nous, turn.id) == 0
        assert (await nous.maintain()).embedded == 0  # maintain adds none either


async def test_short_memories_get_no_chunks(nous: Nous) -> None:
    calls = nous.embedder.texts_embedded
    fact = (await nous.learn(SHORT)).memory
    assert nous.embedder.texts_embedded == calls + 1  # one text, one vector
    assert await _chunk_rows(nous, fact.id) == 0
    vector = await nous.embedder.embed_one("Where are the glow plugs kept?")
    stored = (await nous.store.vectors(nous.agent_id, [fact.id]))[fact.id]
    hit = (await nous.store.vector_search(MemoryQuery(agent_id=nous.agent_id), vector, 1))[0]
    assert hit.id == fact.id and hit.score == pytest.approx(float(stored @ vector), abs=1e-5)
    assert hit.main == pytest.approx(hit.score)


async def test_long_memory_is_embedded_once_per_chunk(nous: Nous) -> None:
    before = nous.embedder.texts_embedded
    turn = await _store_long(nous)
    chunks = split_text(turn.embedding_text())
    assert nous.embedder.texts_embedded - before == len(chunks) + len(DISTRACTORS)  # nothing twice
    assert await _chunk_rows(nous, turn.id) == len(chunks) - 1  # the first chunk's is the main vector
    main = (await nous.store.vectors(nous.agent_id, [turn.id]))[turn.id]
    assert float(main @ nous.embedder.provider.embed(chunks[:1])[0]) == pytest.approx(1.0, abs=1e-5)


async def test_long_fact_through_the_write_path_keeps_its_chunks(nous: Nous) -> None:
    result = await nous.learn(LONG)
    assert await _chunk_rows(nous, result.memory.id) == len(split_text(LONG)) - 1
    assert (await _ranked(nous))[0] == result.memory.id


async def test_same_text_reuses_stored_chunks(nous: Nous) -> None:
    await _store_long(nous)
    nous.embedder._cache.clear()  # only the store can know the vectors now
    before = nous.embedder.texts_embedded
    again = Turn(agent_id=nous.agent_id, session_id="other", content=LONG)
    await nous.add_many([again])
    assert nous.embedder.texts_embedded == before
    assert await _chunk_rows(nous, again.id) == len(split_text(LONG)) - 1
    assert set((await _ranked(nous))[:2]) >= {again.id}


async def test_update_replaces_chunks(nous: Nous) -> None:
    turn = await _store_long(nous)
    shortened = LONG[: LONG.index(DEEP)]  # still long, without the passage
    await nous.repo.update(turn.id, {"content": shortened})
    assert await _chunk_rows(nous, turn.id) == len(split_text(shortened)) - 1
    ranked = await _ranked(nous)
    assert turn.id not in ranked[:1]
    await nous.repo.update(turn.id, {"content": LONG})
    assert (await _ranked(nous))[0] == turn.id
    await nous.repo.update(turn.id, {"content": SHORT})
    assert await _chunk_rows(nous, turn.id) == 0
    await nous.repo.update(turn.id, {"tags": ["kept"]})  # same text: nothing re-embedded
    assert await _chunk_rows(nous, turn.id) == 0


async def test_hard_forget_removes_chunks(nous: Nous) -> None:
    turn = await _store_long(nous)
    await nous.repo.forget(turn.id)  # soft: chunks stay, the memory is out of search
    assert await _chunk_rows(nous, turn.id) > 0 and turn.id not in await _ranked(nous)
    await nous.repo.forget(turn.id, hard=True)
    assert await _chunk_rows(nous, turn.id) == 0
    assert turn.id not in await _ranked(nous)
    assert await nous.store.chunks_by_hash([content_hash(turn)], nous.embedder.model_name) == {}


# -- outage and upgrade --------------------------------------------------------------------------
async def test_backfill_after_an_outage_adds_chunks(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    flaky = FlakyProvider(provider)
    async with Nous(settings, database_url=database_url, embedding_provider=flaky) as nous:
        flaky.failing = True
        turn = await _store_long(nous)
        assert (await nous.stats()).missing_embeddings == 1 + len(DISTRACTORS)
        assert await _chunk_rows(nous, turn.id) == 0
        flaky.failing = False
        report = await nous.maintain()
        assert report.embedded == 1 + len(DISTRACTORS)
        assert await _chunk_rows(nous, turn.id) == len(split_text(LONG)) - 1
        assert (await _ranked(nous))[0] == turn.id


async def test_maintain_chunks_long_memories_stored_without_chunks(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    whole = FlakyProvider(provider, max_input_chars=None)  # as before chunking existed
    async with Nous(settings, database_url=database_url, embedding_provider=whole) as nous:
        turn = await _store_long(nous)
        assert await _chunk_rows(nous, turn.id) == 0
        old_main = (await nous.store.vectors(nous.agent_id, [turn.id]))[turn.id]
    chunked = FlakyProvider(provider)
    async with Nous(settings, database_url=database_url, embedding_provider=chunked) as nous:
        assert (await nous.maintain()).embedded == 1
        assert await _chunk_rows(nous, turn.id) == len(split_text(LONG)) - 1
        kept = (await nous.store.vectors(nous.agent_id, [turn.id]))[turn.id]
        assert np.allclose(kept, old_main, atol=1e-6)  # the main vector is kept as it was
        assert (await _ranked(nous))[0] == turn.id
        assert (await nous.maintain()).embedded == 0


# -- the in-process index (SQLite) with the reduced first pass -------------------------------------
def _embedded(provider: EmbeddingProvider, texts: list[str]) -> np.ndarray:
    return np.asarray(provider.embed(texts), dtype=np.float32)


async def test_index_scores_each_memory_by_its_best_vector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: EmbeddingProvider
) -> None:
    monkeypatch.setattr(vector_index, "APPROX_MIN_ROWS", 200)  # exercise the PCA pass on a small store
    texts = list(dict.fromkeys(synthetic_memories(3000)))  # distinct texts: no tied scores
    dims = provider.dimensions
    store = SQLiteStore(tmp_path / "index.db", readers=1)
    await store.open(embedding_model="test", embedding_dimensions=dims)
    try:
        mains = _embedded(provider, texts[:600])
        extra = iter(_embedded(provider, texts[600:1200]))
        chunks = {i: [next(extra) for _ in range(1 + i % 4)] for i in range(0, 600, 3)}
        facts = [Fact(agent_id="a", content=f"memory {i}") for i in range(600)]
        await store.apply(
            [
                PutMemory(f, f"h{i}", embedding=mains[i], embedding_model="test", chunks=chunks.get(i))
                for i, f in enumerate(facts)
            ]
        )

        def expected(query: np.ndarray, k: int) -> list[str]:
            best = [
                max([float(mains[i] @ query)] + [float(c @ query) for c in chunks.get(i, [])])
                for i in range(600)
            ]
            return [facts[i].id for i in np.argsort(best)[::-1][:k]]

        scope = MemoryQuery(agent_id="a")
        for query in _embedded(provider, synthetic_queries(5)):
            assert [h.id for h in await store.vector_search(scope, query, 10)] == expected(query, 10)
        # an update replaces a memory's chunks; a purge drops them
        target = chunks[3][0]
        chunks[3] = [-target]
        await store.apply(
            [PutMemory(facts[3], "h3b", embedding=mains[3], embedding_model="test", chunks=chunks[3])]
        )
        assert facts[3].id not in [h.id for h in await store.vector_search(scope, target, 3)]
        chunks[6] = [target]
        await store.apply(
            [PutMemory(facts[6], "h6b", embedding=mains[6], embedding_model="test", chunks=chunks[6])]
        )
        assert (await store.vector_search(scope, target, 1))[0].id == facts[6].id
        assert [h.id for h in await store.vector_search(scope, target, 10)] == expected(target, 10)
        await store.apply([PurgeMemory(facts[6].id)])
        assert facts[6].id not in [h.id for h in await store.vector_search(scope, target, 10)]
    finally:
        await store.close()
