"""A conversation session's state and the agent's identity, kept in the store so a restart or a
second process carries on."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from nous._time import as_utc

# A session that stayed this small (one turn at most, no tools, no "remember this") is trivial:
# its episode is discarded when it ends.
MIN_CONTENT_LENGTH = 200


class SessionState(BaseModel):
    """Counters and marks of one session (written by the turn loop, incremented in SQL)."""

    model_config = ConfigDict(extra="forbid")

    agent_id: str
    session_id: str
    user_id: str | None = None
    frame: str | None = Field(default=None, description="The frame of the latest turn.")
    active_censors: list[str] = Field(default_factory=list)
    topic: str | None = Field(default=None, description="The latest substantive user text (follow-ups).")
    last_user_text: str | None = Field(default=None, description="The latest user message.")
    turn_count: int = Field(default=0, description="Completed turns (a reply was recorded).")
    user_chars: int = 0
    assistant_chars: int = 0
    remember: bool = Field(default=False, description="The user asked to remember something.")
    tools_used: list[str] = Field(default_factory=list)
    episode_id: str | None = Field(default=None, description="The episode this session opened.")
    started_at: datetime
    last_active_at: datetime
    ended_at: datetime | None = None

    @field_validator("started_at", "last_active_at", "ended_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None  # naive is UTC, as stored

    @property
    def total_chars(self) -> int:
        return self.user_chars + self.assistant_chars

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    def is_trivial(self) -> bool:
        """One turn at most, no tools, little said: not worth an episode."""
        return (
            self.turn_count <= 1
            and not self.tools_used
            and not self.remember
            and self.total_chars < MIN_CONTENT_LENGTH
        )


# Token budget of each section; together they fill the context's 500-token identity section.
SECTION_BUDGETS: dict[str, int] = {
    "character": 150,
    "values": 100,
    "protocols": 100,
    "preferences": 75,
    "boundaries": 75,
}


class IdentitySection(BaseModel):
    """One versioned section of the agent's identity (character, values, protocols, ...)."""

    model_config = ConfigDict(extra="forbid")

    section: str
    content: str
    version: int
    updated_at: datetime
