"""Events: rows of the durable outbox that turn a change into follow-up work."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import uuid4

from pydantic import BaseModel, ConfigDict, Field

from nous._time import utcnow


class EventKind(StrEnum):
    """What happened. Each is written in the same transaction as the change it reports."""

    SESSION_ENDED = "session.ended"
    EPISODE_CLOSED = "episode.closed"
    EPISODE_SUMMARIZED = "episode.summarized"
    DECISION_RECORDED = "decision.recorded"
    FACT_WRITTEN = "fact.written"
    INGEST_REQUESTED = "ingest.requested"  # a conversation to store (a job of the REST API)


class EventStatus(StrEnum):
    PENDING = "pending"  # waiting (for its first try, or for a retry after ``available_at``)
    RUNNING = "running"  # claimed by a worker until ``lease_until``
    DONE = "done"  # its handler's effect is committed (or no handler wants it)
    DEAD = "dead"  # failed ``max_attempts`` times; ``nous events retry`` revives it


class Event(BaseModel):
    """One unit of follow-up work and its delivery state."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: uuid4().hex)
    agent_id: str
    kind: EventKind
    subject_id: str | None = None  # the session or memory the event is about
    payload: dict[str, Any] = Field(default_factory=dict)
    status: EventStatus = EventStatus.PENDING
    attempts: int = 0  # claims so far (a claim whose worker died counts)
    available_at: datetime = Field(default_factory=utcnow)
    lease_owner: str | None = None
    lease_until: datetime | None = None
    last_error: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    done_at: datetime | None = None
