"""What operations return: write results, recall hits, history, edges, stats."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from nous._time import as_utc, utcnow
from nous.models.base import Memory, MemoryKind


class WriteStatus(StrEnum):
    CREATED = "created"
    DUPLICATE = "duplicate"
    CONNECTED = "connected"
    SUPERSEDED = "superseded"
    UPDATED = "updated"


class WriteResult(BaseModel):
    """Outcome of storing a memory."""

    status: WriteStatus
    memory: Memory
    existing_id: str | None = None
    related_ids: list[str] = Field(default_factory=list)
    superseded_id: str | None = None
    similarity: float | None = None
    warnings: list[str] = Field(default_factory=list)

    @property
    def id(self) -> str:
        return self.memory.id


class MaintenanceReport(BaseModel):
    """What a ``maintain`` pass did."""

    embedded: int = 0
    refreshed: int = Field(default=0, description="Re-embedded as this version presents them.")
    reviewed: int = 0
    lifecycle_changes: dict[str, int] = Field(default_factory=dict)
    idempotency_keys_pruned: int = Field(
        default=0, description="Idempotency-Keys older than NOUS_IDEMPOTENCY_RETENTION_HOURS deleted."
    )
    threaded: int = Field(
        default=0, description="Memories put into topic threads (all of them on a rebuild)."
    )
    instructions_marked: int = Field(
        default=0,
        description="User turns stored before turns were marked on arrival, now marked as standing instructions.",
    )


class RecallHit(BaseModel):
    """One recalled memory with its score and the signals that produced it."""

    id: str
    kind: MemoryKind
    content: str
    score: float = Field(
        description="Estimated relevance, 0..1, comparable across queries and stores (calibrated: of "
        "hits scored about 0.3, about three in ten answer the question)."
    )
    signals: dict[str, float] = Field(default_factory=dict, description="The raw scores behind it.")
    occurred_at: datetime = Field(description="When it happened, was said or was learned.")
    current: bool = Field(
        default=True, description="False when a newer memory superseded it (a fact that changed)."
    )
    memory: Memory

    def brief(self) -> dict[str, Any]:
        """What a tool hands a model: the memory's text, kind, relevance, date and currency."""
        return {
            "id": self.id,
            "type": self.kind.value,
            "content": self.content,
            "score": self.score,
            "at": self.occurred_at.isoformat(),
            "current": self.current,
            **({"metadata": self.memory.metadata} if self.memory.metadata else {}),
        }


class HistoryAction(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    SUPERSEDE = "supersede"
    CONFIRM = "confirm"
    DELETE = "delete"
    RESTORE = "restore"
    PURGE = "purge"
    LINK = "link"
    IMPORT = "import"
    LIFECYCLE = "lifecycle"
    ERASE = "erase"  # a user's rows erased (``Nous.forget_user``): the receipt, on ``user:<id>``


class HistoryEntry(BaseModel):
    """One audit row: what changed, from what, to what, by whom, when."""

    model_config = ConfigDict(extra="forbid")

    id: int | None = None
    memory_id: str
    agent_id: str
    action: HistoryAction
    old_value: dict[str, Any] | None = None
    new_value: dict[str, Any] | None = None
    actor: str = "api"
    at: datetime = Field(default_factory=utcnow)

    @field_validator("at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return as_utc(value)


class EdgeRelation(StrEnum):
    RELATES_TO = "relates_to"
    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    SUPERSEDES = "supersedes"
    CAUSED_BY = "caused_by"
    PART_OF = "part_of"
    DERIVED_FROM = "derived_from"
    FOLLOWS = "follows"


class Edge(BaseModel):
    """A typed link between two memories; unique per (source, target, relation)."""

    model_config = ConfigDict(extra="forbid")

    source_id: str
    target_id: str
    relation: EdgeRelation
    agent_id: str
    weight: float = Field(default=1.0, ge=0.0, le=1.0, allow_inf_nan=False)
    created_at: datetime = Field(default_factory=utcnow)

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return as_utc(value)


class StoreStats(BaseModel):
    """Counts of what a store holds for one agent."""

    backend: str
    location: str
    agent_id: str
    active_by_kind: dict[str, int]
    active_by_lifecycle: dict[str, int] = Field(
        default_factory=dict,
        description="Current memories by lifecycle state (active, weak, dormant, archived).",
    )
    inactive: int
    edges: int
    history_rows: int
    missing_embeddings: int
    schema_version: int


class ErasureReceipt(BaseModel):
    """What ``Nous.forget_user`` removed: how many rows of each table held the user's data. It
    names the user and counts rows, never their content; the agent's audit keeps it (a history
    row on ``user:<user_id>``)."""

    model_config = ConfigDict(extra="forbid")

    agent_id: str
    user_id: str
    memories: int = Field(default=0, description="Memories of every kind (turns included).")
    memories_by_kind: dict[str, int] = Field(default_factory=dict)
    edges: int = Field(default=0, description="Links touching one of them (a shared memory's included).")
    history: int = Field(default=0, description="Audit rows of their memories (purged ones' too).")
    sessions: int = 0
    working_memory: int = 0
    events: int = Field(default=0, description="Outbox events and ingest jobs about them.")
    idempotency_keys: int = Field(default=0, description="Kept answers of retried requests naming them.")
    at: datetime = Field(default_factory=utcnow)

    @field_validator("at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return as_utc(value)
