"""Is it a decision, how well is it recorded, and may it be recorded as is? (spec 000 C2)

- **Noise** (soft): status reports and activity logs ("Git clone success", "completed.")
  are not decisions. They are still recorded, with a ``possible_noise`` flag and a logged
  warning: hard blocking could lose a real decision (spec D3).
- **Quality** (0–1): a decision is worth more with reasons of several kinds, context, a
  pattern and tags.
- **Guardrails** (configurable, ``NOUS_DECISION_GUARDRAILS`` as JSON): rules such as "high
  stakes need confidence ≥ 0.5" or "critical decisions need reasons" that either flag the
  decision (``warn``) or refuse it with a clear message (``block``, ``GuardrailError``).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from nous.models import Reason, Stakes

NOISE_KEYWORDS = frozenset(
    {
        "completed",
        "done",
        "finished",
        "success",
        "started",
        "status",
        "progress",
        "update",
        "checked",
        "confirmed",
    }
)
MIN_DECISION_CHARS = 20
_WORD = re.compile(r"\w+")


def is_noise_decision(description: str, reasons: list[Reason]) -> bool:
    """True when the description reads as a status report rather than a choice.

    Very short with no reasons, empty, or mostly noise keywords with no reasons; words are
    matched after stripping punctuation ("completed." counts as "completed").
    """
    text = description.lower().strip()
    if len(text) < MIN_DECISION_CHARS and not reasons:
        return True
    words = set(_WORD.findall(text))
    if not words:
        return True
    return len(words & NOISE_KEYWORDS) / len(words) > 0.5 and not reasons


def quality_score(
    *,
    reasons: list[Reason],
    context: str | None,
    pattern: str | None,
    tags: list[str],
) -> float:
    """0–1: reasons (0.35), their diversity (0.2), context (0.2), pattern (0.15), tags (0.1)."""
    score = 0.35 * min(len(reasons), 2) / 2
    score += 0.2 * min(len({r.type for r in reasons}), 3) / 3
    score += 0.2 if context and context.strip() else 0.0
    score += 0.15 if pattern and pattern.strip() else 0.0
    score += 0.1 if tags else 0.0
    return round(score, 4)


class Guardrail(BaseModel):
    """A rule a decision must meet; it applies to the listed stakes (all when empty)."""

    name: str = Field(min_length=1, max_length=100)
    action: Literal["warn", "block"] = "warn"
    stakes: list[Stakes] = Field(default_factory=list)
    min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    require_reasons: bool = False
    message: str = Field(min_length=1, max_length=500)

    def violated_by(self, *, stakes: Stakes, confidence: float, reasons: list[Reason]) -> bool:
        if self.stakes and stakes not in self.stakes:
            return False
        if self.min_confidence is not None and confidence < self.min_confidence:
            return True
        return self.require_reasons and not reasons

    def remedy(self, *, confidence: float, reasons: list[Reason]) -> str:
        """What would satisfy the rule, in the terms of the Python and REST arguments."""
        wants = []
        if self.require_reasons and not reasons:
            wants.append("pass reasons=[{type, text}]")
        if self.min_confidence is not None and confidence < self.min_confidence:
            wants.append(f"pass confidence >= {self.min_confidence:g}")
        return " and ".join(wants)


DEFAULT_GUARDRAILS = (
    Guardrail(
        name="critical-needs-reasons",
        action="block",
        stakes=[Stakes.CRITICAL],
        require_reasons=True,
        message="a critical decision needs at least one reason",
    ),
    Guardrail(
        name="high-stakes-low-confidence",
        action="warn",
        stakes=[Stakes.HIGH, Stakes.CRITICAL],
        min_confidence=0.5,
        message="high-stakes decision taken with confidence below 0.5: consider gathering more evidence",
    ),
    Guardrail(
        name="no-reasons",
        action="warn",
        require_reasons=True,
        message="no reasons recorded: calibration and later review need them",
    ),
)
