"""Procedures: how to do things, and how well that has worked."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from nous.memory import MemoryRepository
from nous.memory.repository import build
from nous.memory.write_path import WritePath
from nous.models import Memory, MemoryKind, Procedure, Provenance, WriteResult


class Procedures:
    """Add procedures and record their use."""

    def __init__(self, repo: MemoryRepository, write_path: WritePath) -> None:
        self.repo = repo
        self.write_path = write_path

    async def add(
        self,
        name: str,
        description: str,
        *,
        domain: str | None = None,
        goals: list[str] | None = None,
        core_patterns: list[str] | None = None,
        core_tools: list[str] | None = None,
        core_concepts: list[str] | None = None,
        notes: str | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        frame: str | None = None,
        censors: list[str] | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        occurred_at: datetime | None = None,
        dedup: bool = True,
        actor: str = "api",
    ) -> WriteResult:
        """Store a procedure (learned at ``occurred_at``, default now; with ``user_id``, that
        user's own) through search-before-store."""
        procedure = build(
            Procedure,
            agent_id=self.repo.agent_id,
            name=name,
            content=description,
            domain=domain,
            category=domain,
            goals=goals,
            core_patterns=core_patterns,
            core_tools=core_tools,
            core_concepts=core_concepts,
            notes=notes,
            tags=tags,
            metadata=metadata,
            encoded_frame=frame,
            encoded_censors=censors,
            session_id=session_id,
            user_id=user_id,
            occurred_at=occurred_at,
            valid_from=occurred_at,
            provenance=Provenance(source=actor, session_id=session_id),
        )
        return await self.write_path.store(procedure, actor=actor, dedup=dedup)

    async def record_use(
        self, procedure_id: str, *, success: bool | None = None, actor: str = "api"
    ) -> Procedure:
        """Count an activation and, when known, its success or failure."""
        proc = await self.repo.get_typed(procedure_id, Procedure)

        def counted(current: Memory) -> dict[str, int]:  # from the fresh read of each attempt
            assert isinstance(current, Procedure)
            changes = {"activation_count": current.activation_count + 1}
            if success is True:
                changes["success_count"] = current.success_count + 1
            elif success is False:
                changes["failure_count"] = current.failure_count + 1
            return changes

        updated = await self.repo.update(proc.id, counted, actor=actor, kind=MemoryKind.PROCEDURE)
        assert isinstance(updated, Procedure)
        return updated

    async def all(self, *, limit: int = 50, offset: int = 0) -> list[Procedure]:
        found = await self.repo.query(kinds=(MemoryKind.PROCEDURE,), limit=limit, offset=offset)
        return [p for p in found if isinstance(p, Procedure)]
