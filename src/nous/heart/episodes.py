"""Episodes: what happened, from start to end."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from nous._time import utcnow
from nous.memory import MemoryRepository
from nous.memory.parsing import enum_value
from nous.memory.repository import build
from nous.models import Episode, EpisodeOutcome, MemoryKind, Provenance
from nous.storage.base import ClaimSessionEpisode


class Episodes:
    """Start, end and list episodes."""

    def __init__(self, repo: MemoryRepository) -> None:
        self.repo = repo

    async def start(
        self,
        title: str,
        *,
        trigger: str | None = None,
        frame: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        started_at: datetime | None = None,
        participants: list[str] | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        censors: list[str] | None = None,
        provenance: Provenance | None = None,
        opening: str | None = None,
        claim_session: bool = False,
        actor: str = "api",
    ) -> Episode:
        """Open an episode; its content starts as its title. With ``claim_session`` it becomes its
        session's episode in the same transaction (ConflictError if the session has one)."""
        started = started_at or utcnow()
        episode = build(
            Episode,
            agent_id=self.repo.agent_id,
            content=title,
            title=title,
            trigger=trigger,
            frame_used=frame,
            encoded_frame=frame,
            session_id=session_id,
            user_id=user_id,
            started_at=started,
            occurred_at=started,
            participants=participants,
            tags=tags,
            metadata=metadata,
            encoded_censors=censors,
            opening=opening,
            provenance=provenance or Provenance(source=actor, session_id=session_id),
        )
        claim = (
            [ClaimSessionEpisode(self.repo.agent_id, session_id, episode.id)]
            if claim_session and session_id
            else []
        )
        return await self.repo.create(episode, actor=actor, extra_ops=claim)

    async def end(
        self,
        episode_id: str,
        *,
        summary: str | None = None,
        outcome: str | EpisodeOutcome = EpisodeOutcome.SUCCESS,
        lessons: list[str] | None = None,
        structured_summary: dict[str, Any] | None = None,
        ended_at: datetime | None = None,
        actor: str = "api",
    ) -> Episode:
        """Close an episode with its summary, outcome and lessons."""
        episode = await self.repo.get_typed(episode_id, Episode)
        changes: dict[str, Any] = {
            "ended_at": ended_at or utcnow(),
            "outcome": enum_value(EpisodeOutcome, outcome, field="outcome"),
        }
        if summary is not None:
            changes["summary"] = summary
        if lessons is not None:
            changes["lessons"] = lessons
        if structured_summary is not None:
            changes["structured_summary"] = structured_summary
        updated = await self.repo.update(episode.id, changes, actor=actor, kind=MemoryKind.EPISODE)
        assert isinstance(updated, Episode)
        return updated

    async def all(
        self,
        *,
        session_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[Episode]:
        """Episodes, most recent first — closed ones included."""
        found = await self.repo.query(
            kinds=(MemoryKind.EPISODE,),
            session_id=session_id,
            limit=limit,
            offset=offset,
            since=since,
            until=until,
        )
        return [e for e in found if isinstance(e, Episode)]
