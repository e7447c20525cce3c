"""Recall with the real embedding model: dense and keyword signals, filters, scoping."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from nous import Nous, Settings
from nous.embeddings.base import EmbeddingProvider
from nous.models import MemoryKind
from nous.storage import MemoryQuery

CORPUS = [
    "Maya is vegetarian and avoids meat at team dinners.",
    "The staging cluster runs Kubernetes 1.29 on three nodes.",
    "Error code ZX-4471 means the payment gateway timed out.",
    "Jonas enjoys rock climbing on weekends in the Alps.",
    "The quarterly budget review happens in the first week of April.",
    "Our API rate limit is 500 requests per minute per key.",
]


async def _seed(nous: Nous) -> dict[str, str]:
    ids = {}
    for text in CORPUS:
        ids[text] = (await nous.learn(text)).id
    return ids


async def test_paraphrase_is_found_by_meaning(nous: Nous) -> None:
    ids = await _seed(nous)
    hits = await nous.recall("Which colleague doesn't eat meat?", limit=3)
    assert hits[0].id == ids[CORPUS[0]]
    assert "dense" in hits[0].signals


async def test_dense_wins_where_no_words_are_shared(nous: Nous) -> None:
    ids = await _seed(nous)
    hits = await nous.recall("hobbies involving mountains and ropes", limit=3)
    assert hits[0].id == ids[CORPUS[3]]
    assert "keyword" not in hits[0].signals


async def test_keyword_wins_for_rare_identifiers(nous: Nous) -> None:
    ids = await _seed(nous)
    hits = await nous.recall("ZX-4471", limit=3)
    assert hits[0].id == ids[CORPUS[2]]
    assert hits[0].signals.get("keyword_rank") == 1


async def test_scores_are_ordered_and_limit_respected(nous: Nous) -> None:
    ids = await _seed(nous)
    hits = await nous.recall("payment gateway errors and API request limits", limit=2)
    assert {h.id for h in hits} == {ids[CORPUS[2]], ids[CORPUS[5]]}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_per_type_floor_drops_unrelated_memories(nous: Nous) -> None:
    await _seed(nous)
    assert await nous.recall("quantum chromodynamics lattice gauge theory") == []


async def test_kind_and_time_filters(nous: Nous) -> None:
    await nous.learn("The launch party is at the rooftop bar", occurred_at=datetime(2025, 5, 1, tzinfo=UTC))
    await nous.learn("The launch retro is in room 4", occurred_at=datetime(2025, 7, 1, tzinfo=UTC))
    await nous.record_decision("Hold the launch party at the rooftop bar", confidence=0.7)
    facts_only = await nous.recall("launch party", kinds="fact")
    assert {h.kind.value for h in facts_only} == {"fact"}
    decisions = await nous.recall("launch party", kinds=["decision"])
    assert [h.kind.value for h in decisions] == ["decision"]
    june_on = await nous.recall("launch", since=datetime(2025, 6, 1, tzinfo=UTC))
    assert [h.content for h in june_on if h.kind.value == "fact"] == ["The launch retro is in room 4"]
    before_june = await nous.recall("launch", until=datetime(2025, 6, 1, tzinfo=UTC))
    assert [h.content for h in before_june] == ["The launch party is at the rooftop bar"]


async def test_recall_covers_every_memory_type(nous: Nous) -> None:
    episode = await nous.start_episode("Migrating the invoices database")
    await nous.end_episode(episode.id, summary="Moved invoices to PostgreSQL with zero downtime")
    await nous.add_procedure("Zero-downtime migration", "Dual-write, backfill, verify, switch reads")
    await nous.add_censor("DROP TABLE", reason="never drop tables in production", action="block")
    hits = await nous.recall("how did the invoices database migration go?", limit=5)
    assert hits[0].id == episode.id  # closed episodes stay searchable
    kinds = {h.kind.value for h in await nous.recall("database migration drop table", limit=10)}
    assert {"episode", "procedure", "censor"} <= kinds


async def test_large_store_keyword_search_skips_very_common_terms(
    tmp_path: Path, provider: EmbeddingProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nous.storage.sqlite import store as sqlite_store

    monkeypatch.setattr(sqlite_store, "LARGE_STORE", 10)
    async with Nous(
        Settings(home=tmp_path, events_worker="off"),
        database_url=f"sqlite:///{tmp_path / 'k.db'}",
        embedding_provider=provider,
    ) as nous:
        for i in range(40):
            await nous.learn(f"Team note {i}: the team met about topic {i}")
        falcon = await nous.learn("Team note: Falcon launch slipped a week")
        conn = sqlite3.connect(tmp_path / "k.db")
        counts = sqlite_store._TermCounts()
        assert counts.selective(conn, ["team", "falcon"]) == ["falcon"]
        assert counts.selective(conn, ["team", "note"]) == []
        assert counts.selective(conn, ["team"]) == []
        conn.close()
        scope = MemoryQuery(agent_id=nous.agent_id)
        hits = await nous.store.keyword_search(scope, ["team", "falcon"], 5)
        assert hits[0].id == falcon.id
        # Only words in most memories: nothing to rank by, and recall still finds by meaning.
        assert await nous.store.keyword_search(scope, ["team", "note"], 5) == []
        assert (await nous.recall("Falcon launch slipped", limit=1))[0].id == falcon.id


async def test_reduced_space_first_pass_matches_exact_search(
    tmp_path: Path, provider: EmbeddingProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On large stores the vector index ranks in a PCA-reduced space, then re-scores exactly."""
    import json

    from nous.models import Fact
    from nous.storage.sqlite import vector_index

    pairs = [json.loads(line) for line in (Path(__file__).parent / "data" / "dedup_pairs.jsonl").open()]
    texts = list(dict.fromkeys(t for p in pairs for t in (p["a"], p["b"])))
    queries = ["Which server runs Ubuntu?", "what does the user like to eat", "trading rules about risk"]
    url = f"sqlite:///{tmp_path / 'v.db'}"
    settings = Settings(home=tmp_path, events_worker="off")

    async def search_all() -> list[list[tuple[str, float]]]:
        async with Nous(settings, database_url=url, embedding_provider=provider) as nous:
            if not (await nous.stats()).active_by_kind:
                facts = [Fact(agent_id=nous.agent_id, content=t) for t in texts]
                await nous.add_many(facts)
            out = []
            for q in queries:
                vec = provider.embed([q])[0]
                hits = await nous.store.vector_search(MemoryQuery(agent_id=nous.agent_id), vec, 20)
                out.append([(h.id, h.score) for h in hits])
            reduced = nous.store._index._basis is not None  # type: ignore[attr-defined]
            assert reduced == (len(texts) > vector_index.APPROX_MIN_ROWS)
            return out

    exact = await search_all()
    monkeypatch.setattr(vector_index, "APPROX_MIN_ROWS", 200)
    monkeypatch.setattr(vector_index, "RERANK_MIN", 100)
    approx = await search_all()
    for e, a in zip(exact, approx, strict=True):
        assert len({i for i, _ in e} & {i for i, _ in a}) >= 18  # recall@20 >= 0.9
        assert a[0] == pytest.approx(e[0])  # scores are exact cosines, best hit the same

    # One vector searched again (its reduced scores are reused) under another filter, then
    # after a write: the new memory is found, so nothing stale is served.
    async with Nous(settings, database_url=url, embedding_provider=provider) as nous:
        vec = provider.embed([queries[0]])[0]
        everything = await nous.store.vector_search(MemoryQuery(agent_id=nous.agent_id), vec, 20)
        facts_only = MemoryQuery(agent_id=nous.agent_id, kinds=(MemoryKind.FACT,))
        assert [h.id for h in await nous.store.vector_search(facts_only, vec, 20)] == [
            h.id for h in everything
        ]
        assert not await nous.store.vector_search(
            MemoryQuery(agent_id=nous.agent_id, kinds=(MemoryKind.PROCEDURE,)), vec, 20
        )
        new = await nous.learn(queries[0].rstrip("?") + " — the build server", dedup=False)
        again = await nous.store.vector_search(facts_only, vec, 20)
        assert again[0].id == new.memory.id


async def test_postgres_keyword_search_skips_very_common_terms(
    pg_schema: str, settings: Settings, provider: EmbeddingProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nous.storage.postgres import store as pg_store

    from .conftest import pg_url

    monkeypatch.setattr(pg_store, "LARGE_STORE", 10)
    async with Nous(settings, database_url=pg_url(pg_schema), embedding_provider=provider) as nous:
        for i in range(40):
            await nous.learn(f"Team note {i}: the team met about topic {i}", dedup=False)
        falcon = await nous.learn("Team note: Falcon launch slipped a week")
        store = nous.store
        assert isinstance(store, pg_store.PostgresStore)
        with psycopg.connect(pg_url(pg_schema).split("?")[0], autocommit=True) as conn:
            conn.execute(f"ANALYZE {pg_schema}.memories")  # reltuples is how the store reads its size
        assert await store._selective_words(["team", "falcon"]) == ("falcon", "falcon")
        assert await store._selective_words(["team"]) == ("", "")
        scope = MemoryQuery(agent_id=nous.agent_id)
        hits = await store.keyword_search(scope, ["team", "falcon"], 5)
        assert hits[0].id == falcon.id
        assert await store.keyword_search(scope, ["team", "note"], 5) == []


async def test_postgres_keyword_search_ranks_by_common_words_it_does_not_search_by(
    pg_schema: str, settings: Settings, provider: EmbeddingProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a large store a word in more than RANKED_MATCHES memories finds no rows itself: it ranks
    the rows its rarer companions find, and alone (or with only words as common) finds nothing
    unless every word of the query is in the row."""
    from nous.storage.postgres import store as pg_store

    from .conftest import pg_url

    monkeypatch.setattr(pg_store, "LARGE_STORE", 10)
    monkeypatch.setattr(pg_store, "RANKED_MATCHES", 2)
    async with Nous(settings, database_url=pg_url(pg_schema), embedding_provider=provider) as nous:
        for i in range(60):
            await nous.learn(f"Team note {i}: the team met about topic {i}", dedup=False)
        both = await nous.learn("Falcon launch slipped a week", dedup=False)
        rare_only = await nous.learn("Falcon review moved to Friday", dedup=False)
        party = await nous.learn("Launch party on the roof", dedup=False)
        checklist = await nous.learn("Launch checklist for the roof deck", dedup=False)
        store = nous.store
        assert isinstance(store, pg_store.PostgresStore)
        with psycopg.connect(pg_url(pg_schema).split("?")[0], autocommit=True) as conn:
            conn.execute(f"ANALYZE {pg_schema}.memories")
        scope = MemoryQuery(agent_id=nous.agent_id)
        assert await store._selective_words(["falcon", "launch"]) == ("falcon", "falcon | launch")
        hits = await store.keyword_search(scope, ["falcon", "launch"], 5)
        assert [h.id for h in hits] == [both.id, rare_only.id]  # "launch" ranks, finds no party
        assert await store.keyword_search(scope, ["launch"], 5) == []
        together = await store.keyword_search(scope, ["launch", "roof"], 5)
        assert {h.id for h in together} == {party.id, checklist.id}
        # Only words too common to search by: the rows that hold all of them.
        total = store._term_share["launch"][1]
        store._term_share["slipped"] = (3 / total, total)
        assert await store._selective_words(["launch", "slipped"]) == (
            "launch & slipped",
            "launch | slipped",
        )
        hits = await store.keyword_search(scope, ["launch", "slipped"], 5)
        assert [h.id for h in hits] == [both.id]
