"""Each retrieval signal decides a case on its own, with the real embedding model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from nous import Episode, Nous

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


async def test_time_decides_between_equally_relevant_memories_when_asked_what_is_current(nous: Nous) -> None:
    old = await nous.learn(
        "The team lunch is at the noodle bar on Main Street",
        occurred_at=NOW - timedelta(days=90),
        dedup=False,
    )
    new = await nous.learn(
        "The team lunch is at the noodle bar on Oak Street", occurred_at=NOW - timedelta(days=1), dedup=False
    )
    hits = await nous.recall("where is the team lunch at the moment?", now=NOW, limit=2)
    assert [h.id for h in hits] == [new.id, old.id]
    assert hits[0].signals["recency"] > hits[1].signals.get("recency", 0.0)


async def test_time_expression_filters_to_its_window(nous: Nous) -> None:
    await nous.learn("We decided to drop the mobile beta", occurred_at=NOW - timedelta(days=40))
    yesterday = await nous.learn("We decided to hire a second designer", occurred_at=NOW - timedelta(days=1))
    # The window decides the order; both memories share almost nothing else with the question,
    # so neither is a confident answer (scores 0.02 and 0.004): no minimum score here.
    hits = await nous.recall("what did we decide yesterday?", now=NOW, min_score=0)
    assert hits[0].id == yesterday.id and hits[0].signals["time_window"] == 1.0
    # The window is read from words, so it is soft: what lies outside competes with its odds cut.
    for other in hits[1:]:
        assert "outside_window" in other.signals and other.score < hits[0].score * 0.5
    # a window with nothing in it falls back to the whole store
    fallback = await nous.recall("what did we decide in March 2020?", now=NOW, min_score=0)
    assert len(fallback) == 2


async def test_anchor_event_resolves_before_and_after(nous: Nous) -> None:
    trip = NOW - timedelta(days=10)
    await nous.start_episode("Ski trip to Val Thorens", started_at=trip)
    bought = await nous.learn("I bought new goggles and gloves", occurred_at=trip - timedelta(days=5))
    later = await nous.learn("I bought a knee brace and gloves", occurred_at=trip + timedelta(days=2))
    before = await nous.recall("what did I buy before the ski trip?", now=NOW, kinds="fact")
    assert before[0].id == bought.id and all("outside_window" in h.signals for h in before[1:])
    after = await nous.recall("what did I buy after the ski trip?", now=NOW, kinds="fact")
    assert after[0].id == later.id and all("outside_window" in h.signals for h in after[1:])


async def test_graph_brings_a_linked_neighbour(nous: Nous) -> None:
    falcon = await nous.learn("Project Falcon is the new billing platform")
    blocker = await nous.learn("The replication bug blocks the ledger cutover")
    unrelated = await nous.learn("The replication of the garden fern takes spores")
    await nous.link(blocker.id, falcon.id, "relates_to")
    # The neighbour shares no word and little meaning with the question: graph evidence lifts it
    # into the results' order, not above the default minimum score.
    hits = await nous.recall("Project Falcon", limit=5, min_score=0)
    ids = [h.id for h in hits]
    assert ids[0] == falcon.id
    assert blocker.id in ids and "graph" in hits[ids.index(blocker.id)].signals
    assert unrelated.id not in ids or ids.index(unrelated.id) > ids.index(blocker.id)


async def test_same_session_evidence_is_lifted(nous: Nous) -> None:
    await nous.ingest(
        '{"sessions": ['
        '{"id": "a", "started_at": "2026-01-05T10:00:00Z", "messages": ['
        '{"role": "user", "name": "Ana", "content": "I finally adopted a dog from the shelter."},'
        '{"role": "user", "name": "Ben", "content": "Amazing! What is its name?"},'
        '{"role": "user", "name": "Ana", "content": "Her name is Biscuit, she is a beagle."}]},'
        '{"id": "b", "started_at": "2026-02-05T10:00:00Z", "messages": ['
        '{"role": "user", "name": "Ana", "content": "Work has been busy with the audit."},'
        '{"role": "user", "name": "Ben", "content": "Do you still like beagles?"}]}]}'
    )
    hits = await nous.recall("What is the name of Ana's adopted dog?", limit=3, kinds="turn")
    assert any("Biscuit" in h.content for h in hits)
    assert all(h.memory.session_id is not None for h in hits)
    in_a = [h.signals["session"] for h in hits if h.memory.session_id and h.memory.session_id.endswith(":a")]
    in_b = [
        h.signals.get("session", 0.0)
        for h in hits
        if h.memory.session_id and h.memory.session_id.endswith(":b")
    ]
    assert len(in_a) >= 2 and min(in_a) > max(in_b, default=0.0)


async def test_frame_and_censor_boosts(nous: Nous) -> None:
    plain = await nous.learn("Restart the worker pods when the queue backs up")
    debug = await nous.learn(
        "Restart the worker pods when the queue stalls",
        frame="debug",
        censors=["no-prod-writes"],
    )
    in_debug = await nous.recall("what to do when the queue is stuck", frame="debug", limit=2)
    assert in_debug[0].id == debug.id and in_debug[0].signals["frame_boost"] == 1.3
    with_censor = await nous.recall(
        "what to do when the queue is stuck", active_censors=["no-prod-writes"], limit=2
    )
    top = {h.id: h for h in with_censor}
    assert top[debug.id].signals["censor_boost"] == 1.2
    assert "censor_boost" not in top[plain.id].signals
    other_frame = await nous.recall("what to do when the queue is stuck", frame="task", limit=2)
    assert all("frame_boost" not in h.signals for h in other_frame)


async def test_recap_brings_recent_episodes_whatever_their_topic(nous: Nous) -> None:
    """Spec 004's ski-trip case: a recap question must surface the latest conversation."""
    for days, title in (
        (9, "Talked about what we discussed in the architecture review"),
        (8, "Recent discussion about our conversation logging"),
    ):
        ep = await nous.start_episode(title, started_at=NOW - timedelta(days=days))
        await nous.end_episode(ep.id, summary=title, ended_at=NOW - timedelta(days=days) + timedelta(hours=1))
    ski = await nous.start_episode(
        "Ski trip planning: Val Thorens chalets in February", started_at=NOW - timedelta(hours=3)
    )
    await nous.end_episode(ski.id, summary="Booked a chalet", ended_at=NOW - timedelta(hours=2))
    hits = await nous.recall("what did we talk about recently?", now=NOW, limit=3)
    assert hits[0].id == ski.id and hits[0].signals["recap"] == 1
    recent = await nous.recall_recent(limit=5, until=NOW)  # the last 48 hours before NOW
    assert recent[0].id == ski.id and isinstance(recent[0], Episode) and recent[0].ended_at is not None


async def test_near_duplicates_are_not_repeated(nous: Nous) -> None:
    a = await nous.learn("The VPN requires the hardware token")
    await nous.learn("The VPN requires the hardware token.")
    other = await nous.learn("The VPN gateway is in Frankfurt")
    hits = await nous.recall("VPN token", limit=3)
    assert [h.id for h in hits].count(a.id) <= 1
    assert len({h.content.rstrip(".") for h in hits}) == len(hits)
    assert other.id in [h.id for h in hits]


async def test_similar_is_pure_cosine(nous: Nous) -> None:
    fact = await nous.learn("Maya prefers tea over coffee")
    await nous.record_decision("Serve tea at the offsite")
    found = await nous.similar("Maya likes tea more than coffee", kinds="fact")
    assert found[0][0].id == fact.id and 0.7 < found[0][1] <= 1.0
    assert all(m.kind.value == "fact" for m, _ in found)
