"""Memory lifecycle: FSRS-style stability and retrievability, and the states they imply.

Retrievability follows FSRS's power forgetting curve, ``R(t) = (1 + t / (9 S))^-1``, where
``t`` is days since the memory was last reviewed (recalled into use or confirmed) and ``S``
its stability in days (R = 0.9 when t = S). A review raises stability, more so when it
comes late (low R: the spacing effect). States follow R and age, per memory kind:

    ACTIVE  → WEAK      when R falls below ``weak_below``
    WEAK    → DORMANT   when R falls below ``dormant_below``
    DORMANT → ARCHIVED  when R falls below ``archive_below`` and the memory is older than
                        ``archive_after_days``

Dormant and archived memories rank lower in recall but stay retrievable; nothing here ever
deletes. A review brings any memory back to ACTIVE.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from nous.models import LifecycleState, Memory, MemoryKind

REVIEW_GROWTH = 2.0  # stability multiplier added at R = 0 (a review at R = 1 adds REVIEW_BASE)
REVIEW_BASE = 0.2
MAX_STABILITY_DAYS = 36_500.0


@dataclass(frozen=True, slots=True)
class DecayPolicy:
    """How fast one kind of memory fades, and where its state thresholds lie."""

    initial_stability_days: float
    weak_below: float = 0.7
    dormant_below: float = 0.4
    archive_below: float = 0.15
    archive_after_days: float = 180.0


DEFAULT_POLICIES: dict[MemoryKind, DecayPolicy] = {
    MemoryKind.FACT: DecayPolicy(30.0),
    MemoryKind.PROCEDURE: DecayPolicy(60.0),
    MemoryKind.DECISION: DecayPolicy(60.0),
    MemoryKind.EPISODE: DecayPolicy(14.0),
    MemoryKind.TURN: DecayPolicy(7.0, archive_after_days=365.0),
    # Guardrails must not fade away: a censor stays ACTIVE for practical purposes.
    MemoryKind.CENSOR: DecayPolicy(36_500.0, weak_below=0.0, dormant_below=0.0, archive_below=0.0),
}

RANK_FACTOR: dict[LifecycleState, float] = {
    LifecycleState.ACTIVE: 1.0,
    LifecycleState.WEAK: 0.9,
    LifecycleState.DORMANT: 0.7,
    LifecycleState.ARCHIVED: 0.5,
}


def retrievability(stability_days: float, elapsed_days: float) -> float:
    """FSRS power curve: the probability the memory is still 'there' after ``elapsed_days``."""
    return 1.0 / (1.0 + max(0.0, elapsed_days) / (9.0 * max(stability_days, 1e-6)))


def _days(later: datetime, earlier: datetime) -> float:
    return (later - earlier).total_seconds() / 86_400


def last_review(memory: Memory) -> datetime:
    return memory.last_reviewed_at or memory.created_at


def current_retrievability(memory: Memory, now: datetime) -> float:
    return retrievability(memory.stability, _days(now, last_review(memory)))


def state_for(memory: Memory, now: datetime, policy: DecayPolicy) -> LifecycleState:
    """The state a memory should be in at ``now``."""
    r = current_retrievability(memory, now)
    age = _days(now, memory.created_at)
    if r < policy.archive_below and age >= policy.archive_after_days:
        return LifecycleState.ARCHIVED
    if r < policy.dormant_below:
        return LifecycleState.DORMANT
    if r < policy.weak_below:
        return LifecycleState.WEAK
    return LifecycleState.ACTIVE


def reviewed(memory: Memory, now: datetime) -> dict[str, object]:
    """Field changes for a review at ``now``: stability grows, the memory is ACTIVE again."""
    r = current_retrievability(memory, now)
    growth = 1.0 + REVIEW_BASE + REVIEW_GROWTH * (1.0 - r)
    return {
        "stability": min(MAX_STABILITY_DAYS, memory.stability * growth),
        "review_count": memory.review_count + 1,
        "last_reviewed_at": now,
        "lifecycle": LifecycleState.ACTIVE,
    }


def initial_stability(kind: MemoryKind) -> float:
    return DEFAULT_POLICIES[kind].initial_stability_days


def rank_factor(state: LifecycleState) -> float:
    """Multiplier recall applies to a memory's score in this state."""
    return RANK_FACTOR[state]
