"""Censors: what not to do, checked against text and escalated on repeat activations."""

from __future__ import annotations

import re

from pydantic import BaseModel

from nous.memory import MemoryRepository
from nous.memory.parsing import enum_value
from nous.memory.repository import build
from nous.memory.write_path import WritePath
from nous.models import Censor, CensorAction, MemoryKind, Provenance, WriteResult

_ESCALATION = {CensorAction.WARN: CensorAction.BLOCK, CensorAction.BLOCK: CensorAction.ABSOLUTE}


class CensorMatch(BaseModel):
    """A censor whose trigger matched, and the action in force after escalation."""

    censor: Censor
    action: CensorAction
    escalated: bool


def _matches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text, flags=re.IGNORECASE) is not None
    except re.error:
        return pattern.lower() in text.lower()


class Censors:
    """Add censors and check text against them."""

    def __init__(self, repo: MemoryRepository, write_path: WritePath) -> None:
        self.repo = repo
        self.write_path = write_path

    async def add(
        self,
        trigger_pattern: str,
        *,
        action: str | CensorAction = CensorAction.WARN,
        reason: str | None = None,
        domain: str | None = None,
        escalation_threshold: int = 3,
        tags: list[str] | None = None,
        dedup: bool = True,
        actor: str = "api",
    ) -> WriteResult:
        """Store a censor through search-before-store. The trigger is a case-insensitive regex."""
        act = enum_value(CensorAction, action, field="action")
        content = f"{trigger_pattern} — {reason}" if reason else trigger_pattern
        censor = build(
            Censor,
            agent_id=self.repo.agent_id,
            content=content,
            trigger_pattern=trigger_pattern,
            action=act,
            reason=reason,
            domain=domain,
            category=domain,
            escalation_threshold=escalation_threshold,
            tags=tags,
            provenance=Provenance(source=actor),
        )
        return await self.write_path.store(censor, actor=actor, dedup=dedup)

    async def list(self, *, limit: int = 200) -> list[Censor]:
        found = await self.repo.query(kinds=(MemoryKind.CENSOR,), limit=limit)
        return [c for c in found if isinstance(c, Censor)]

    async def check(self, text: str, *, record: bool = True, actor: str = "api") -> list[CensorMatch]:
        """Censors whose trigger matches ``text``; with ``record``, count the activation.

        A warn censor escalates to block (and block to absolute) once its activation
        count reaches its escalation threshold.
        """
        out: list[CensorMatch] = []
        for censor in await self.list(limit=10_000):
            if not _matches(censor.trigger_pattern, text):
                continue
            action, escalated = censor.action, False
            if record:
                count = censor.activation_count + 1
                changes: dict[str, object] = {"activation_count": count}
                if count >= censor.escalation_threshold and action in _ESCALATION:
                    action, escalated = _ESCALATION[action], True
                    changes["action"] = action
                updated = await self.repo.update(censor.id, changes, actor=actor, kind=MemoryKind.CENSOR)
                assert isinstance(updated, Censor)
                censor = updated
            out.append(CensorMatch(censor=censor, action=action, escalated=escalated))
        return out
