"""API keys of the server (the secret itself is never stored or returned after creation)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from nous._time import utcnow


class ApiKey(BaseModel):
    """Who a key speaks for: one agent (optionally one user of it), or every agent (admin)."""

    model_config = ConfigDict(extra="forbid")

    id: str  # the key's public part: "nous_<id>_<secret>"
    agent_id: str | None = None
    user_id: str | None = None
    name: str = Field(default="", max_length=200)
    admin: bool = False
    created_at: datetime = Field(default_factory=utcnow)
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None
