"""Brain: decisions with typed reasons, outcomes and calibration."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from nous._time import utcnow
from nous.models.base import Memory, MemoryKind


class DecisionCategory(StrEnum):
    ARCHITECTURE = "architecture"
    PROCESS = "process"
    TOOLING = "tooling"
    SECURITY = "security"
    INTEGRATION = "integration"
    OTHER = "other"


class Stakes(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class Outcome(StrEnum):
    PENDING = "pending"
    SUCCESS = "success"
    PARTIAL = "partial"
    FAILURE = "failure"


class ReasonType(StrEnum):
    ANALYSIS = "analysis"
    PATTERN = "pattern"
    EMPIRICAL = "empirical"
    AUTHORITY = "authority"
    INTUITION = "intuition"
    ANALOGY = "analogy"
    ELIMINATION = "elimination"
    CONSTRAINT = "constraint"


class Reason(BaseModel):
    """One typed reason behind a decision."""

    model_config = ConfigDict(extra="forbid")

    type: ReasonType
    text: str = Field(min_length=1, max_length=5000)


class OutcomeProposal(BaseModel):
    """How a pending decision seems to have turned out, from later signals: a proposal that a
    user or an agent accepts or rejects, never applied on its own."""

    model_config = ConfigDict(extra="forbid")

    outcome: Outcome
    reason: str = Field(max_length=1000)
    source: str = Field(default="rules", max_length=50)  # rules | llm
    evidence_ids: list[str] = Field(default_factory=list)
    episode_id: str | None = None
    proposed_at: datetime = Field(default_factory=utcnow)


class Decision(Memory):
    """A choice the agent made, why, how sure it was, and how it turned out."""

    kind: ClassVar[MemoryKind] = MemoryKind.DECISION

    context: str | None = None
    pattern: str | None = Field(default=None, max_length=1000)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False)
    stakes: Stakes = Stakes.MEDIUM
    outcome: Outcome = Outcome.PENDING
    outcome_note: str | None = None
    reasons: list[Reason] = Field(default_factory=list)
    thoughts: list[str] = Field(default_factory=list)
    episode_id: str | None = None
    quality: float | None = Field(default=None, ge=0.0, le=1.0, description="how well it is recorded")
    flags: list[str] = Field(default_factory=list, description="noise and guardrail warnings")
    proposal: OutcomeProposal | None = None  # the reviewer's proposed outcome, awaiting a decision

    @property
    def description(self) -> str:
        return self.content

    def embedding_text(self) -> str:
        return "\n".join(p for p in (self.content, self.context or "", self.pattern or "") if p)

    def keyword_context(self) -> str | None:
        """Its reasons and outcome note: "why did we ..." is answered in their words."""
        parts = [r.text for r in self.reasons] + [self.outcome_note or ""]
        return "\n".join(p for p in parts if p) or None


class CategoryCalibration(BaseModel):
    """Calibration figures over resolved decisions of one category (or all)."""

    category: str
    resolved: int
    brier_score: float | None
    directional_accuracy: float | None
    mean_confidence: float | None
    success_rate: float | None


class ConfidenceBin(BaseModel):
    """Resolved decisions whose confidence fell in [low, high): how often they succeeded. A
    calibrated agent's success rate in each bin is close to the bin's mean confidence."""

    low: float
    high: float
    resolved: int
    mean_confidence: float | None
    success_rate: float | None


class Calibration(BaseModel):
    """How well the agent's confidence predicted outcomes."""

    overall: CategoryCalibration
    per_category: list[CategoryCalibration]
    pending: int
    bins: list[ConfidenceBin] = Field(
        default_factory=list,
        description="Confidence in tenths against outcome rates (a reliability diagram).",
    )
