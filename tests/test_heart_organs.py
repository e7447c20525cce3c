"""Episodes, procedures, censors and working memory."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nous import Episode, InvalidInputError, Nous, Procedure
from nous.models import CensorAction, CompressionTier, EpisodeOutcome


async def test_episode_start_end_and_listing(nous: Nous) -> None:
    started = datetime(2026, 2, 1, 10, tzinfo=UTC)
    ep = await nous.start_episode(
        "Planning the ski trip",
        trigger="user asked",
        frame="task",
        session_id="s1",
        started_at=started,
        participants=["Ana"],
    )
    assert ep.compression_tier is CompressionTier.RAW and ep.outcome is EpisodeOutcome.ONGOING
    closed = await nous.end_episode(
        ep.id,
        summary="Booked Val Thorens",
        outcome="success",
        lessons=["book early"],
        structured_summary={"topics": ["ski"]},
    )
    assert isinstance(closed, Episode)
    assert closed.ended_at is not None and closed.outcome is EpisodeOutcome.SUCCESS
    listed = await nous.heart.episodes.all(session_id="s1")
    assert [e.id for e in listed] == [ep.id]
    assert listed[0].lessons == ["book early"] and listed[0].encoded_frame == "task"
    with pytest.raises(InvalidInputError, match="outcome"):
        await nous.end_episode(ep.id, outcome="meh")


async def test_procedure_effectiveness(nous: Nous) -> None:
    result = await nous.add_procedure(
        "Rollback",
        "Revert the deploy and purge caches",
        goals=["restore service"],
        core_tools=["kubectl"],
        domain="ops",
    )
    proc = result.memory
    assert isinstance(proc, Procedure) and proc.effectiveness is None
    await nous.heart.procedures.record_use(proc.id, success=True)
    await nous.heart.procedures.record_use(proc.id, success=True)
    updated = await nous.heart.procedures.record_use(proc.id, success=False)
    assert isinstance(updated, Procedure)
    assert updated.activation_count == 3 and updated.effectiveness == pytest.approx(2 / 3)
    stored = await nous.get(proc.id)
    assert isinstance(stored, Procedure) and stored.effectiveness == pytest.approx(2 / 3)


async def test_censor_matches_and_escalates(nous: Nous) -> None:
    censor = (
        await nous.add_censor(r"rm\s+-rf\s+/", reason="destroys the host", escalation_threshold=2)
    ).memory
    assert censor.action is CensorAction.WARN  # type: ignore[attr-defined]
    assert await nous.check_censors("please list the files") == []
    first = await nous.check_censors("run rm -rf / now")
    assert [(m.action, m.escalated) for m in first] == [(CensorAction.WARN, False)]
    second = await nous.check_censors("RM  -RF /tmp")
    assert [(m.action, m.escalated) for m in second] == [(CensorAction.BLOCK, True)]
    stored = await nous.get(censor.id)
    assert stored.activation_count == 2 and stored.action is CensorAction.BLOCK  # type: ignore[attr-defined]


async def test_working_memory_persists_and_caps_items(nous: Nous) -> None:
    wm = nous.heart.working_memory
    await wm.set_task("s1", "Plan the offsite", frame="task")
    for i in range(25):
        await wm.focus("s1", f"item {i}", relevance=i / 100)
    await wm.open_thread("s1", "venue not chosen")
    state = await wm.get("s1")
    assert state.current_task == "Plan the offsite" and state.frame == "task"
    assert len(state.items) == 20
    assert min(i.relevance for i in state.items) == pytest.approx(0.05)
    assert state.open_threads == ["venue not chosen"]
    assert (await wm.get("other")).items == []
    with pytest.raises(InvalidInputError, match="relevance"):
        await wm.focus("s1", "x", relevance=2.0)
    history = await nous.store.history(nous.agent_id, "working:s1")  # audited like any memory
    assert len(history) == 1 + 25 + 1
    assert history[0].new_value == {"current_task": "Plan the offsite", "frame": "task"}
    assert history[-1].new_value is not None and history[-1].new_value["open_threads"] == ["venue not chosen"]


async def test_links_are_unique_and_checked(nous: Nous) -> None:
    a = await nous.learn("Kafka is our event bus")
    b = await nous.learn("The orders service publishes to Kafka", dedup=False)
    assert await nous.link(a.id, b.id, "relates_to") is True
    assert await nous.link(b.id, a.id, "relates_to") is False  # symmetric: the same link
    assert await nous.link(a.id, b.id, "relates_to") is False
    assert await nous.link(a.id, b.id, "supports") is True
    assert len(await nous.store.edges(nous.agent_id, [a.id])) == 2
    with pytest.raises(InvalidInputError, match="itself"):
        await nous.link(a.id, a.id)
    with pytest.raises(InvalidInputError, match="relation"):
        await nous.link(a.id, b.id, "likes")
