"""The routes a first client meets: the server's health, storing a memory, reading one, and
recall. Their rows are in the table of operations (``nous.server.operations``)."""

import os
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from nous.errors import InvalidInputError
from nous.models import CensorAction, DecisionCategory, FactCategory, MemoryKind, WriteResult, WriteStatus
from nous.models.heart import censor_actions_text
from nous.server import callers, routes
from nous.server.bodies import (
    CLEAN,
    LAX,
    SOLID,
    ActingUser,
    Clean,
    IsoDatetime,
    Metadata,
    OwnSession,
    ReasonIn,
    StrictBody,
    VisibleId,
    Where,
    _integral,
)
from nous.server.callers import Agent, Who
from nous.server.problems import problem, sent_as
from nous.server.schemas import AnyMemory, CreatedMemory, FrameName, PresetName, created, dump, written
from nous.server.scope import MemoryRef

CREATED_HEADERS: dict[int | str, dict[str, Any]] = {
    201: {
        "headers": {"Location": {"description": "The new memory: GET it here.", "schema": {"type": "string"}}}
    }
}
# The 201 of a created memory: its Location, and links to the operations that take its id.
CREATE_ANSWERS: dict[int | str, dict[str, Any]] = {
    201: routes.links(201, *routes.LINKED)[201] | CREATED_HEADERS[201]
}


class CreateMemory(StrictBody):
    """A memory to store. ``fact`` goes through the duplicate check; so do ``procedure`` and
    ``censor``; a ``decision`` is recorded with its confidence and reasons (``POST /v1/decisions``
    takes every field of a decision)."""

    model_config = ConfigDict(  # a procedure has a name
        json_schema_extra={
            "if": {"properties": {"type": {"const": "procedure"}}},
            "then": {"required": ["name"]},
        }
    )

    type: Literal["fact", "procedure", "censor", "decision"]
    content: str = Field(min_length=1, max_length=100_000, pattern=SOLID)
    subject: Clean | None = None
    category: Annotated[FactCategory, LAX] | Annotated[DecisionCategory, LAX] | None = None
    tags: list[Clean] | None = None
    metadata: Metadata | None = None
    user_id: ActingUser = None
    session_id: OwnSession = None
    confidence: float | None = Field(default=None, ge=0, le=1)
    reasons: list[ReasonIn] | None = None
    action: Annotated[CensorAction, LAX] | None = Field(
        default=None, description=f"censor: what a match does (default warn): {censor_actions_text()}"
    )
    reason: str | None = Field(default=None, pattern=CLEAN, description="censor: why")
    name: str | None = Field(
        default=None, pattern=CLEAN, description="procedure: its name (content is its description)"
    )
    occurred_at: IsoDatetime | None = Field(default=None, description="When it happened or was said.")
    frame: Annotated[FrameName, LAX] | None = Field(default=None, description="fact, procedure: its frame.")
    dedup: bool = Field(
        default=True, description="Check for duplicates before storing (fact, procedure, censor)."
    )
    source: str | None = Field(
        default=None, pattern=CLEAN, max_length=500, description="fact: where it came from."
    )
    supersedes: Annotated[str | None, MemoryRef("owned")] = Field(
        default=None, pattern=CLEAN, max_length=200, description="fact: the id of the fact it replaces."
    )
    domain: str | None = Field(default=None, pattern=CLEAN, max_length=100, description="procedure, censor")
    goals: list[Clean] | None = Field(default=None, description="procedure")
    core_patterns: list[Clean] | None = Field(default=None, description="procedure")
    core_tools: list[Clean] | None = Field(default=None, description="procedure")
    core_concepts: list[Clean] | None = Field(default=None, description="procedure")
    notes: str | None = Field(default=None, pattern=CLEAN, max_length=20_000, description="procedure")
    escalation_threshold: int = Field(
        default=3, ge=1, le=1_000_000, description="censor: warnings before it escalates to a block"
    )


class RecallRequest(StrictBody):
    query: str = Field(min_length=1, max_length=100_000, pattern=SOLID)
    limit: Annotated[int, Field(ge=1, le=1000), BeforeValidator(_integral)] = 10
    types: list[Annotated[MemoryKind, LAX]] | None = None
    since: IsoDatetime | None = None
    until: IsoDatetime | None = None
    session_id: OwnSession = None
    frame: Annotated[FrameName, LAX] | None = None
    preset: Annotated[PresetName, LAX] | None = None
    min_score: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Leave out results below this relevance (0..1); default NOUS_RECALL_MIN_SCORE.",
    )
    user_id: ActingUser = Field(default=None, description="Act for this user (an agent's key).")
    include_inactive: bool = Field(default=False, description="Forgotten memories too.")
    include_superseded: bool = Field(
        default=False, description="Replaced memories too (each still ranks below its successor)."
    )
    active_censors: Annotated[list[Clean] | None, MemoryRef(unknown="drop")] = Field(
        default=None,
        description="Ids of censors active in the conversation: memories written under them rank higher.",
    )
    now: IsoDatetime | None = Field(default=None, description="The time the question is asked (default now).")
    as_of: IsoDatetime | None = Field(default=None, description="Recall the store as it stood then.")
    reinforce: bool = Field(default=True, description="Strengthen the memories returned (as a use).")
    in_session: OwnSession = Field(
        default=None, description="Only memories written in this session (its turns, its facts)."
    )
    where: Where | None = None
    cover: bool | None = Field(
        default=None,
        description="A covering set in time order instead of the best few; default: when the question "
        "asks for an order, a summary or everything so far.",
    )


class RecallResult(BaseModel):
    id: str
    type: str
    content: str
    score: float = Field(description="Estimated relevance, 0..1, comparable across queries.")
    signals: dict[str, float]
    occurred_at: datetime = Field(description="When it happened, was said or was learned.")
    current: bool = Field(description="False when a newer memory superseded it.")
    memory: AnyMemory


class RecallResponse(BaseModel):
    results: list[RecallResult]


class Health(BaseModel):
    status: Literal["ok"]
    backend: str
    version: str
    worker: int = Field(
        description="The answering process's id: with `nous serve --workers N`, which one answered."
    )


async def health(request: Request) -> Health | JSONResponse:
    """Whether the server is ready (200, `status: ok`), or still loading its embedding model and
    vector index (503 problem details with `code: starting`: a load balancer sends it no traffic
    yet), and from which store backend and process."""
    root = callers.root(request)
    backend, worker = root.store.info.backend, os.getpid()
    if not request.app.state.ready():
        detail = "starting: loading the embedding model and the vector index; retry shortly"
        return problem(
            503,
            detail,
            {"Retry-After": "1"},
            code="starting",
            backend=backend,
            version=_version(),
            worker=worker,
        )
    return Health(status="ok", backend=backend, version=_version(), worker=worker)


async def create_memory(body: CreateMemory, who: Who, nous: Agent, response: Response) -> CreatedMemory:
    """Store a memory by ``type``: ``Nous.learn`` / ``Nous.add_procedure`` / ``Nous.add_censor`` /
    ``Nous.record_decision``."""
    if body.type in ("procedure", "censor"):
        who.require_agent_key(f"a {body.type} (the agent's shared memory)")
    user_id, session_id = body.user_id, body.session_id
    frame = None if body.frame is None else body.frame.value
    result: WriteResult
    with sent_as(trigger_pattern="content", description="content", kind="type"):
        if body.type == "fact":
            result = await nous.learn(
                body.content,
                subject=body.subject,
                category=None if body.category is None else body.category.value,
                tags=body.tags,
                metadata=body.metadata,
                user_id=user_id,
                session_id=session_id,
                confidence=1.0 if body.confidence is None else body.confidence,
                source=body.source,
                occurred_at=body.occurred_at,
                frame=frame,
                supersedes=body.supersedes,
                dedup=body.dedup,
            )
        elif body.type == "procedure":
            if not body.name:
                raise InvalidInputError("a procedure needs a name", field="name")
            result = await nous.add_procedure(
                body.name,
                body.content,
                domain=body.domain,
                goals=body.goals,
                core_patterns=body.core_patterns,
                core_tools=body.core_tools,
                core_concepts=body.core_concepts,
                notes=body.notes,
                tags=body.tags,
                metadata=body.metadata,
                frame=frame,
                session_id=session_id,
                user_id=user_id,
                occurred_at=body.occurred_at,
                dedup=body.dedup,
            )
        elif body.type == "censor":
            result = await nous.add_censor(
                body.content,
                action=body.action or "warn",
                reason=body.reason or "",
                domain=body.domain,
                escalation_threshold=body.escalation_threshold,
                tags=body.tags,
                metadata=body.metadata,
                user_id=user_id,
                occurred_at=body.occurred_at,
                dedup=body.dedup,
            )
        else:
            decision = await nous.record_decision(
                body.content,
                confidence=0.5 if body.confidence is None else body.confidence,
                category=None if body.category is None else body.category.value,
                reasons=[r.model_dump() for r in body.reasons or []],
                tags=body.tags,
                metadata=body.metadata,
                user_id=user_id,
                session_id=session_id,
            )
            result = WriteResult(status=WriteStatus.CREATED, memory=decision)
    response.headers.update(created(result.memory.id))
    return written(result)


async def get_memory(memory_id: VisibleId, who: Who, nous: Agent) -> dict[str, Any]:
    """One memory: ``Nous.get``."""
    return dump(await nous.get(memory_id))


async def recall(body: RecallRequest, who: Who, nous: Agent) -> RecallResponse:
    """Memories relevant to a query, best first: ``Nous.recall``."""
    with sent_as(kinds="types"):
        hits = await nous.recall(**body.arguments(types="kinds"))
    return RecallResponse(
        results=[
            RecallResult(
                id=h.id,
                type=h.kind.value,
                content=h.content,
                score=h.score,
                signals=h.signals,
                occurred_at=h.occurred_at,
                current=h.current,
                memory=AnyMemory.model_validate(dump(h.memory)),
            )
            for h in hits
        ]
    )


def _version() -> str:
    from nous import __version__

    return __version__
