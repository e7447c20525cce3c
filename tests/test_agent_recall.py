"""What the agent receives, judged as the agent would (issue 19), with the real model on both
backends: recall across kinds, readable scores, a context that answers "why", current facts, and
a recent tier that keeps to recent, finished conversations."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from nous import InvalidInputError, MemoryKind, Nous, Settings
from nous.bench.agent import load_scenario, run_agent
from nous.cli.demo import load_sample, store_sample
from nous.embeddings.base import EmbeddingProvider
from nous.storage import MemoryQuery
from nous.storage.base import PutMemory

NOW = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


async def test_what_did_we_decide_puts_the_decision_first(nous: Nous) -> None:
    """As on a served demo: the pipeline has run and another conversation has begun, so the
    decision has no graph link to the best matches; the question's intent alone lifts it."""
    await store_sample(nous, load_sample())
    await nous.process_events()
    await nous.pre_turn("later", "Why did we pick Postgres for the ledger?")
    hits = await nous.recall("what did we decide?")
    assert hits[0].kind == MemoryKind.DECISION
    assert hits[0].content == load_sample()["decision"]["description"]
    assert "kind_match" in hits[0].signals


async def test_a_why_question_gets_the_decisions_reasons(nous: Nous) -> None:
    await store_sample(nous, load_sample())
    reasons = [r["text"] for r in load_sample()["decision"]["reasons"]]
    context = await nous.preview_turn("Why did we pick Postgres?")
    for reason in reasons:
        assert reason in context.text
    decisions = context.section("decisions")
    assert decisions is not None and decisions.items[0].text.startswith("[")  # dated
    assert "Decided: " in decisions.items[0].text and "outcome: " in decisions.items[0].text


async def test_a_superseded_fact_never_ranks_above_its_successor(nous: Nous) -> None:
    old = await nous.learn(
        "The settlement batch starts at 02:00 UTC.",
        subject="settlement batch",
        occurred_at=NOW - timedelta(days=60),
    )
    new = await nous.learn(
        "The settlement batch was moved to 03:30 UTC, after the bank's report arrives.",
        subject="settlement batch",
        occurred_at=NOW - timedelta(days=5),
    )
    assert new.superseded_id == old.id
    hits = await nous.recall("What time does the settlement batch start now?", now=NOW)
    assert hits[0].id == new.id and hits[0].current
    assert old.id not in [h.id for h in hits]
    both = await nous.recall("When does the settlement batch start?", now=NOW, include_superseded=True)
    ids = [h.id for h in both]
    assert ids.index(new.id) < ids.index(old.id) and not both[ids.index(old.id)].current
    # As of a time before the change, the old value was the current one.
    then = await nous.recall("When does the settlement batch start?", as_of=NOW - timedelta(days=30))
    assert then[0].id == old.id and then[0].current and new.id not in [h.id for h in then]
    context = await nous.preview_turn("When does the settlement batch start?", at=NOW)
    assert "(current; it replaced" in context.text


async def test_scores_are_relevances_and_min_score_filters(nous: Nous) -> None:
    await nous.learn("The staging cluster runs in eu-west-1.")
    await nous.learn("Dana wants incident updates as three bullets.")
    await nous.record_decision(
        "Use PostgreSQL for the ledger", confidence=0.8, reasons=[{"type": "analysis", "text": "needs ACID"}]
    )
    hits = await nous.recall("where does the staging cluster run?", min_score=0)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert hits[0].content.startswith("The staging cluster") and hits[0].score > hits[-1].score
    strict = await nous.recall("where does the staging cluster run?", min_score=hits[0].score)
    assert [h.id for h in strict] == [hits[0].id]
    assert await nous.recall("xyzzy plugh frobnicate quux") == []  # nonsense: nothing at the default
    with pytest.raises(InvalidInputError, match="min_score"):
        await nous.recall("staging", min_score=1.5)
    assert hits[0].occurred_at is not None


async def test_recent_tier_keeps_to_recent_finished_conversations(nous: Nous) -> None:
    old = await nous.start_episode("Planning the garden beds", started_at=NOW - timedelta(days=10))
    await nous.end_episode(old.id, summary="Raised beds by the fence.", ended_at=NOW - timedelta(days=10))
    recent = await nous.start_episode("Choosing a new bike", started_at=NOW - timedelta(hours=20))
    await nous.end_episode(recent.id, summary="Picked a gravel bike.", ended_at=NOW - timedelta(hours=19))
    other = await nous.pre_turn("other", "Help me draft the quarterly budget", at=NOW - timedelta(hours=1))
    assert other.episode_id is not None  # a conversation still running in another session
    context = await nous.pre_turn("mine", "Hello there, what did we talk about lately?", at=NOW)
    section = context.section("recent")
    assert section is not None
    shown = {i.id for i in section.items}
    assert recent.id in shown and old.id not in shown and other.episode_id not in shown
    listed = {m.id for m in await nous.recall_recent(until=NOW)}
    assert recent.id in listed and old.id not in listed and other.episode_id not in listed


async def test_frame_text_names_no_tools_and_asks_for_no_decision_first(nous: Nous) -> None:
    context = await nous.preview_turn("Should we use PostgreSQL or MongoDB for the orders service?")
    assert context.frame == "decision"
    for tool in ("record_decision", "learn_fact", "recall_recent", "Tools:"):
        assert tool not in context.text
    assert "before responding" not in context.text


async def test_a_preview_writes_nothing(nous: Nous) -> None:
    await store_sample(nous, load_sample())
    before = (await nous.stats()).model_dump()
    first = await nous.preview_turn("What did we decide about the ledger?", user_id="maya")
    second = await nous.preview_turn("What did we decide about the ledger?", user_id="maya")
    assert first.text == second.text and (await nous.stats()).model_dump() == before
    assert await nous.sessions() == []


SCENARIO = {
    "id": "tiny",
    "agent_id": "tiny-agent",
    "now": "2026-06-01T09:00:00Z",
    "memories": [
        {
            "id": "f1",
            "type": "fact",
            "content": "The office wifi is called Heron.",
            "subject": "wifi",
            "at": "2026-01-10T09:00:00Z",
        },
        {
            "id": "f2",
            "type": "fact",
            "content": "The office wifi moved to the network called Osprey.",
            "subject": "wifi",
            "at": "2026-03-10T09:00:00Z",
        },
        {
            "id": "d1",
            "type": "decision",
            "description": "Buy standing desks for the whole team",
            "reasons": [{"type": "empirical", "text": "six people reported back pain in the survey"}],
            "confidence": 0.8,
            "stakes": "low",
            "category": "process",
            "at": "2026-02-01T09:00:00Z",
        },
        {
            "id": "p1",
            "type": "procedure",
            "name": "Book a meeting room",
            "description": "Open the room calendar, pick a free slot and add the room as a guest.",
            "at": "2026-01-05T09:00:00Z",
        },
        {
            "id": "c1",
            "type": "censor",
            "pattern": "(?i)share.*password",
            "action": "block",
            "reason": "Passwords are never shared in chat.",
            "at": "2026-01-05T09:00:00Z",
        },
    ],
    "questions": [
        {"id": "q1", "question": "What is the wifi network called now?", "kind": "update",
         "expect": ["f2"], "not_current": ["f1"]},
        {"id": "q2", "question": "Why did we get standing desks?", "kind": "why", "expect": ["d1"],
         "context_must_include": ["back pain"]},
        {"id": "q3", "question": "How do I book a meeting room?", "kind": "procedure", "expect": ["p1"]},
        {"id": "q4", "question": "What is the lunch budget for the offsite?", "kind": "abstain", "expect": []},
    ],
}  # fmt: skip


async def test_agent_benchmark_shape(tmp_path: Path, provider: EmbeddingProvider) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(SCENARIO))
    result = await run_agent([load_scenario(path)], settings=Settings(home=tmp_path), provider=provider)
    nous = result["systems"]["nous"]
    assert set(result["systems"]) == {"nous", "dense-only", "keyword-only"}
    assert nous["hit@1"] == 1.0 and nous["stale@1"] == 0.0 and result["context_include"] == 1.0
    assert nous["auroc"] is not None and 0.0 <= nous["auroc"] <= 1.0
    assert set(result["per_kind"]) == {"update", "why", "procedure", "abstain"}
    assert result["latency_ms"]["recall"]["p95"] >= result["latency_ms"]["recall"]["p50"] > 0
    assert len(result["questions"]) == 4 and result["questions"][0]["nous"]["top"]


async def test_stores_from_before_are_brought_to_the_new_presentation(nous: Nous) -> None:
    """A decision stored before its reasons were keyword context gets them from migration 0007;
    a censor embedded from its regex is re-embedded by its reason in `maintain`."""
    decision = await nous.record_decision(
        "Move the ledger to PostgreSQL",
        confidence=0.8,
        reasons=[{"type": "constraint", "text": "auditors require serializable transactions"}],
    )
    censor = (await nous.add_censor(r"(?i)drop\s+table", action="block", reason="never delete tables")).memory
    regex_vector = await nous.embedder.embed_one(censor.content)  # how it was embedded before
    store = nous.store
    url = nous.settings.resolved_database_url()
    await store.apply(
        [
            PutMemory(memory=censor, content_hash="old-presentation", embedding=regex_vector,
                      embedding_model=nous.embedder.model_name)
        ]
    )  # fmt: skip
    _run_sql(
        url,
        [
            "UPDATE memories SET search_context = NULL WHERE kind = 'decision'",
            "DELETE FROM schema_migrations WHERE version = 7",
        ],
    )
    assert not await _keyword_ids(nous, ["serializable"])
    await nous.close()
    async with Nous(nous.settings, agent_id=nous.agent_id, embedding_provider=nous._provider) as again:
        assert decision.id in await _keyword_ids(again, ["serializable"])  # the migration ran
        report = await again.maintain()
        assert report.refreshed == 1
        (vector,) = (await again.store.vectors(again.agent_id, [censor.id])).values()
        expected = await again.embedder.embed_one("never delete tables\ndrop table")
        assert float(vector @ expected) > 0.999 and (await again.maintain()).refreshed == 0


async def _keyword_ids(nous: Nous, terms: list[str]) -> set[str]:
    hits = await nous.store.keyword_search(MemoryQuery(agent_id=nous.agent_id), terms, 10)
    return {h.id for h in hits}


def _run_sql(url: str, statements: list[str]) -> None:
    if url.startswith("sqlite:///"):
        lite = sqlite3.connect(url.removeprefix("sqlite:///"))
        for statement in statements:
            lite.execute(statement)
        lite.commit()
        lite.close()
        return
    base, _, schema = url.partition("?nous_schema=")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"SET search_path = {schema}, public")
        for statement in statements:
            conn.execute(statement.encode())


async def test_a_censor_the_question_trips_comes_first(nous: Nous) -> None:
    """Its author wrote the pattern to catch messages like this one: the censor outranks a
    decision that shares more of the question's words."""
    await nous.record_decision(
        "Add 6 points to every lab report score this term",
        reasons=[{"type": "empirical", "text": "the lab scale was miscalibrated for three weeks"}],
    )
    censor = await nous.add_censor(
        r"(?i)\b(?:roommate|classmate|friend)(?:'s)?\b.*\b(?:scores?|grades?)\b",
        action="block",
        reason="A student's grades are shared only with that student and the course staff.",
    )
    hits = await nous.recall("My roommate says I can see his lab report score, what did he get?")
    assert hits[0].id == censor.id and hits[0].signals.get("fires") == 1.0
    assert [h for h in hits if h.kind == MemoryKind.DECISION]  # the decision is still there, below


async def test_an_episode_is_judged_by_its_summary_not_its_title_alone(nous: Nous) -> None:
    wanted = await nous.start_episode("Tuesday on site", started_at=NOW - timedelta(days=3))
    await nous.end_episode(
        wanted.id, summary="Lifting the bathroom floor exposed rotten joists under the old tub."
    )
    other = await nous.start_episode("Bathroom floor tiles", started_at=NOW - timedelta(days=2))
    await nous.end_episode(other.id, summary="We compared three grey porcelain samples and kept two.")
    hits = await nous.recall("What did they find under the bathroom floor when they lifted it?")
    assert hits[0].id == wanted.id


def test_a_named_person_choosing_asks_for_their_preferences() -> None:
    from nous.retrieval.intent import query_intent

    assert query_intent("Which finish did Aisha pick for the kitchen tap?").preference
    assert MemoryKind.DECISION in query_intent("Which finish did Aisha pick for the kitchen tap?").kinds
    assert not query_intent("Which builder did we pick in the end?").preference
    assert not query_intent("What did You choose?").preference


async def test_a_recent_window_reaching_before_year_one_starts_there(nous: Nous) -> None:
    """A span longer than the time since year 1 (found by the API fuzzer: until 0004-01-01, ten
    years of hours) is everything up to ``until``, not an overflow."""
    learned = await nous.learn("The archive holds records from the fourth century")
    assert await nous.recall_recent(until=datetime(4, 1, 1, tzinfo=UTC), hours=87599.9) == []
    found = await nous.recall_recent(kinds=("fact",), hours=24 * 3650)
    assert [m.id for m in found] == [learned.memory.id]
