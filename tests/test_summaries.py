"""Episode summaries and fact extraction through the event pipeline, on both backends, with a
language model (a real OpenAI-protocol server on loopback) and without one (the offline path on
real LoCoMo sessions). Covers the summary-quality spec's eleven tests and the bad-LLM cases."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from nous import EventKind, EventStatus, NotFoundError, Nous, Settings
from nous._time import utcnow
from nous.embeddings.base import EmbeddingProvider
from nous.events.extraction import PER_SESSION
from nous.events.summary import decision_context
from nous.events.transcript import OMITTED, truncate_transcript
from nous.ingest import ingested_session_key, parse_conversation
from nous.llm import create_llm_provider
from nous.models import Decision, Episode, Fact
from tests.llm_servers import ChatServer, Reply

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo" / "26.json"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
REPLY = "Kafka keeps an ordered, replayable log per account, which the billing audit needs. " * 3


def summary_json(**overrides: object) -> str:
    body: dict[str, object] = {
        "title": "Choosing Kafka for billing events",
        "summary": "The user asked whether billing events should move from RabbitMQ to Kafka. "
        "The assistant explained that Kafka keeps an ordered, replayable log per account, which "
        "the billing audit requires, and the user decided to move billing events to Kafka with "
        "one partition per account. Consumers will be idempotent so that replays are safe.",
        "key_points": ["Pick a log-based broker when audits need replay"],
        "outcome": "resolved",
        "outcome_rationale": "The user decided on Kafka and knows the next steps.",
        "topics": ["kafka", "billing"],
        "candidate_facts": ["Billing events move to Kafka with one partition per account."],
    }
    body.update(overrides)
    return json.dumps(body)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    s = ChatServer("openai")
    yield s
    s.close()


@pytest.fixture
def quiet(settings: Settings) -> Settings:
    return settings.model_copy(update={"events_worker": "off", "event_retry_seconds": 0.01})


@pytest.fixture
async def llm_nous(
    database_url: str, quiet: Settings, provider: EmbeddingProvider, server: ChatServer
) -> AsyncIterator[Nous]:
    llm = create_llm_provider(
        Settings(llm_provider="openai", llm_model="summariser", llm_api_base=server.url, llm_timeout_s=5)
    )
    async with Nous(quiet, database_url=database_url, embedding_provider=provider, llm_provider=llm) as n:
        yield n


async def billing_session(nous: Nous, *, decision: bool = True) -> str:
    await nous.pre_turn("s1", "Should billing events move from RabbitMQ to Kafka?", at=T0)
    if decision:
        await nous.record_decision(
            "Move billing events to Kafka, one partition per account",
            confidence=0.8,
            session_id="s1",
            reasons=[{"type": "analysis", "text": "audits need replay"}],
        )
    await nous.post_turn("s1", REPLY, at=T0 + timedelta(minutes=1))
    ended = await nous.end_session("s1", at=T0 + timedelta(minutes=5))
    assert ended.episode is not None
    return ended.episode.id


# -- spec: enhanced prompt and fact coordination ------------------------------------------------
async def test_new_prompt_fields_parsed(llm_nous: Nous, server: ChatServer) -> None:
    server.script = [Reply(summary_json())]
    episode_id = await billing_session(llm_nous)
    report = await llm_nous.process_events()
    assert report.dead == 0
    episode = await llm_nous.get(episode_id)
    assert isinstance(episode, Episode)
    assert episode.title == "Choosing Kafka for billing events" and episode.summary
    structured = episode.structured_summary or {}
    assert structured["outcome"] == "resolved" and structured["outcome_rationale"].startswith(
        "The user decided"
    )
    assert structured["candidate_facts"] and structured["source"] == "llm"
    assert episode.lessons == ["Pick a log-based broker when audits need replay"]
    # Re-embedded: recall finds the episode by words only its summary holds.
    hits = await llm_nous.recall("idempotent consumers make replays safe", kinds="episode", limit=3)
    assert hits and hits[0].id == episode_id
    usage = await llm_nous.llm_usage()
    assert [(u.purpose, u.calls, u.failed) for u in usage] == [("episode_summary", 1, 0)]
    assert usage[0].input_tokens > 0 and usage[0].output_tokens > 0
    assert usage[0].provider == "openai" and usage[0].model == "summariser"


async def test_candidate_facts_stored_directly(llm_nous: Nous, server: ChatServer) -> None:
    server.script = [Reply(summary_json())]
    episode_id = await billing_session(llm_nous)
    await llm_nous.process_events()
    assert len(server.requests) == 1  # the summary alone: no extraction call
    facts = [f for f in await llm_nous.memories("fact") if isinstance(f, Fact) and f.source == "extraction"]
    assert [f.content for f in facts] == ["Billing events move to Kafka with one partition per account."]
    assert facts[0].provenance.episode_id == episode_id and facts[0].session_id == "s1"


async def test_fact_extractor_fallback(llm_nous: Nous, server: ChatServer) -> None:
    server.script = [
        Reply(summary_json(candidate_facts=[])),
        Reply(json.dumps({"facts": ["The billing audit requires replayable events."]})),
    ]
    await billing_session(llm_nous)
    await llm_nous.process_events()
    assert len(server.requests) == 2
    assert "Extract the lasting facts" in server.requests[1]["body"]["messages"][0]["content"]
    facts = [
        f.content for f in await llm_nous.memories("fact") if isinstance(f, Fact) and f.source == "extraction"
    ]
    assert facts == ["The billing audit requires replayable events."]
    assert {u.purpose for u in await llm_nous.llm_usage()} == {"episode_summary", "fact_extraction"}


async def test_candidate_facts_dedup(llm_nous: Nous, server: ChatServer) -> None:
    existing = await llm_nous.learn("Billing events move to Kafka with one partition per account.")
    server.script = [
        Reply(
            summary_json(
                candidate_facts=[
                    "Billing events move to Kafka with one partition per account.",
                    "Billing events move to Kafka with one partition per account.",
                ]
            )
        )
    ]
    await billing_session(llm_nous)
    await llm_nous.process_events()
    facts = [f for f in await llm_nous.memories("fact") if isinstance(f, Fact)]
    assert [f.id for f in facts] == [existing.memory.id]
    confirmed = await llm_nous.get(existing.memory.id)
    assert isinstance(confirmed, Fact) and confirmed.confirmation_count == 2


# -- spec: decision context and smart truncation -------------------------------------------------
def test_truncate_preserves_first_last() -> None:
    turns = (
        ["user: first question"] + [f"assistant: filler {i} " + "x" * 300 for i in range(40)] + ["user: last"]
    )
    out = truncate_transcript("\n\n".join(turns), max_chars=2000)
    parts = out.split("\n\n")
    assert parts[0] == turns[0] and parts[-1] == turns[-1] and len(out) <= 2000 and OMITTED in parts


def test_truncate_prioritizes_decisions() -> None:
    tool_output = "assistant: ```\n" + "\n".join(f"line {i}" for i in range(60)) + "\n```"
    decision = "assistant: We decided to use Kafka because audits need replay."
    turns = ["user: hi", tool_output, decision, tool_output, "user: thanks"]
    out = truncate_transcript("\n\n".join(turns), max_chars=len(decision) + 200)
    assert decision in out and "line 30" not in out


def test_truncate_keeps_first_last_and_decisions_when_they_are_long() -> None:
    first = "user: " + "We are planning the migration of the billing system to a new broker. " * 40
    last = "user: " + "Thanks, that settles it; I will report back after the cutover. " * 40
    decision = "We decided to move billing events to Kafka because audits need replay."
    long_turn = "assistant: Here is the analysis.\n" + "detail " * 300 + f"\n{decision}\n" + "more " * 200
    turns = [first, *[f"assistant: filler {i} " + "x" * 300 for i in range(6)], long_turn, last]
    out = truncate_transcript("\n\n".join(turns), max_chars=4000)
    assert len(first) + len(last) > 2000 and len(out) <= 4000
    parts = out.split("\n\n")
    assert parts[0].startswith(first[:200]) and parts[0].endswith("…")  # the first turn, clipped
    assert parts[-1].startswith(last[:200])  # the last turn
    assert f"assistant: {decision}" in parts  # the decision line of a turn too long to keep
    assert "detail detail" not in out


def test_truncate_noop_under_limit() -> None:
    text = "user: hello\n\nassistant: hi there"
    assert truncate_transcript(text, max_chars=8000) == text


async def test_build_decision_context(llm_nous: Nous, server: ChatServer) -> None:
    server.script = [Reply(summary_json())]
    episode_id = await billing_session(llm_nous)
    episode = await llm_nous.get(episode_id)
    assert isinstance(episode, Episode)
    text = await decision_context(llm_nous.pipeline_context(), episode)
    assert text.startswith("Decisions made during this episode:")
    assert "Move billing events to Kafka, one partition per account (confidence 0.80" in text
    assert "audits need replay" in text


async def test_build_decision_context_no_decisions(llm_nous: Nous) -> None:
    episode_id = await billing_session(llm_nous, decision=False)
    episode = await llm_nous.get(episode_id)
    assert isinstance(episode, Episode)
    assert await decision_context(llm_nous.pipeline_context(), episode) == ""


async def test_build_decision_context_error_handling(
    database_url: str, quiet: Settings, provider: EmbeddingProvider
) -> None:
    nous = Nous(quiet, database_url=database_url, embedding_provider=provider)
    await nous.open()
    episode_id = await billing_session(nous)
    episode = await nous.get(episode_id)
    ctx = nous.pipeline_context()
    await nous.store.close()  # the store fails under the summariser: a real error, not a mock
    assert isinstance(episode, Episode)
    assert await decision_context(ctx, episode) == ""
    nous._store = None
    await nous.close()


async def test_full_handler_with_brain(llm_nous: Nous, server: ChatServer) -> None:
    server.script = [Reply(summary_json())]
    await billing_session(llm_nous)
    await llm_nous.process_events()
    prompt = server.requests[0]["body"]["messages"][1]["content"]
    assert "Decisions made during this episode:" in prompt
    assert "Move billing events to Kafka, one partition per account" in prompt
    assert "user: Should billing events move from RabbitMQ to Kafka?" in prompt


# -- a language model that misbehaves ------------------------------------------------------------
@pytest.mark.parametrize(
    ("replies", "words"),
    [
        ([Reply("not json at all"), Reply("{still not json")], "did not fit"),
        ([Reply(summary_json(summary="word " * 5000))] * 2, "summary"),
        ([Reply(summary_json(title=""))] * 2, "title"),
        ([Reply(summary_json(candidate_facts=[f"fact {i} about billing" for i in range(200)]))] * 2, "facts"),
        ([Reply(status=429)], "429"),
        ([Reply(status=500)], "500"),
    ],
)
async def test_bad_llm_output_is_retried_then_dead_lettered(
    llm_nous: Nous, server: ChatServer, replies: list[Reply], words: str
) -> None:
    server.script = list(replies)
    episode_id = await billing_session(llm_nous)
    before = await llm_nous.get(episode_id)
    assert isinstance(before, Episode)
    worker = llm_nous.event_worker()
    worker.max_attempts = 2
    hours = itertools.count(1)  # each look at the clock is an hour later: every backoff has run out
    worker.clock = lambda: utcnow() + timedelta(hours=next(hours))
    for _ in range(40):
        await worker.drain()
        if not [e for e in await llm_nous.events(status="pending") if e.kind == EventKind.EPISODE_CLOSED]:
            break
    (dead,) = await llm_nous.events(status="dead")
    assert dead.kind == EventKind.EPISODE_CLOSED and dead.attempts == 2 and words in (dead.last_error or "")
    after = await llm_nous.get(episode_id)  # still readable, unchanged: nothing half-written
    assert isinstance(after, Episode) and after.summary == before.summary and after.title == before.title
    assert not [
        f for f in await llm_nous.memories("fact") if isinstance(f, Fact) and f.source == "extraction"
    ]
    usage = await llm_nous.llm_usage()  # every failed call was counted
    assert sum(u.failed for u in usage) == sum(u.calls for u in usage) >= 2
    server.script = [Reply(summary_json())]  # the model is back: the dead letter is revived
    await llm_nous.retry_event(dead.id)
    for _ in range(40):
        await worker.drain()
        if not await llm_nous.events(status="pending"):
            break
    revived = await llm_nous.get(episode_id)
    assert isinstance(revived, Episode) and revived.title == "Choosing Kafka for billing events"
    assert not await llm_nous.events(status="dead")


# -- the offline path on real LoCoMo sessions ----------------------------------------------------
async def test_offline_summaries_and_facts_on_real_locomo_sessions(
    database_url: str, quiet: Settings, provider: EmbeddingProvider
) -> None:
    data = json.loads(LOCOMO.read_text())
    keep = {f"session_{n}" for n in (1, 2, 3)}
    for key in [k for k in data if k.startswith("session_") and k.split("_")[1].isdigit()]:
        if key.removesuffix("_date_time") not in keep:
            del data[key]
    conversation = parse_conversation(json.dumps(data), fmt="locomo")
    speakers = {data["speaker_a"], data["speaker_b"]}
    async with Nous(quiet, database_url=database_url, embedding_provider=provider) as nous:
        await nous.ingest(conversation)
        report = await nous.process_events()
        assert report.dead == 0 and (await nous.event_counts()).get(EventStatus.PENDING, 0) == 0
        episodes = [e for e in await nous.memories("episode") if isinstance(e, Episode)]
        assert len(episodes) == 3
        for e in episodes:
            assert e.summary and (e.structured_summary or {}).get("source") == "offline"
            assert e.title and not any(f"{s}:" in e.title for s in speakers)  # a topic, not who talked
            assert any(s in e.summary for s in speakers) and not any(f"{s}:" in e.summary for s in speakers)
        facts = [f for f in await nous.memories("fact", limit=500) if isinstance(f, Fact)]
        assert facts and all(f.source == "extraction" for f in facts)
        by_session: dict[str | None, list[Fact]] = {}
        for f in facts:
            by_session.setdefault(f.session_id, []).append(f)
            assert f.subject is not None and f.subject in speakers and f.subject in f.content
            assert " I " not in f" {f.content} " and not f.content.lower().startswith("i ")
            session_no = f.session_id.rsplit("_", 1)[-1] if f.session_id else ""
            assert f.provenance.turn_ids and all(
                t.startswith(f"D{session_no}:") for t in f.provenance.turn_ids
            )
            assert f.occurred_at.date().isoformat() in {"2023-05-08", "2023-05-25", "2023-06-09"}
        assert all(len(v) <= PER_SESSION for v in by_session.values())
        # The annotated event of session 1 is found by a fact about its speaker.
        (event,) = data["events_session_1"]["Caroline"]
        session_1 = [
            f.content
            for f in by_session[ingested_session_key(None, conversation.id, "session_1")]
            if f.subject == "Caroline"
        ]
        vectors = provider.embed([event, *session_1])
        assert float(np.max(vectors[1:] @ vectors[0])) >= 0.6
        # "yesterday" in the 8 May 2023 session became a date.
        assert any("7 May 2023" in f for f in session_1)


# -- the decision reviewer -----------------------------------------------------------------------
async def _decide_then_report(nous: Nous, report: str) -> str:
    await nous.pre_turn("s1", "Should billing events move from RabbitMQ to Kafka?", at=T0)
    decision = await nous.record_decision(
        "Move billing events from RabbitMQ to Kafka",
        confidence=0.7,
        session_id="s1",
        occurred_at=T0 + timedelta(seconds=30),
    )
    await nous.post_turn("s1", REPLY, at=T0 + timedelta(minutes=1))
    await nous.end_session("s1", at=T0 + timedelta(minutes=2))
    later = T0 + timedelta(days=14)
    await nous.pre_turn("s2", report, at=later)
    await nous.post_turn("s2", "Good to know; I will remember that for the next migration. " * 3, at=later)
    await nous.end_session("s2", at=later + timedelta(minutes=2))
    await nous.process_events()
    return decision.id


async def test_reviewer_proposes_an_outcome_that_is_only_applied_when_accepted(
    database_url: str, quiet: Settings, provider: EmbeddingProvider
) -> None:
    async with Nous(quiet, database_url=database_url, embedding_provider=provider) as nous:
        decision_id = await _decide_then_report(
            nous, "Moving the billing events to Kafka was a mistake, we rolled it back to RabbitMQ yesterday."
        )
        (pending,) = await nous.outcome_proposals()
        assert pending.id == decision_id and pending.outcome.value == "pending"  # not applied
        assert pending.proposal is not None and pending.proposal.outcome.value == "failure"
        assert "rolled it back" in pending.proposal.reason and pending.proposal.source == "rules"
        assert pending.episode_id is not None  # linked to the conversation it was made in
        both = await asyncio.gather(
            nous.accept_proposal(decision_id), nous.accept_proposal(decision_id), return_exceptions=True
        )  # settled once: the second finds no proposal left
        (accepted,) = [r for r in both if isinstance(r, Decision)]
        assert [type(r).__name__ for r in both if not isinstance(r, Decision)] == ["NotFoundError"]
        assert accepted.outcome.value == "failure" and accepted.proposal is None
        assert "rolled it back" in (accepted.outcome_note or "")
        assert await nous.outcome_proposals() == []


async def test_reviewer_without_evidence_proposes_nothing_and_reject_keeps_it_pending(
    database_url: str, quiet: Settings, provider: EmbeddingProvider
) -> None:
    async with Nous(quiet, database_url=database_url, embedding_provider=provider) as nous:
        await _decide_then_report(nous, "What should we name the new analytics dashboard?")
        assert await nous.outcome_proposals() == []
    async with Nous(
        quiet, database_url=database_url, agent_id="agent-two", embedding_provider=provider
    ) as nous:
        decision_id = await _decide_then_report(
            nous, "The Kafka move for billing events worked great, replays saved the audit."
        )
        (proposal,) = await nous.outcome_proposals()
        assert proposal.proposal is not None and proposal.proposal.outcome.value == "success"
        kept = await nous.reject_proposal(decision_id)
        assert kept.outcome.value == "pending" and kept.proposal is None
        with pytest.raises(NotFoundError):
            await nous.accept_proposal(decision_id)
