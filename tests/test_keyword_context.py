"""Keyword context as a separate, lower-weighted field (schema 0003), on both backends with the
real embedding model; and the upgrade of a store built at migration 0002."""

from __future__ import annotations

import json
import sqlite3
from importlib import resources
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

from nous import Nous, Settings
from nous.embeddings.base import EmbeddingProvider
from nous.models import Turn
from nous.storage import MemoryQuery
from nous.storage.sqlite.store import _split_sql, fmt_time
from tests.conftest import PG_URL, pg_url

QUESTION = "Which harbour did the ferry to Kirkwall leave from?"
ANSWER = "It left from Scrabster at seven in the morning."
OTHER = "The ferry to Kirkwall left from Scrabster harbour, as the timetable said."


FILLER = [
    "Packed the tent and two sleeping bags for the weekend.",
    "The quarterly report is due on the last Friday of March.",
    "My sister adopted a grey cat called Pepper.",
    "We replaced the kitchen tap because it was dripping.",
    "The library closes early on public holidays.",
]


def _turn(nous: Nous, content: str, context: str | None = None, session: str = "s1") -> Turn:
    return Turn(agent_id=nous.agent_id, session_id=session, content=content, context=context)


async def _with_filler(nous: Nous, turns: list[Turn]) -> None:
    """Store ``turns`` among unrelated ones, so that BM25's IDF of the query words is positive."""
    filler = [_turn(nous, text, session=f"f{i}") for i, text in enumerate(FILLER)]
    await nous.add_many([*turns, *filler])


async def _keyword(nous: Nous, terms: list[str]) -> dict[str, tuple[float, float | None]]:
    hits = await nous.store.keyword_search(MemoryQuery(agent_id=nous.agent_id), terms, 10, own=True)
    return {h.id: (h.score, h.own) for h in hits}


async def test_turn_found_only_through_its_context_has_no_own_score(nous: Nous) -> None:
    answer = _turn(nous, ANSWER, context=f"user: {QUESTION}")
    await _with_filler(nous, [answer])
    hits = await _keyword(nous, ["harbour", "kirkwall"])  # words of the question only
    score, own = hits[answer.id]
    assert score > 0 and own == 0.0


async def test_own_text_outranks_the_same_words_in_context(nous: Nous) -> None:
    by_context = _turn(nous, ANSWER, context=f"user: {OTHER}")
    by_own = _turn(nous, OTHER, context=f"assistant: {ANSWER}", session="s2")
    await _with_filler(nous, [by_context, by_own])
    hits = await _keyword(nous, ["kirkwall", "harbour", "timetable"])
    assert hits[by_own.id][0] > hits[by_context.id][0]
    own = hits[by_own.id][1]
    assert own is not None and own > 0
    assert hits[by_context.id][1] == 0.0
    found = await nous.store.keyword_search(MemoryQuery(agent_id=nous.agent_id), ["timetable"], 10, own=True)
    assert [h.id for h in found] == [by_own.id, by_context.id]
    plain = await nous.store.keyword_search(MemoryQuery(agent_id=nous.agent_id), ["timetable"], 10)
    assert [(h.id, h.own) for h in plain] == [(by_own.id, None), (by_context.id, None)]  # not asked


async def test_changing_the_context_reindexes_it(nous: Nous) -> None:
    turn = _turn(nous, ANSWER, context=f"user: {QUESTION}")
    await _with_filler(nous, [turn])
    await nous.repo.update(turn.id, {"context": "user: when did the boat to Orkney go?"})
    assert turn.id not in await _keyword(nous, ["kirkwall"])
    assert turn.id in await _keyword(nous, ["orkney"])


def _old_store(path: Path) -> None:
    """An SQLite store at schema 0002, with a turn indexed the old way ("context\\ncontent")."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    migrations = resources.files("nous.storage.sqlite").joinpath("migrations")
    for version, name in ((1, "init"), (2, "lifecycle")):
        for statement in _split_sql(migrations.joinpath(f"{version:04d}_{name}.sql").read_text()):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00.000000+00:00')", (version, name)
        )
    now = fmt_time(Turn(content="x").created_at)
    context = f"user: {QUESTION}"
    conn.execute(
        "INSERT INTO memories (id, kind, agent_id, session_id, content, search_text, data, occurred_at, "
        "created_at, updated_at, content_hash) VALUES (?, 'turn', 'test-agent', 's1', ?, ?, ?, ?, ?, ?, 'h')",
        (
            "old-turn",
            ANSWER,
            f"{context}\n{ANSWER}",
            json.dumps({"role": "assistant", "context": context}),
            now,
            now,
            now,
        ),
    )
    conn.execute(
        "INSERT INTO memories (id, kind, agent_id, content, search_text, occurred_at, created_at, updated_at, "
        "content_hash) VALUES ('old-fact', 'fact', 'test-agent', ?, ?, ?, ?, ?, 'h2')",
        (OTHER, OTHER, now, now, now),
    )
    conn.close()


async def test_store_at_0002_upgrades_with_the_context_moved(
    tmp_path: Path, settings: Settings, provider: EmbeddingProvider
) -> None:
    path = tmp_path / "old.db"
    _old_store(path)
    async with Nous(settings, database_url=f"sqlite:///{path}", embedding_provider=provider) as nous:
        assert (await nous.stats()).schema_version >= 3  # upgraded past 0003
        await _with_filler(nous, [])
        turn = await nous.get("old-turn")
        assert isinstance(turn, Turn) and turn.context == f"user: {QUESTION}" and turn.content == ANSWER
        hits = await _keyword(nous, ["harbour", "kirkwall"])
        assert hits["old-turn"][0] > 0 and hits["old-turn"][1] == 0.0  # found by its context only
        assert hits["old-fact"][1] is not None and hits["old-fact"][1] > 0
        both = await _keyword(nous, ["scrabster"])  # in the own text of both
        assert set(both) == {"old-turn", "old-fact"} and all(own and own > 0 for _, own in both.values())
    conn = sqlite3.connect(path)
    row = conn.execute("SELECT search_text, search_context FROM memories WHERE id = 'old-turn'").fetchone()
    assert row == (ANSWER, f"user: {QUESTION}")
    conn.close()


async def test_postgres_store_at_0002_upgrades_with_the_context_moved(
    pg_schema: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    migrations = resources.files("nous.storage.postgres").joinpath("migrations")
    context = f"user: {QUESTION}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {pg_schema}")
        conn.execute(f"SET search_path = {pg_schema}, public")
        conn.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        for version, name in ((1, "init"), (2, "lifecycle")):
            sql = migrations.joinpath(f"{version:04d}_{name}.sql").read_text()
            conn.execute(sql.replace("{dimensions}", str(provider.dimensions)).encode())
            conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name))
        conn.execute(
            "INSERT INTO memories (id, kind, agent_id, session_id, content, search_text, data, occurred_at, "
            "created_at, updated_at, content_hash) VALUES ('old-turn', 'turn', 'test-agent', 's1', %s, %s, %s, "
            "now(), now(), now(), 'h')",
            (ANSWER, f"{context}\n{ANSWER}", Jsonb({"role": "assistant", "context": context})),
        )
    async with Nous(settings, database_url=pg_url(pg_schema), embedding_provider=provider) as nous:
        assert (await nous.stats()).schema_version >= 3  # upgraded past 0003
        await _with_filler(nous, [])
        hits = await _keyword(nous, ["harbour", "kirkwall"])
        assert hits["old-turn"][0] > 0 and hits["old-turn"][1] == 0.0
        own = (await _keyword(nous, ["scrabster"]))["old-turn"][1]
        assert own is not None and own > 0
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        row = conn.execute(f"SELECT search_text, search_context FROM {pg_schema}.memories").fetchone()
    assert row == (ANSWER, context)


def test_turn_embedding_text_names_a_speaker_but_not_a_bare_role() -> None:
    named = Turn(agent_id="a", role="user", speaker="Caroline", content="Caroline: I went hiking.")
    assert named.embedding_text() == 'Caroline said, "I went hiking."'
    assert named.keyword_text() == "Caroline: I went hiking."
    role_only = Turn(
        agent_id="a", role="assistant", speaker="assistant", content="assistant: Use a debounce."
    )
    assert role_only.embedding_text() == "Use a debounce."
    unprefixed = Turn(agent_id="a", role="user", speaker="Sam", content="no prefix here")
    assert unprefixed.embedding_text() == "no prefix here"
