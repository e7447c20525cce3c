"""Brain: decisions and calibration."""

from __future__ import annotations

from collections.abc import Sequence

from nous.brain.calibration import calibrate
from nous.brain.decisions import Decisions
from nous.brain.quality import DEFAULT_GUARDRAILS, Guardrail
from nous.memory import MemoryRepository
from nous.models import Calibration, Decision, MemoryKind


class Brain:
    """Decisions of one agent and how well calibrated they are."""

    def __init__(self, repo: MemoryRepository, guardrails: Sequence[Guardrail] = DEFAULT_GUARDRAILS) -> None:
        self.repo = repo
        self.decisions = Decisions(repo, guardrails)

    async def calibration(self) -> Calibration:
        found = await self.repo.query(kinds=(MemoryKind.DECISION,), limit=1_000_000)
        return calibrate(d for d in found if isinstance(d, Decision))


__all__ = ["DEFAULT_GUARDRAILS", "Brain", "Decisions", "Guardrail", "calibrate"]
