"""Fields every memory shares: scope, provenance, timestamps, soft delete, tags, metadata."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from nous._time import as_utc, utcnow
from nous.models.metadata import check_metadata


class MemoryKind(StrEnum):
    """The kinds of memory Nous stores."""

    FACT = "fact"
    EPISODE = "episode"
    PROCEDURE = "procedure"
    CENSOR = "censor"
    DECISION = "decision"
    TURN = "turn"


class LifecycleState(StrEnum):
    """Where a memory is in its decay lifecycle (see ``nous.memory.lifecycle``)."""

    ACTIVE = "active"
    WEAK = "weak"
    DORMANT = "dormant"
    ARCHIVED = "archived"


def new_id() -> str:
    """A fresh random memory id."""
    return str(uuid.uuid4())


class Provenance(BaseModel):
    """Where a memory came from."""

    model_config = ConfigDict(extra="forbid")

    source: str | None = Field(default=None, description="e.g. cli, api, ingest:locomo, import")
    session_id: str | None = None
    episode_id: str | None = None
    turn_ids: list[str] = Field(default_factory=list)
    actor: str | None = None


class Memory(BaseModel):
    """Base of every stored memory. Subclasses add their own typed fields.

    Fields declared here are stored in their own columns; fields a subclass adds
    are stored together in the row's ``data`` document.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_enum_values=False)

    kind: ClassVar[MemoryKind]

    id: str = Field(default_factory=new_id)
    agent_id: str = Field(default="default", min_length=1, max_length=200)
    user_id: str | None = Field(default=None, max_length=200)
    session_id: str | None = Field(default=None, max_length=200)
    content: str
    subject: str | None = Field(default=None, max_length=500)
    category: str | None = Field(default=None, max_length=100)
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="the caller's own JSON object, filtered on with `where`"
    )
    provenance: Provenance = Field(default_factory=Provenance)
    encoded_frame: str | None = Field(default=None, max_length=100)
    encoded_censors: list[str] | None = None
    active: bool = True
    superseded_by: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    occurred_at: datetime = Field(default_factory=utcnow)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    lifecycle: LifecycleState = LifecycleState.ACTIVE
    stability: float = Field(default=30.0, gt=0, le=36_500, allow_inf_nan=False, description="days")
    review_count: int = Field(default=0, ge=0)
    last_reviewed_at: datetime | None = None

    @field_validator("occurred_at", "created_at", "updated_at", "valid_from", "valid_to", "last_reviewed_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None

    @field_validator("tags")
    @classmethod
    def _clean_tags(cls, value: list[str]) -> list[str]:
        seen: dict[str, None] = {}
        for tag in value:
            tag = tag.strip()
            if tag:
                seen.setdefault(tag, None)
        return list(seen)

    @field_validator("metadata", mode="before")
    @classmethod
    def _check_metadata(cls, value: object) -> dict[str, Any]:
        try:
            return check_metadata(value)
        except ValueError as exc:  # the message as it is, without pydantic's "Value error, "
            raise PydanticCustomError("invalid_metadata", str(exc)) from None

    @classmethod
    def column_fields(cls) -> frozenset[str]:
        """Names of the fields stored in their own columns."""
        return frozenset(Memory.model_fields)

    @classmethod
    def data_fields(cls) -> frozenset[str]:
        """Names of the subclass fields stored in the ``data`` document."""
        return frozenset(cls.model_fields) - cls.column_fields()

    def data(self) -> dict[str, Any]:
        """The subclass-specific fields, JSON-ready."""
        return self.model_dump(mode="json", include=set(self.data_fields()))

    def embedding_text(self) -> str:
        """The text that is embedded for this memory."""
        return self.content

    def keyword_text(self) -> str:
        """The text that is keyword-indexed for this memory (by default the embedded text)."""
        return self.embedding_text()

    def keyword_context(self) -> str | None:
        """Text around the memory, keyword-indexed in a separate, lower-weighted field (or None).

        A conversation turn's neighbours go here: an answer is found by the words of its question,
        yet a long neighbour cannot drown the turn's own words.
        """
        return None
