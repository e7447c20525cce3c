"""Decisions, episodes and sessions as first-class routes (every field the Python API takes), and
conversation ingest as durable jobs. Every route works on the caller's agent only; a user-bound key reaches its
user's decisions, episodes and sessions (and reads the agent's shared ones)."""

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Body, Query, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from nous.api import Nous
from nous.errors import NotFoundError
from nous.events.ingest_job import PROGRESS, job_payload
from nous.ingest.formats import parse_conversation
from nous.ingest.ingest import IngestReport
from nous.ingest.shapes import SHAPES
from nous.models import DecisionCategory, EpisodeOutcome, MemoryKind, Stakes
from nous.models.events import Event, EventKind, EventStatus
from nous.server.bodies import (
    BUDGET_DOC,
    CLEAN,
    LAX,
    SOLID,
    ActingUser,
    Clean,
    Cursor,
    IsoDatetime,
    Metadata,
    OwnedId,
    OwnSession,
    OwnSessionPath,
    PathId,
    ReasonIn,
    StrictBody,
    VisibleId,
)
from nous.server.callers import Agent, Who
from nous.server.problems import sent_as
from nous.server.routes import WINDOW, _cursor, _offset, _page
from nous.server.schemas import (
    FrameName,
    dump,
)
from nous.server.scope import Caller, JobRef, MemoryRef, UserRef
from nous.storage.base import EmitEvent


def location(kind: str) -> dict[int | str, dict[str, Any]]:
    return {
        201: {
            "description": f"The new {kind}",
            "headers": {
                "Location": {"description": f"The new {kind}: GET it here.", "schema": {"type": "string"}}
            },
        }
    }


class CreateDecision(StrictBody):
    """A decision: what was chosen (``content``), why, how sure, how much is at stake. A critical
    one needs a reason (the engine's guardrail)."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"stakes": {"const": "critical"}}, "required": ["stakes"]},
            "then": {"properties": {"reasons": {"minItems": 1}}, "required": ["reasons"]},
        }
    )

    content: str = Field(
        min_length=1,
        max_length=100_000,
        pattern=SOLID,
        description="What was decided (Nous.record_decision's description).",
    )
    context: str | None = Field(
        default=None, pattern=CLEAN, max_length=100_000, description="The situation it was made in."
    )
    confidence: float = Field(default=0.5, ge=0, le=1)
    category: Annotated[DecisionCategory, LAX] | None = None
    stakes: Annotated[Stakes, LAX] = Stakes.MEDIUM
    reasons: list[ReasonIn] = Field(default_factory=list)
    pattern: str | None = Field(
        default=None, pattern=CLEAN, max_length=1000, description="The general rule it follows."
    )
    tags: list[Clean] | None = None
    metadata: Metadata | None = None
    thoughts: list[Clean] | None = None
    session_id: OwnSession = None
    episode_id: Annotated[str | None, MemoryRef()] = Field(
        default=None, pattern=CLEAN, description="The episode it belongs to (linked)."
    )
    user_id: ActingUser = None
    frame: Annotated[FrameName, LAX] | None = None
    occurred_at: IsoDatetime | None = None


class StartEpisode(StrictBody):
    """An episode to open: something that is happening."""

    title: str = Field(min_length=1, max_length=500, pattern=SOLID)
    trigger: str | None = Field(default=None, pattern=CLEAN, max_length=500)
    frame: Annotated[FrameName, LAX] | None = None
    session_id: OwnSession = None
    user_id: ActingUser = None
    started_at: IsoDatetime | None = None
    participants: list[Clean] | None = None
    tags: list[Clean] | None = None
    metadata: Metadata | None = None
    opening: str | None = Field(default=None, pattern=CLEAN, max_length=2000)


class EndEpisode(StrictBody):
    """How an episode ended."""

    summary: str | None = Field(default=None, pattern=CLEAN, max_length=100_000)
    outcome: Annotated[EpisodeOutcome, LAX] = EpisodeOutcome.SUCCESS
    lessons: list[Clean] | None = None
    structured_summary: dict[str, Any] | None = None
    ended_at: IsoDatetime | None = None


INGEST_ANSWERS: dict[int | str, dict[str, Any]] = {
    202: {
        "description": "Accepted as a job: poll its Location until `status` is `done`",
        "headers": {"Location": {"description": "The job: GET it here.", "schema": {"type": "string"}}},
    },
    200: {"description": "With `wait=true`: the conversation is stored", "model": IngestReport},
}


# The body of POST /v1/ingest: any JSON value reaches ``parse_conversation``, which reads every
# shape `nous ingest` reads and answers anything else with a 422 that lists them (so FastAPI does
# not validate it); the document says the same, with one example per shape.
ConversationBody = Annotated[
    Any,
    WithJsonSchema(
        {
            "title": "Conversation",
            "description": "A conversation in one of the shapes `nous ingest` reads: "
            + "; ".join(shape.named for shape in SHAPES)
            + ". Anything else is 422 (nothing stored).",
            "anyOf": [{"type": "object", "additionalProperties": True}, {"type": "array", "minItems": 1}],
        }
    ),
    Body(
        openapi_examples={
            f"{n + 1}": {"summary": shape.named, "value": shape.example} for n, shape in enumerate(SHAPES)
        }
    ),
]


class PreviewRequest(StrictBody):
    """A message to preview: the context ``pre_turn`` would build for it, with nothing written."""

    text: str = Field(min_length=1, max_length=100_000, pattern=SOLID, description="The user's message.")
    session_id: OwnSession = Field(
        default=None, description="An existing session whose topic, working memory and last turns count."
    )
    user_id: ActingUser = Field(default=None, description="The user speaking (an agent's key).")
    frame: Annotated[FrameName, LAX] | None = Field(default=None, description="Force a frame.")
    budget: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description=BUDGET_DOC,
    )
    at: IsoDatetime | None = Field(default=None, description="When the message is sent (default now).")
    as_of: IsoDatetime | None = Field(default=None, description="Show the store as it stood then.")


class JobProgress(BaseModel):
    done: int = Field(description="Messages stored so far.")
    total: int = Field(description="Messages in the conversation.")


class Job(BaseModel):
    """A durable job (an ingest): ``pending`` until a worker takes it, ``running``, then ``done``;
    ``dead`` after repeated failures (``last_error`` says why)."""

    id: str
    kind: Literal["ingest"] = "ingest"
    status: EventStatus
    progress: JobProgress
    conversation_id: Clean | None = None
    attempts: int
    last_error: Clean | None = None
    created_at: datetime
    done_at: datetime | None = None


def job(event: Event) -> Job:
    """The job an ``ingest.requested`` event is."""
    total = int(event.payload.get("total", 0))
    done = {EventStatus.DONE: total, EventStatus.RUNNING: PROGRESS.get(event.id, 0)}.get(event.status, 0)
    return Job(
        id=event.id,
        status=event.status,
        progress=JobProgress(done=done, total=total),
        conversation_id=event.subject_id,
        attempts=event.attempts,
        last_error=event.last_error,
        created_at=event.created_at,
        done_at=event.done_at,
    )


async def _listed(
    caller: Caller, nous: Nous, kind: MemoryKind, limit: int, cursor: str | None
) -> dict[str, Any]:
    offset = _offset(cursor)
    found = await nous.memories(kind, limit=limit + 1, offset=offset, user_id=caller.user_id)
    more = len(found) > limit
    return {
        "items": [dump(m) for m in found[:limit]],
        "next_cursor": _cursor(offset + limit) if more else None,
    }


async def create_decision(
    body: CreateDecision, caller: Who, nous: Agent, response: Response
) -> dict[str, Any]:
    """Record a decision with every field: ``Nous.record_decision``."""
    with sent_as(description="content"):
        decision = await nous.record_decision(
            body.content,
            context=body.context,
            confidence=body.confidence,
            category=None if body.category is None else body.category.value,
            stakes=body.stakes.value,
            reasons=[r.model_dump(mode="json") for r in body.reasons],
            pattern=body.pattern,
            tags=body.tags,
            metadata=body.metadata,
            thoughts=body.thoughts,
            session_id=body.session_id,
            episode_id=body.episode_id,
            user_id=body.user_id,
            frame=None if body.frame is None else body.frame.value,
            occurred_at=body.occurred_at,
        )
    response.headers["Location"] = f"/v1/decisions/{decision.id}"
    return dump(decision)


async def list_decisions(
    caller: Who, nous: Agent, limit: int = Query(default=50, ge=1, le=1000), cursor: Cursor = None
) -> dict[str, Any]:
    """Decisions, most recent first: ``Nous.memories("decision")``."""
    return await _listed(caller, nous, MemoryKind.DECISION, limit, cursor)


async def get_decision(decision_id: VisibleId, caller: Who, nous: Agent) -> dict[str, Any]:
    """One decision: ``Nous.get`` (404 if the id is not a decision)."""
    memory = await nous.get(decision_id)
    if memory.kind != MemoryKind.DECISION:
        raise NotFoundError(f"no decision with id {decision_id!r}")
    return dump(memory)


async def start_episode(body: StartEpisode, caller: Who, nous: Agent, response: Response) -> dict[str, Any]:
    """Open an episode: ``Nous.start_episode``."""
    episode = await nous.start_episode(
        body.title,
        trigger=body.trigger,
        frame=None if body.frame is None else body.frame.value,
        session_id=body.session_id,
        user_id=body.user_id,
        started_at=body.started_at,
        participants=body.participants,
        tags=body.tags,
        metadata=body.metadata,
        opening=body.opening,
    )
    response.headers["Location"] = f"/v1/episodes/{episode.id}"
    return dump(episode)


async def list_episodes(
    caller: Who, nous: Agent, limit: int = Query(default=50, ge=1, le=1000), cursor: Cursor = None
) -> dict[str, Any]:
    """Episodes, most recent first: ``Nous.memories("episode")``."""
    return await _listed(caller, nous, MemoryKind.EPISODE, limit, cursor)


async def get_episode(episode_id: VisibleId, caller: Who, nous: Agent) -> dict[str, Any]:
    """One episode: ``Nous.get`` (404 if the id is not an episode)."""
    memory = await nous.get(episode_id)
    if memory.kind != MemoryKind.EPISODE:
        raise NotFoundError(f"no episode with id {episode_id!r}")
    return dump(memory)


async def end_episode(episode_id: OwnedId, body: EndEpisode, caller: Who, nous: Agent) -> dict[str, Any]:
    """Close an episode with its summary, outcome and lessons: ``Nous.end_episode``."""
    memory = await nous.get(episode_id)
    if memory.kind != MemoryKind.EPISODE:
        raise NotFoundError(f"no episode with id {episode_id!r}")
    ended = await nous.end_episode(
        memory.id,
        summary=body.summary,
        outcome=body.outcome.value,
        lessons=body.lessons,
        structured_summary=body.structured_summary,
        ended_at=body.ended_at,
    )
    return dump(ended)


async def list_sessions(
    caller: Who,
    nous: Agent,
    ended: bool | None = Query(default=None, description="Only ended (true) or open (false) sessions."),
    limit: int = Query(default=50, ge=1, le=1000),
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Sessions by last activity, newest first: ``Nous.sessions``."""
    offset = _offset(cursor)
    found = await nous.sessions(ended=ended, limit=min(offset + limit + 1, WINDOW))
    mine = [s for s in (caller.own_session(s) for s in found) if s is not None]
    return _page([s.model_dump(mode="json") for s in mine], offset, limit)


async def get_session(session_id: OwnSessionPath, caller: Who, nous: Agent) -> dict[str, Any]:
    """A session's state: ``Nous.session``."""
    state = await nous.session(session_id)
    return caller.outside(state.model_dump(mode="json"))


async def preview_turn(body: PreviewRequest, caller: Who, nous: Agent) -> dict[str, Any]:
    """What the agent would be shown for a message, writing nothing: ``Nous.preview_turn``."""
    with sent_as(user_text="text"):
        context = await nous.preview_turn(
            body.text,
            session_id=body.session_id,
            user_id=body.user_id,
            frame=None if body.frame is None else body.frame.value,
            budget=body.budget,
            at=body.at,
            as_of=body.as_of,
        )
    return caller.outside(context.model_dump(mode="json"))


async def ingest(
    body: ConversationBody,
    caller: Who,
    nous: Agent,
    response: Response,
    wait: bool = Query(
        default=False,
        description="Store it within this request and answer 200 with the report (small "
        "conversations only: a long one can outlast a client's timeout).",
    ),
    user_id: Annotated[str | None, UserRef()] = Query(
        default=None, max_length=200, pattern=CLEAN, description="The user it is with (an agent's key)."
    ),
) -> Any:
    """Store a multi-session conversation (one episode per session, one turn per message):
    ``Nous.ingest``. It is checked whole first (nothing is stored if it is invalid), then kept
    as a durable job that the server's event worker runs (a restart resumes it): 202 with
    ``Location: /v1/jobs/{id}``. ``wait=true`` stores it within the request instead (200)."""
    conversation = parse_conversation(json.dumps(body))
    if wait:
        report = await nous.ingest(conversation, user_id=user_id)
        return JSONResponse(report.model_dump(mode="json"))
    event = Event(
        agent_id=nous.agent_id,
        kind=EventKind.INGEST_REQUESTED,
        subject_id=conversation.id,
        payload=job_payload(conversation, user_id),
    )
    await nous.store.apply([EmitEvent(event)])
    response.headers["Location"] = f"/v1/jobs/{event.id}"
    return job(event)


async def get_job(job_id: Annotated[PathId, JobRef()], caller: Who, nous: Agent) -> Job:
    """An ingest job's status and progress (``Nous.events`` of kind ``ingest.requested``)."""
    found = await nous.store.events(nous.agent_id, event_id=job_id, limit=1)
    if not found:  # erased since its scope was checked
        raise NotFoundError(f"no job with id {job_id!r}")
    return job(found[0])
