"""Frame-tagged encoding, live: every row of the spec's test table, on both backends with the real
model, plus the context budget as a property (hypothesis) over whatever the retrieved sections hold."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nous import Nous
from nous.cognitive import FRAMES
from nous.cognitive.context import Context, ContextInputs, build_context
from nous.cognitive.frames import Budget, Frame
from nous.errors import InvalidInputError
from nous.models import CompressionTier, Decision, Episode, Fact, MemoryKind, Procedure, RecallHit, Turn

QUEUE = "what to do when the queue is stuck"


async def _boosts(nous: Nous, **kw: object) -> dict[str, RecallHit]:
    hits = await nous.recall(QUEUE, limit=5, reinforce=False, **kw)  # type: ignore[arg-type]
    return {h.id: h for h in hits}


async def test_learn_fact_with_frame_and_censors(nous: Nous) -> None:
    fact = (
        await nous.learn("Restart the worker pods when the queue stalls", frame="debug", censors=["c1"])
    ).memory
    stored = await nous.get(fact.id)
    assert stored.encoded_frame == "debug" and stored.encoded_censors == ["c1"]


async def test_learn_fact_without_frame_is_backward_compatible(nous: Nous) -> None:
    fact = (await nous.learn("Restart the worker pods when the queue stalls")).memory
    stored = await nous.get(fact.id)
    assert stored.encoded_frame is None and stored.encoded_censors is None


async def test_frame_boost_same_different_and_null(nous: Nous) -> None:
    debug = (await nous.learn("Restart the worker pods when the queue stalls", frame="debug")).memory
    task = (await nous.learn("Drain the queue before the nightly deploy", frame="task")).memory
    plain = (await nous.learn("The queue is a RabbitMQ cluster with three nodes")).memory
    hits = await _boosts(nous, frame="debug")
    assert hits[debug.id].signals["frame_boost"] == 1.3
    assert "frame_boost" not in hits[task.id].signals  # a different frame: no boost, no penalty
    assert "frame_boost" not in hits[plain.id].signals  # no frame: neutral
    assert "frame_boost" not in (await _boosts(nous))[debug.id].signals  # no frame asked: none


@pytest.mark.parametrize(
    ("encoded", "active", "boost"), [(["a", "b"], ["a", "b"], 1.2), (["a"], ["a", "b"], 1.1)]
)
async def test_censor_overlap_full_and_partial(
    nous: Nous, encoded: list[str], active: list[str], boost: float
) -> None:
    fact = (await nous.learn("Restart the worker pods when the queue stalls", censors=encoded)).memory
    hits = await _boosts(nous, active_censors=active)
    assert hits[fact.id].signals["censor_boost"] == pytest.approx(boost)


async def test_censor_overlap_none_is_neutral(nous: Nous) -> None:
    fact = (await nous.learn("Restart the worker pods when the queue stalls", censors=["x"])).memory
    hits = await _boosts(nous, active_censors=["y"])
    assert "censor_boost" not in hits[fact.id].signals


async def test_new_episodes_are_raw(nous: Nous) -> None:
    episode = await nous.start_episode("Planning the queue migration", frame="task")
    stored = await nous.get(episode.id)
    assert isinstance(stored, Episode) and stored.compression_tier == CompressionTier.RAW
    assert stored.encoded_frame == "task"


async def test_procedures_and_decisions_carry_frame_and_censors(nous: Nous) -> None:
    proc = (
        await nous.add_procedure(
            "queue restart", "Scale the workers to zero, then back", frame="debug", censors=["c1"]
        )
    ).memory
    decision = await nous.record_decision(
        "Use a dead-letter queue instead of retrying forever",
        reasons=[{"type": "analysis", "text": "retries stall the queue"}],
        frame="decision",
        censors=["c1", "c2"],
    )
    p, d = await nous.get(proc.id), await nous.get(decision.id)
    assert isinstance(p, Procedure) and p.encoded_frame == "debug" and p.encoded_censors == ["c1"]
    assert isinstance(d, Decision) and d.encoded_frame == "decision" and d.encoded_censors == ["c1", "c2"]


async def test_writes_in_a_live_session_are_stamped_with_its_frame_and_censors(nous: Nous) -> None:
    censor = (await nous.add_censor("drop table", action="block", reason="no destructive SQL")).memory
    await nous.pre_turn("s", "I'm getting a KeyError when I run the import script")
    fact = (await nous.learn("The import script expects a 'sku' column", session_id="s")).memory
    proc = (await nous.add_procedure("csv import", "Check the header row first", session_id="s")).memory
    decision = await nous.record_decision(
        "Validate CSV headers before importing instead of failing mid-way",
        reasons=[{"type": "analysis", "text": "half-imported files are worse"}],
        session_id="s",
    )
    wm = await nous.heart.working_memory.focus("s", "the sku column is missing")
    for memory_id in (fact.id, proc.id, decision.id):
        stored = await nous.get(memory_id)
        assert stored.encoded_frame == "debug" and stored.encoded_censors == [censor.id]
    assert wm.items[-1].frame == "debug" and wm.items[-1].censors == [censor.id]
    with pytest.raises(InvalidInputError, match="unknown frame"):
        await nous.learn("Anything", frame="dreaming")


async def test_a_warning_censor_reaches_the_next_context_and_a_block_refuses(nous: Nous) -> None:
    await nous.add_censor(r"force[- ]push", action="warn", reason="force-pushing rewrites shared history")
    await nous.add_censor(r"drop database", action="block", reason="never drop a database")
    await nous.pre_turn("s", "Fix the failing build on the main branch")
    warned = await nous.check_action("git push --force-push origin main", session_id="s")
    assert warned.decision == "warn"
    blocked = await nous.check_action("psql -c 'drop database orders'", session_id="s")
    assert blocked.decision == "block" and "never drop a database" in " ".join(blocked.reasons)
    ctx = await nous.pre_turn("s", "What should I do next with the build?")
    censors = ctx.section("censors")
    assert censors is not None and any(
        "rewrites shared history" in i.text and i.kind == "warning" for i in censors.items
    )


# -- the budget as a property --------------------------------------------------------------------
_T0 = datetime(2026, 1, 1, tzinfo=UTC)
_texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=3000
)
_kinds = st.sampled_from(
    [MemoryKind.FACT, MemoryKind.TURN, MemoryKind.EPISODE, MemoryKind.DECISION, MemoryKind.PROCEDURE]
)


def _memory(kind: MemoryKind, text: str) -> Fact | Turn | Episode | Decision | Procedure:
    text = text.strip() or "x"
    match kind:
        case MemoryKind.FACT:
            return Fact(agent_id="a", content=text, occurred_at=_T0)
        case MemoryKind.TURN:
            return Turn(agent_id="a", content=text, occurred_at=_T0)
        case MemoryKind.EPISODE:
            return Episode(agent_id="a", content=text, title=text[:400], started_at=_T0, occurred_at=_T0)
        case MemoryKind.DECISION:
            return Decision(agent_id="a", content=text, occurred_at=_T0)
        case _:
            return Procedure(agent_id="a", name="p", content=text, occurred_at=_T0)


def _hits(items: list[tuple[MemoryKind, str, float]]) -> list[RecallHit]:
    out = []
    for kind, text, score in items:
        memory = _memory(kind, text)
        out.append(
            RecallHit(
                id=memory.id, kind=kind, content=memory.content, score=score, occurred_at=_T0, memory=memory
            )
        )
    return out


def _context(frame: Frame, budget: Budget, hits: list[RecallHit], **more: Any) -> Context:
    return build_context(
        ContextInputs(
            session_id="s", frame=frame, frame_confidence=1.0, query="q", budget=budget, hits=hits, **more
        )
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    frame=st.sampled_from(sorted(FRAMES)),
    items=st.lists(st.tuples(_kinds, _texts, st.floats(0, 1)), max_size=40),
    extra=st.integers(0, 6000),
    said=st.lists(_texts, max_size=3),
)
def test_context_never_exceeds_its_budget(
    frame: str, items: list[tuple[MemoryKind, str, float]], extra: int, said: list[str]
) -> None:
    chosen = FRAMES[frame]
    budget = chosen.budget.model_copy(update={"total": chosen.budget.fixed + extra})
    hits = _hits(items)
    ctx = _context(chosen, budget, hits, already_said=said)
    assert ctx.tokens <= budget.total
    for section in ctx.sections:
        assert section.tokens <= section.budget or not section.items
    shown = set(ctx.included_ids())
    assert shown <= {h.id for h in hits}
    assert len(shown) + sum(len(s.dropped) for s in ctx.sections if s.name not in {"frame"}) >= len(
        [
            h
            for h in hits
            if h.kind
            in {
                MemoryKind.FACT,
                MemoryKind.TURN,
                MemoryKind.EPISODE,
                MemoryKind.DECISION,
                MemoryKind.PROCEDURE,
            }
        ]
    )  # every retrieved item is either shown or reported dropped


_WORDS = [
    "ski",
    "chalet",
    "lift",
    "pass",
    "school",
    "rental",
    "train",
    "Verbier",
    "snow",
    "boots",
    "gloves",
    "helmet",
    "map",
    "cafe",
    "fondue",
    "bus",
]
_TURNS = [  # distinct messages (no two near-duplicates), about 25 tokens each
    (
        MemoryKind.TURN,
        f"Turn {i}: " + " ".join(_WORDS[(i * k) % len(_WORDS)] + str(i * k) for k in range(1, 9)),
        0.5,
    )
    for i in range(150)
]


@pytest.mark.parametrize("fill", [False, True])
def test_what_a_section_leaves_goes_to_the_sections_that_ran_out(fill: bool) -> None:
    """One short episode took a share of the room it does not use: the turns, which ran out of
    theirs, get what it left (within their ceiling; beyond it when the caller chose the total)."""
    question = FRAMES["question"]
    total = 4000
    budget = question.budget.model_copy(update={"total": total})
    hits = _hits([(MemoryKind.EPISODE, "Ski trip planning", 0.6), *_TURNS])
    ctx = _context(question, budget, hits, fill=fill)
    turns, episodes = ctx.section("turns"), ctx.section("episodes")
    assert turns is not None and episodes is not None and ctx.tokens <= total
    assert episodes.budget == episodes.tokens > 0  # it keeps what it used, no more
    if fill:
        assert ctx.tokens >= 0.95 * total  # the room is used
    else:
        assert turns.budget <= question.budget.turns  # never above its ceiling
        assert turns.tokens >= question.budget.turns - 60  # and that ceiling is used
