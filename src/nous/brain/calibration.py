"""Calibration: how well stated confidence predicted outcomes (Brier score)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from nous.models import Calibration, CategoryCalibration, Decision, Outcome
from nous.models.brain import ConfidenceBin

OUTCOME_VALUE = {Outcome.SUCCESS: 1.0, Outcome.PARTIAL: 0.5, Outcome.FAILURE: 0.0}
BINS = 10  # tenths of confidence: fine enough to see a bias, coarse enough to fill with few decisions


def _figures(category: str, decisions: list[Decision]) -> CategoryCalibration:
    resolved = [d for d in decisions if d.outcome in OUTCOME_VALUE]
    if not resolved:
        return CategoryCalibration(
            category=category,
            resolved=0,
            brier_score=None,
            directional_accuracy=None,
            mean_confidence=None,
            success_rate=None,
        )
    values = [OUTCOME_VALUE[d.outcome] for d in resolved]
    brier = sum((d.confidence - v) ** 2 for d, v in zip(resolved, values, strict=True)) / len(resolved)
    binary = [(d.confidence, v) for d, v in zip(resolved, values, strict=True) if v != 0.5]
    directional = sum((c >= 0.5) == (v == 1.0) for c, v in binary) / len(binary) if binary else None
    return CategoryCalibration(
        category=category,
        resolved=len(resolved),
        brier_score=round(brier, 6),
        directional_accuracy=directional,
        mean_confidence=sum(d.confidence for d in resolved) / len(resolved),
        success_rate=sum(values) / len(values),
    )


def calibrate(decisions: Iterable[Decision]) -> Calibration:
    """Brier score (0 is perfect, 0.25 is always saying 50%) overall and per category."""
    all_decisions = list(decisions)
    by_category: dict[str, list[Decision]] = defaultdict(list)
    for d in all_decisions:
        by_category[d.category or "uncategorised"].append(d)
    return Calibration(
        overall=_figures("all", all_decisions),
        per_category=[_figures(c, ds) for c, ds in sorted(by_category.items())],
        pending=sum(d.outcome == Outcome.PENDING for d in all_decisions),
        bins=_bins(all_decisions),
    )


def _bins(decisions: list[Decision]) -> list[ConfidenceBin]:
    """Resolved decisions by confidence tenth (1.0 falls in the last), each with its success rate."""
    grouped: list[list[Decision]] = [[] for _ in range(BINS)]
    for d in decisions:
        if d.outcome in OUTCOME_VALUE:
            grouped[min(int(d.confidence * BINS), BINS - 1)].append(d)
    return [
        ConfidenceBin(
            low=i / BINS,
            high=(i + 1) / BINS,
            resolved=len(group),
            mean_confidence=sum(d.confidence for d in group) / len(group) if group else None,
            success_rate=sum(OUTCOME_VALUE[d.outcome] for d in group) / len(group) if group else None,
        )
        for i, group in enumerate(grouped)
    ]
