"""Topic threads: the memories of one topic of one user across sessions, in time order."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from nous.models.base import MemoryKind


class ThreadMember(BaseModel):
    """One memory of a thread, as a timeline shows it."""

    model_config = ConfigDict(extra="forbid")

    memory_id: str
    kind: MemoryKind
    occurred_at: datetime
    session_id: str | None = None
    speaker: str | None = Field(default=None, description="who said it, for a conversation turn")
    content: str = Field(
        description="what it says: a turn's words (without its speaker), an episode's title and summary"
    )


class Thread(BaseModel):
    """A topic thread: a readable label, its members' count and time span, and (when one thread
    is asked for) its members in time order."""

    model_config = ConfigDict(extra="forbid")

    id: str
    user_id: str | None = Field(default=None, description="its user; null for the agent's shared memories")
    label: str
    size: int = Field(description="how many memories it holds (forgotten ones left out)")
    first_at: datetime | None = None
    last_at: datetime | None = Field(default=None, description="when its newest member occurred")
    keywords: list[str] = Field(default_factory=list, description="its most frequent words, most first")
    score: float | None = Field(default=None, description="how well it matches the query, when one was given")
    created_at: datetime
    updated_at: datetime
    members: list[ThreadMember] | None = Field(
        default=None, description="its memories in time order (only when one thread is read)"
    )
