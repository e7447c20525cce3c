"""The REST API's closed vocabularies and response models.

Every 2xx body is one of these (or an engine model from ``nous.models``), so the OpenAPI document
names a schema for every answer. A memory in an answer carries ``type`` (its kind) beside the
engine model's fields; ``AnyMemory`` is the union of the six kinds, told apart by ``type``.
"""

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, RootModel

from nous.cognitive.context import Context
from nous.heart.censor_rules import ActionCheck
from nous.models import (
    Censor,
    Decision,
    Episode,
    Fact,
    HistoryEntry,
    Memory,
    Procedure,
    SessionState,
    StoreStats,
    Turn,
    WriteResult,
    WriteStatus,
)
from nous.models.events import Event


# Closed sets the engine keeps as dictionaries (frames, recall presets, identity sections),
# declared here so the schema lists them; tests/test_rest_contract.py checks they match.
class FrameName(StrEnum):
    CONVERSATION = "conversation"
    QUESTION = "question"
    TASK = "task"
    DECISION = "decision"
    CREATIVE = "creative"
    DEBUG = "debug"
    INITIATION = "initiation"


class PresetName(StrEnum):
    DEFAULT = "default"
    DENSE_ONLY = "dense-only"
    KEYWORD_ONLY = "keyword-only"
    NO_BOOSTS = "no-boosts"


class IdentitySectionName(StrEnum):
    CHARACTER = "character"
    VALUES = "values"
    PROTOCOLS = "protocols"
    PREFERENCES = "preferences"
    BOUNDARIES = "boundaries"


class FactOut(Fact):
    type: Literal["fact"] = "fact"


class EpisodeOut(Episode):
    type: Literal["episode"] = "episode"


class ProcedureOut(Procedure):
    type: Literal["procedure"] = "procedure"


class CensorOut(Censor):
    type: Literal["censor"] = "censor"


class DecisionOut(Decision):
    type: Literal["decision"] = "decision"


class TurnOut(Turn):
    type: Literal["turn"] = "turn"


class AnyMemory(
    RootModel[
        Annotated[
            FactOut | EpisodeOut | ProcedureOut | CensorOut | DecisionOut | TurnOut,
            Field(discriminator="type"),
        ]
    ]
):
    """A memory of any kind; ``type`` says which."""


class CreatedMemory(BaseModel):
    """What a write did: ``created``, or the memory it matched (``duplicate``, ``updated`` ...)."""

    id: str
    type: str
    content: str
    status: WriteStatus
    existing_id: str | None = None
    similarity: float | None = None
    warnings: list[str] = Field(default_factory=list)
    memory: AnyMemory


class MemoryPage(BaseModel):
    """One page of memories; ``next_cursor`` fetches the next (None on the last page)."""

    items: list[AnyMemory]
    next_cursor: str | None = None


class DecisionPage(BaseModel):
    items: list[DecisionOut]
    next_cursor: str | None = None


class EpisodePage(BaseModel):
    items: list[EpisodeOut]
    next_cursor: str | None = None


class CensorPage(BaseModel):
    items: list[CensorOut]
    next_cursor: str | None = None


class EventPage(BaseModel):
    items: list[Event]
    next_cursor: str | None = None


class SessionPage(BaseModel):
    items: list[SessionState]
    next_cursor: str | None = None


class HistoryList(RootModel[list[HistoryEntry]]):
    """A memory's audit rows, oldest first."""


class LinkCreated(BaseModel):
    created: bool = Field(description="False when the link already existed.")


class Imported(BaseModel):
    imported: int = Field(description="Memories written: those the store did not have yet.")
    already_present: int = Field(
        default=0, description="Memories of the file the store already had (left as they are)."
    )


class TurnOutput(Context):
    """The context for the agent's answer (``context``) and what the turn did to the session."""

    text: str = Field(exclude=True, default="")
    context: str
    episode_action: str
    episode_id: str | None = None
    duplicate_of: str | None = None
    turn: int


class SessionEndOut(BaseModel):
    session: SessionState
    episode: EpisodeOut | None = None
    facts: list[CreatedMemory] = Field(default_factory=list)
    ended_now: bool


class Stats(StoreStats):
    """The store's counts for the caller's agent, and its event queue by status."""

    events: dict[str, int] = Field(description="Outbox events by status (pending, running, done, dead).")


def created(memory_id: str) -> dict[str, str]:
    """The ``Location`` header of a 201 for a new memory."""
    return {"Location": f"/v1/memories/{memory_id}"}


__all__ = [
    "ActionCheck",
    "AnyMemory",
    "CensorOut",
    "CensorPage",
    "CreatedMemory",
    "DecisionOut",
    "DecisionPage",
    "EpisodeOut",
    "EventPage",
    "FrameName",
    "HistoryList",
    "IdentitySectionName",
    "Imported",
    "LinkCreated",
    "MemoryPage",
    "PresetName",
    "SessionEndOut",
    "SessionPage",
    "Stats",
    "TurnOutput",
]


def dump(memory: Memory) -> dict[str, Any]:
    """A memory as the API shows it: its fields and ``type``."""
    return {"type": memory.kind.value, **memory.model_dump(mode="json")}


def written(result: WriteResult) -> CreatedMemory:
    """The answer to a write."""
    memory = result.memory
    return CreatedMemory(
        id=memory.id,
        type=memory.kind.value,
        content=memory.content,
        status=result.status,
        existing_id=result.existing_id,
        similarity=result.similarity,
        warnings=result.warnings,
        memory=AnyMemory.model_validate(dump(memory)),
    )
