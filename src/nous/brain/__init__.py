"""Brain: decisions and calibration."""

from __future__ import annotations

from nous.brain.calibration import calibrate
from nous.brain.decisions import Decisions
from nous.memory import MemoryRepository
from nous.models import Calibration, Decision, MemoryKind


class Brain:
    """Decisions of one agent and how well calibrated they are."""

    def __init__(self, repo: MemoryRepository) -> None:
        self.repo = repo
        self.decisions = Decisions(repo)

    async def calibration(self) -> Calibration:
        found = await self.repo.query(kinds=(MemoryKind.DECISION,), limit=1_000_000)
        return calibrate(d for d in found if isinstance(d, Decision))


__all__ = ["Brain", "Decisions", "calibrate"]
