"""Decisions: what was chosen, why, how confidently, and how it turned out."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from nous.brain.quality import DEFAULT_GUARDRAILS, Guardrail, is_noise_decision, quality_score
from nous.errors import GuardrailError, InvalidInputError, NotFoundError
from nous.memory import MemoryRepository
from nous.memory.parsing import enum_value
from nous.memory.repository import build, invalid_from_pydantic
from nous.models import (
    Decision,
    DecisionCategory,
    Edge,
    EdgeRelation,
    Episode,
    Memory,
    MemoryKind,
    Outcome,
    Provenance,
    Reason,
    Stakes,
)
from nous.models.brain import OutcomeProposal
from nous.storage.base import PutEdge

log = logging.getLogger(__name__)


def _reasons(raw: Sequence[Reason | Mapping[str, Any]] | None) -> list[Reason]:
    out = []
    for i, reason in enumerate(raw or []):
        try:
            out.append(reason if isinstance(reason, Reason) else Reason.model_validate(reason))
        except ValidationError as exc:
            err = invalid_from_pydantic(exc)
            raise InvalidInputError(f"reasons[{i}].{err}", field=f"reasons[{i}]") from None
    return out


class Decisions:
    """Record, review and list decisions."""

    def __init__(self, repo: MemoryRepository, guardrails: Sequence[Guardrail] = DEFAULT_GUARDRAILS) -> None:
        self.repo = repo
        self.guardrails = tuple(guardrails)

    async def record(
        self,
        description: str,
        *,
        context: str | None = None,
        confidence: float = 0.5,
        category: str | DecisionCategory | None = None,
        stakes: str | Stakes = Stakes.MEDIUM,
        reasons: Sequence[Reason | Mapping[str, Any]] | None = None,
        pattern: str | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        thoughts: list[str] | None = None,
        session_id: str | None = None,
        episode_id: str | None = None,
        user_id: str | None = None,
        frame: str | None = None,
        censors: list[str] | None = None,
        occurred_at: datetime | None = None,
        actor: str = "api",
    ) -> Decision:
        """Store a decision (made at ``occurred_at``, default now); when ``episode_id`` is given it
        is linked to that episode.

        The stored decision carries a ``quality`` score and ``flags`` (possible noise,
        guardrail warnings); a blocking guardrail raises ``GuardrailError`` and stores nothing.
        """
        cat = enum_value(DecisionCategory, category, field="category")
        extra = []
        if episode_id is not None:
            episode = await self.repo.get_typed(episode_id, Episode)
            episode_id = episode.id
            session_id = session_id or episode.session_id
        decision = build(
            Decision,
            agent_id=self.repo.agent_id,
            content=description,
            context=context,
            confidence=confidence,
            category=cat.value if cat else None,
            stakes=enum_value(Stakes, stakes, field="stakes"),
            reasons=_reasons(reasons),
            pattern=pattern,
            tags=tags,
            metadata=metadata,
            thoughts=thoughts,
            session_id=session_id,
            episode_id=episode_id,
            user_id=user_id,
            encoded_frame=frame,
            encoded_censors=censors,
            occurred_at=occurred_at,
            provenance=Provenance(source=actor, session_id=session_id, episode_id=episode_id),
        )
        self._check(decision)
        if episode_id is not None:
            extra.append(
                PutEdge(
                    Edge(
                        source_id=decision.id,
                        target_id=episode_id,
                        relation=EdgeRelation.PART_OF,
                        agent_id=self.repo.agent_id,
                    )
                )
            )
        return await self.repo.create(decision, actor=actor, extra_ops=extra)

    def _check(self, decision: Decision) -> None:
        """Guardrails (block or flag), the noise check (flag only) and the quality score."""
        flags = []
        for rail in self.guardrails:
            if rail.violated_by(
                stakes=decision.stakes, confidence=decision.confidence, reasons=decision.reasons
            ):
                if rail.action == "block":
                    c, reasons = decision.confidence, decision.reasons
                    low = rail.min_confidence is not None and c < rail.min_confidence
                    raise GuardrailError(
                        f"decision refused by guardrail {rail.name!r}: {rail.message}: "
                        f"{rail.remedy(confidence=c, reasons=reasons)}",
                        guardrail=rail.name,
                        problem=rail.message,
                        needs_reasons=rail.require_reasons and not reasons,
                        min_confidence=rail.min_confidence if low else None,
                    )
                flags.append(f"guardrail:{rail.name}: {rail.message}")
        if is_noise_decision(decision.content, decision.reasons):
            log.warning(
                "possible noise decision %r: is this a real choice between alternatives?",
                decision.content[:80],
            )
            flags.append("possible_noise: reads like a status report, not a choice between alternatives")
        decision.flags = flags
        decision.quality = quality_score(
            reasons=decision.reasons, context=decision.context, pattern=decision.pattern, tags=decision.tags
        )

    async def review(
        self, decision_id: str, outcome: str | Outcome, *, note: str | None = None, actor: str = "api"
    ) -> Decision:
        """Record how a decision turned out."""
        result = enum_value(Outcome, outcome, field="outcome")
        changes: dict[str, Any] = {"outcome": result, "proposal": None}  # a review settles any proposal
        if note is not None:
            changes["outcome_note"] = note
        await self.repo.get_typed(decision_id, Decision)
        updated = await self.repo.update(decision_id, changes, actor=actor, kind=MemoryKind.DECISION)
        assert isinstance(updated, Decision)
        return updated

    async def proposals(self, *, limit: int = 100) -> list[Decision]:
        """Pending decisions with a proposed outcome awaiting acceptance, newest first."""
        found = await self.repo.query(kinds=(MemoryKind.DECISION,), limit=10_000)
        return [d for d in found if isinstance(d, Decision) and d.proposal is not None][:limit]

    async def accept_proposal(self, decision_id: str, *, actor: str = "api") -> Decision:
        """Resolve a decision with its proposed outcome (the proposal's reason becomes the note)."""

        def accepted(current: Memory) -> dict[str, Any]:  # from the fresh read of each attempt
            proposal = _proposal_of(current)
            return {
                "outcome": proposal.outcome,
                "outcome_note": f"{proposal.reason} ({proposal.source})",
                "proposal": None,
            }

        return await self._settle(decision_id, accepted, actor)

    async def reject_proposal(self, decision_id: str, *, actor: str = "api") -> Decision:
        """Drop a decision's proposed outcome; the decision stays pending (the audit row keeps it)."""

        def rejected(current: Memory) -> dict[str, Any]:
            _proposal_of(current)
            return {"proposal": None}

        return await self._settle(decision_id, rejected, actor)

    async def _settle(
        self, decision_id: str, change: Callable[[Memory], dict[str, Any]], actor: str
    ) -> Decision:
        """Accept or reject the proposal as one compare-and-swap step: a proposal settled by
        someone else in between is not settled twice."""
        decision = await self.repo.get_typed(decision_id, Decision)
        updated = await self.repo.update(decision.id, change, actor=actor, kind=MemoryKind.DECISION)
        assert isinstance(updated, Decision)
        return updated

    async def all(
        self, *, outcome: str | None = None, category: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[Decision]:
        """Decisions, newest first."""
        wanted = enum_value(Outcome, outcome, field="outcome")
        cat = enum_value(DecisionCategory, category, field="category")
        found = await self.repo.query(
            kinds=(MemoryKind.DECISION,),
            category=cat.value if cat else None,
            limit=limit if wanted is None else 10_000,
            offset=offset,
        )
        decisions = [d for d in found if isinstance(d, Decision)]
        if wanted is not None:
            decisions = [d for d in decisions if d.outcome == wanted][:limit]
        return decisions


def _proposal_of(memory: Memory) -> OutcomeProposal:
    if not isinstance(memory, Decision) or memory.proposal is None:
        raise NotFoundError(f"decision {memory.id} has no outcome proposal")
    return memory.proposal
