"""Decisions: reasons, episode links, review and calibration."""

from __future__ import annotations

import pytest

from nous import Decision, Nous, Reason
from nous.brain.calibration import calibrate
from nous.models import EdgeRelation, Outcome, ReasonType


async def test_decision_with_reasons_and_episode_link(nous: Nous) -> None:
    episode = await nous.start_episode("Choosing a queue", session_id="s9")
    decision = await nous.record_decision(
        "Use RabbitMQ for the job queue",
        confidence=0.75,
        category="architecture",
        stakes="high",
        context="Need retries and dead-lettering",
        pattern="prefer boring tech",
        reasons=[
            {"type": "analysis", "text": "supports DLQ"},
            Reason(type=ReasonType.EMPIRICAL, text="ran it for 3y"),
        ],
        tags=["queue"],
        episode_id=episode.id,
    )
    stored = await nous.get(decision.id)
    assert isinstance(stored, Decision)
    assert [r.type.value for r in stored.reasons] == ["analysis", "empirical"]
    assert stored.episode_id == episode.id and stored.session_id == "s9"
    assert stored.provenance.episode_id == episode.id
    edges = await nous.store.edges(nous.agent_id, [episode.id])
    assert [(e.source_id, e.relation) for e in edges] == [(decision.id, EdgeRelation.PART_OF)]


async def test_review_and_calibration(nous: Nous) -> None:
    a = await nous.record_decision("Ship on Monday", confidence=0.9, category="process")
    b = await nous.record_decision("Adopt tool X", confidence=0.8, category="tooling")
    c = await nous.record_decision("Rewrite the parser", confidence=0.3, category="tooling")
    await nous.record_decision("Still open", confidence=0.6)
    await nous.review_decision(a.id, "success", note="went fine")
    await nous.review_decision(b.id, "failure")
    await nous.review_decision(c.id, "partial")
    reviewed = await nous.get(a.id)
    assert isinstance(reviewed, Decision) and reviewed.outcome is Outcome.SUCCESS
    cal = await nous.calibration()
    expected = ((0.9 - 1) ** 2 + (0.8 - 0) ** 2 + (0.3 - 0.5) ** 2) / 3
    assert cal.overall.resolved == 3 and cal.pending == 1
    assert cal.overall.brier_score == pytest.approx(expected, abs=1e-6)
    assert cal.overall.directional_accuracy == pytest.approx(0.5)
    tooling = next(c for c in cal.per_category if c.category == "tooling")
    assert tooling.resolved == 2
    pending = await nous.brain.decisions.all(outcome="pending")
    assert [d.content for d in pending] == ["Still open"]


def test_calibration_of_nothing_is_empty() -> None:
    cal = calibrate([])
    assert cal.overall.resolved == 0 and cal.overall.brier_score is None
