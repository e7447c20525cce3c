"""Facts: what the agent knows."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from nous.errors import InvalidInputError
from nous.memory import MemoryRepository
from nous.memory.parsing import enum_value
from nous.memory.repository import build
from nous.memory.write_path import WritePath
from nous.models import (
    Fact,
    FactCategory,
    HistoryAction,
    MemoryKind,
    Provenance,
    WriteResult,
)

# A fact states something: "x" or "ok" is a keystroke, not a fact. Fewer letters or digits than
# this is refused; the write path checks the rest (empty, too long, control characters).
MIN_FACT_CHARS = 3
_ALNUM = re.compile(r"[^\W_]")


def check_fact_content(content: object) -> None:
    """InvalidInputError if ``content`` is too short to state anything."""
    if isinstance(content, str) and content.strip() and len(_ALNUM.findall(content)) < MIN_FACT_CHARS:
        raise InvalidInputError(
            f"fact content {content.strip()!r} is too short to state anything "
            f"(at least {MIN_FACT_CHARS} letters or digits)",
            field="content",
        )


class Facts:
    """Learn, confirm and list facts."""

    def __init__(self, repo: MemoryRepository, write_path: WritePath) -> None:
        self.repo = repo
        self.write_path = write_path

    async def learn(
        self,
        content: str,
        *,
        subject: str | None = None,
        category: str | FactCategory | None = None,
        source: str | None = None,
        confidence: float = 1.0,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        occurred_at: datetime | None = None,
        frame: str | None = None,
        censors: list[str] | None = None,
        provenance: Provenance | None = None,
        supersedes: str | None = None,
        dedup: bool = True,
        actor: str = "api",
    ) -> WriteResult:
        """Store a fact through search-before-store (see ``nous.memory.dedup``).

        ``supersedes`` names a fact this one replaces; ``dedup=False`` stores it unchecked.
        """
        check_fact_content(content)
        cat = enum_value(FactCategory, category, field="category")
        fact = build(
            Fact,
            agent_id=self.repo.agent_id,
            content=content,
            subject=subject,
            category=cat.value if cat else None,
            source=source,
            confidence=confidence,
            tags=tags,
            metadata=metadata,
            user_id=user_id,
            session_id=session_id,
            occurred_at=occurred_at,
            valid_from=occurred_at,
            encoded_frame=frame,
            encoded_censors=censors,
            provenance=provenance or Provenance(source=source or actor, session_id=session_id),
        )
        return await self.write_path.store(fact, actor=actor, supersedes=supersedes, dedup=dedup)

    async def confirm(self, fact_id: str, *, actor: str = "api") -> Fact:
        """Record that a fact was seen again."""
        fact = await self.repo.get_typed(fact_id, Fact)
        updated = await self.repo.update(
            fact.id,
            lambda current: {"confirmation_count": getattr(current, "confirmation_count", 0) + 1},
            action=HistoryAction.CONFIRM,
            actor=actor,
            kind=MemoryKind.FACT,
        )
        assert isinstance(updated, Fact)
        return updated

    async def all(
        self,
        *,
        subject: str | None = None,
        category: str | None = None,
        limit: int = 50,
        offset: int = 0,
        include_superseded: bool = False,
        include_inactive: bool = False,
    ) -> list[Fact]:
        """Facts, newest first."""
        cat = enum_value(FactCategory, category, field="category")
        found = await self.repo.query(
            kinds=(MemoryKind.FACT,),
            subject=subject,
            category=cat.value if cat else None,
            limit=limit,
            offset=offset,
            include_superseded=include_superseded,
            include_inactive=include_inactive,
        )
        return [f for f in found if isinstance(f, Fact)]
