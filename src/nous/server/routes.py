"""The REST routes beyond create / get / recall: a memory's life (update, forget, restore, history,
links), the duplicate check, listing with cursors, recent memories, the turn loop, censors'
check-action, events and stats. Every route works on the caller's agent only."""

import io
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BeforeValidator, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from nous.errors import InvalidInputError
from nous.heart.censor_rules import ActionCheck
from nous.memory.dedup import SimilarityCheck
from nous.models import (
    Calibration,
    DecisionCategory,
    Edge,
    EdgeRelation,
    ErasureReceipt,
    FactCategory,
    HistoryEntry,
    LifecycleState,
    MemoryKind,
)
from nous.models.events import EventStatus
from nous.models.heart import censor_actions_text
from nous.models.metadata import decode_where
from nous.models.session import IdentitySection
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
    SessionId,
    StrictBody,
    UserPath,
    VisibleId,
    _integral,
)
from nous.server.callers import Agent, Who
from nous.server.problems import sent_as
from nous.server.schemas import (
    FrameName,
    IdentitySectionName,
    Imported,
    LinkCreated,
    dump,
    written,
)
from nous.server.scope import AgentKey, MemoryRef, SessionRef, UserRef, linked

Verdict = Literal["accept", "reject"]
JSONL_BODY: dict[str, Any] = {
    "requestBody": {"required": True, "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}
}
EXPORT_BODY: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "JSONL: a header line, then memories and edges",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    }
}


class UpdateMemory(StrictBody):
    content: str | None = Field(default=None, pattern=CLEAN, max_length=100_000)
    subject: Clean | None = None
    category: Annotated[FactCategory, LAX] | Annotated[DecisionCategory, LAX] | None = None
    tags: list[Clean] | None = None
    metadata: Metadata | None = Field(default=None, description="Replaces the whole metadata object.")
    confidence: float | None = Field(default=None, ge=0, le=1)


class CheckSimilar(StrictBody):
    content: str = Field(min_length=1, max_length=100_000, pattern=SOLID)
    type: Literal["fact", "procedure", "censor"] = "fact"
    subject: Clean | None = None
    user_id: ActingUser = Field(default=None, description="Act for this user (an agent's key).")


class RecentRequest(StrictBody):
    model_config = ConfigDict(json_schema_extra={"not": {"required": ["hours", "since"]}})  # one or the other

    limit: Annotated[int, Field(ge=1, le=1000), BeforeValidator(_integral)] = 10
    types: list[Annotated[MemoryKind, LAX]] | None = None
    hours: float | None = Field(default=None, gt=0, le=24 * 3650)
    since: IsoDatetime | None = None
    until: IsoDatetime | None = None
    session_id: OwnSession = Field(default=None, description="Only this session's memories.")
    user_id: ActingUser = Field(default=None, description="Act for this user (an agent's key).")

    @model_validator(mode="after")
    def _one_window(self) -> "RecentRequest":
        if {"hours", "since"} <= self.model_fields_set:  # even as nulls: the schema allows one
            raise ValueError("give hours or since, not both")
        return self


class TurnRequest(StrictBody):
    """The user's message (``text``)."""

    text: str = Field(min_length=1, max_length=100_000, pattern=SOLID)
    budget: Annotated[int, Field(ge=1, le=1_000_000), BeforeValidator(_integral)] | None = Field(
        default=None,
        description=BUDGET_DOC,
    )
    frame: Annotated[FrameName, LAX] | None = Field(default=None, description="Force a frame.")
    user_id: ActingUser = Field(default=None, description="The user speaking (an agent's key).")
    at: IsoDatetime | None = Field(default=None, description="When the message was sent (default now).")


Reply = Annotated[str, Field(min_length=1, max_length=100_000, pattern=SOLID)]


class ReplyRequest(StrictBody):
    """The agent's reply (``text``, as the turn's message is; ``reply`` is its deprecated name)."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["text"]}, {"required": ["reply"]}]})

    # Neither is nullable: exactly one is sent (the schema's oneOf says so).
    text: Reply | SkipJsonSchema[None] = None
    reply: Reply | SkipJsonSchema[None] = Field(default=None, deprecated=True, description="Use `text`.")
    tools_used: list[Clean] = Field(default_factory=list)
    decision_ids: Annotated[list[Clean], MemoryRef()] = Field(
        default_factory=list, description="Decisions written during the turn."
    )
    fact_ids: Annotated[list[Clean], MemoryRef()] = Field(
        default_factory=list, description="Facts written during the turn."
    )
    at: IsoDatetime | None = Field(default=None, description="When the reply was sent (default now).")

    @model_validator(mode="after")
    def _one_text(self) -> "ReplyRequest":
        if (self.text is None) == (self._old_reply() is None):
            raise ValueError("send the reply as `text` (or its old name `reply`), once")
        return self

    def _old_reply(self) -> str | None:
        """The deprecated field, read without the warning its attribute raises (that is for callers)."""
        value = self.__dict__.get("reply")
        return value if isinstance(value, str) else None

    def reply_text(self) -> str:
        return self.text or self._old_reply() or ""


class EndRequest(StrictBody):
    reflection: str | None = Field(default=None, pattern=CLEAN, max_length=20_000)
    at: IsoDatetime | None = Field(default=None, description="When the session ended (default now).")


class ActionRequest(StrictBody):
    action: str = Field(min_length=1, max_length=100_000, pattern=SOLID)
    session_id: OwnSession = None
    user_id: ActingUser = Field(
        default=None, description="Act for this user (an agent's key; default: the session's user)."
    )
    override: bool = Field(default=False, description="Turn a block into a warning (not an absolute one).")


def _cursor(offset: int) -> str:
    """The cursor of the page at ``offset`` (opaque to clients: they pass back ``next_cursor``)."""
    return str(offset)


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    if not cursor.isdigit() or not cursor.isascii():  # the schema's pattern holds this back too
        raise InvalidInputError("cursor is not one this API gave out", field="cursor")
    return int(cursor)


# Events, sessions, proposals and censors are read from the newest, one window at a time: their
# cursors page through the newest WINDOW (the engine's largest limit for them).
WINDOW = 1000


def _page(rows: list[dict[str, Any]], offset: int, limit: int) -> dict[str, Any]:
    """One page of ``rows`` (fetched from the start, one more than the page to know if more follow)."""
    window = rows[offset : offset + limit]
    more = len(rows) > offset + limit
    return {"items": window, "next_cursor": _cursor(offset + limit) if more else None}


# OpenAPI links: the operations that take the ``id`` of a memory an answer returns as a path
# parameter. They document a memory's life (create, read, update, forget, restore, history) and
# the organs' own operations, and let a stateful client or fuzzer follow them.
LINKED: dict[str, tuple[str, str, str]] = {
    "GetMemory": ("get", "/v1/memories/{memory_id}", "memory_id"),
    "UpdateMemory": ("patch", "/v1/memories/{memory_id}", "memory_id"),
    "ForgetMemory": ("delete", "/v1/memories/{memory_id}", "memory_id"),
    "RestoreMemory": ("post", "/v1/memories/{memory_id}/restore", "memory_id"),
    "MemoryHistory": ("get", "/v1/memories/{memory_id}/history", "memory_id"),
    "LinkMemory": ("post", "/v1/memories/{memory_id}/links", "memory_id"),
    "ReviewDecision": ("post", "/v1/decisions/{decision_id}/review", "decision_id"),
    "SettleProposal": ("post", "/v1/proposals/{decision_id}/{verdict}", "decision_id"),
    "UseProcedure": ("post", "/v1/procedures/{procedure_id}/use", "procedure_id"),
    "EditCensor": ("patch", "/v1/censors/{censor_id}", "censor_id"),
    "CensorFalsePositive": ("post", "/v1/censors/{censor_id}/false-positive", "censor_id"),
    "RetireCensor": ("post", "/v1/censors/{censor_id}/retire", "censor_id"),
}


def links(status: int, *names: str) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route: links from its ``status`` answer's ``id`` to the ``LINKED``
    operations named (by ``operationRef``: the path and method, not a generated operation id)."""

    def link(method: str, path: str, parameter: str) -> dict[str, Any]:
        # A JSON pointer in a URI fragment: "~" and "/" escaped, then "{" and "}" percent-encoded.
        pointer = quote(path.replace("~", "~0").replace("/", "~1"), safe="~")
        return {
            "operationRef": f"#/paths/{pointer}/{method}",
            "parameters": {parameter: "$response.body#/id"},
        }

    return {status: {"links": {name: link(*LINKED[name]) for name in names}}}


async def list_memories(
    caller: Who,
    nous: Agent,
    type: list[MemoryKind] | None = Query(default=None, description="Only these kinds (repeat it)."),
    types: list[MemoryKind] | None = Query(default=None, deprecated=True, description="Old name of `type`."),
    limit: int = Query(default=50, ge=1, le=1000),
    cursor: Cursor = None,
    include_inactive: bool = Query(default=False, description="Forgotten memories too."),
    include_superseded: bool = Query(default=False, description="Replaced memories too."),
    superseded_only: bool = Query(default=False, description="Only memories a newer one replaced."),
    user_id: Annotated[str | None, UserRef()] = Query(
        default=None, max_length=200, pattern=CLEAN, description="Act for this user (an agent's key)."
    ),
    subject: str | None = Query(default=None, max_length=200, description="Only this subject (exact)."),
    category: str | None = Query(default=None, max_length=100, description="Only this category (exact)."),
    session_id: Annotated[SessionId | None, SessionRef()] = Query(
        default=None, description="Only this session's memories."
    ),
    lifecycle: list[LifecycleState] | None = Query(
        default=None, description="Only these lifecycle states (repeat it)."
    ),
    since: IsoDatetime | None = Query(default=None, description="Occurred at or after this time (ISO 8601)."),
    until: IsoDatetime | None = Query(default=None, description="Occurred before this time (ISO 8601)."),
    where: str | None = Query(
        default=None,
        max_length=10_000,
        description=(
            'A metadata filter as JSON, e.g. {"project":"x","priority":{"gte":2}}: equality, '
            "in, exists, gt/gte/lt/lte (docs/rest.md)."
        ),
    ),
) -> dict[str, Any]:
    """Memories, most recent first: ``Nous.memories``."""
    offset = _offset(cursor)
    kinds = [*(type or []), *(types or [])] or None
    with sent_as(kinds="type" if type else "types"):
        found = await nous.memories(
            kinds,
            limit=limit + 1,
            offset=offset,
            include_inactive=include_inactive,
            include_superseded=include_superseded,
            superseded_only=superseded_only,
            user_id=user_id,
            subject=subject,
            category=category,
            session_id=session_id,
            lifecycle=lifecycle,
            since=since,
            until=until,
            where=decode_where(where),
        )
    more = len(found) > limit
    return {
        "items": [dump(m) for m in found[:limit]],
        "next_cursor": _cursor(offset + limit) if more else None,
    }


async def update_memory(memory_id: OwnedId, body: UpdateMemory, caller: Who, nous: Agent) -> dict[str, Any]:
    """Change a memory's fields: ``Nous.update``."""
    changes = body.model_dump(exclude_none=True, mode="json")
    return dump(await nous.update(memory_id, **changes))


async def forget_memory(memory_id: OwnedId, caller: Who, nous: Agent, hard: bool = False) -> dict[str, Any]:
    """Forget a memory (``hard``: delete it for good): ``Nous.forget``."""
    return dump(await nous.forget(memory_id, hard=hard))


async def restore_memory(memory_id: OwnedId, caller: Who, nous: Agent) -> dict[str, Any]:
    """Bring a forgotten memory back: ``Nous.restore``."""
    return dump(await nous.restore(memory_id))


async def memory_history(memory_id: VisibleId, caller: Who, nous: Agent) -> list[HistoryEntry]:
    """A memory's audit rows, oldest first: ``Nous.history``."""
    return await nous.history(memory_id)


async def check_similar(body: CheckSimilar, caller: Who, nous: Agent) -> SimilarityCheck:
    """What storing this would find (nothing is written): ``Nous.check_similar``."""
    with sent_as(kind="type"):
        return await nous.check_similar(body.content, body.type, user_id=body.user_id, subject=body.subject)


async def recall_recent(body: RecentRequest, caller: Who, nous: Agent) -> dict[str, Any]:
    """The most recent memories, whatever their topic: ``Nous.recall_recent``."""
    with sent_as(kinds="types"):
        found = await nous.recall_recent(
            limit=body.limit,
            kinds=body.types or ("episode",),
            hours=body.hours,
            since=body.since,
            until=body.until,
            session_id=body.session_id,
            user_id=body.user_id,
        )
    return {"items": [dump(m) for m in found], "next_cursor": None}


async def pre_turn(session_id: OwnSessionPath, body: TurnRequest, caller: Who, nous: Agent) -> dict[str, Any]:
    """Before the agent answers: record the user's message, get the context: ``Nous.pre_turn``."""
    with sent_as(user_text="text"):
        turn = await nous.pre_turn(
            session_id,
            body.text,
            user_id=body.user_id,
            budget=body.budget,
            frame=None if body.frame is None else body.frame.value,
            at=body.at,
        )
    answer = {"context": turn.text, **turn.model_dump(mode="json", exclude={"text"})}
    return caller.outside(answer)


async def post_turn(
    session_id: OwnSessionPath, body: ReplyRequest, caller: Who, nous: Agent
) -> dict[str, Any]:
    """After the agent answered: record its reply: ``Nous.post_turn``."""
    from nous.cognitive import TurnResult

    result = TurnResult(
        reply=body.reply_text(),
        tools_used=body.tools_used,
        decision_ids=body.decision_ids,
        fact_ids=body.fact_ids,
    )
    with sent_as(reply="reply" if body.text is None else "text"):
        state = await nous.post_turn(session_id, result, at=body.at)
    return caller.outside(state.model_dump(mode="json"))


async def end_session(
    session_id: OwnSessionPath, body: EndRequest, caller: Who, nous: Agent
) -> dict[str, Any]:
    """End a session: close its episode, learn its reflection: ``Nous.end_session``."""
    done = await nous.end_session(session_id, reflection=body.reflection, at=body.at)
    answer = {
        "session": caller.outside(done.session.model_dump(mode="json")),
        "episode": None if done.episode is None else dump(done.episode),
        "facts": [written(f) for f in done.facts],
        "ended_now": done.ended_now,
    }
    return answer


async def check_action(body: ActionRequest, caller: Who, nous: Agent) -> ActionCheck:
    """Judge an action before taking it: ``Nous.check_action``."""
    with sent_as(action_text="action"):
        return await nous.check_action(
            body.action, session_id=body.session_id, user_id=body.user_id, override=body.override
        )


async def get_stats(caller: Annotated[Who, AgentKey("stats")], nous: Agent) -> dict[str, Any]:
    """The store's counts for this agent and its event queue: ``Nous.stats`` and ``Nous.event_counts``."""
    counts = await nous.event_counts()
    return {
        **(await nous.stats()).model_dump(mode="json"),
        "events": {k.value: v for k, v in counts.items()},
    }


async def list_events(
    caller: Annotated[Who, AgentKey("the event queue")],
    nous: Agent,
    status: EventStatus | None = None,
    limit: int = Query(default=50, ge=1, le=1000),
    cursor: Cursor = None,
) -> dict[str, Any]:
    """The agent's outbox events, newest first: ``Nous.events``."""
    offset = _offset(cursor)
    found = await nous.events(status=status, limit=min(offset + limit + 1, WINDOW))
    return _page([e.model_dump(mode="json") for e in found], offset, limit)


async def forget_user(
    user_id: UserPath, caller: Annotated[Who, AgentKey("erasing a user")], nous: Agent
) -> ErasureReceipt:
    """Erase one of the agent's users for good (every memory, session, working memory, event,
    link and audit row of theirs; shared memories stay), with a receipt of counts that the
    agent's audit keeps: ``Nous.forget_user``. For the agent's key."""
    return await nous.forget_user(user_id)


class ReviewRequest(StrictBody):
    outcome: Literal["success", "partial", "failure", "pending"]
    note: str | None = Field(default=None, pattern=CLEAN, max_length=5000)


class UseRequest(StrictBody):
    success: bool | None = None


class CensorEdit(StrictBody):
    model_config = ConfigDict(json_schema_extra={"minProperties": 1})  # something to edit

    trigger_pattern: str | None = Field(default=None, pattern=CLEAN, max_length=5000)
    action: Literal["warn", "block", "absolute"] | None = Field(
        default=None, description=f"What happens when it fires: {censor_actions_text()}."
    )
    reason: str | None = Field(default=None, pattern=SOLID, max_length=5000)
    escalation_threshold: Annotated[int, Field(ge=1, le=1_000_000), BeforeValidator(_integral)] | None = None
    reset_activations: bool = Field(
        default=False,
        description="Set the activation count back to 0 (kept otherwise, whatever else changes).",
    )


class NoteRequest(StrictBody):
    note: str | None = Field(default=None, pattern=SOLID, max_length=5000)


class IdentityRequest(StrictBody):
    content: str = Field(min_length=1, max_length=100_000, pattern=SOLID)


class SupersedeRequest(StrictBody):
    by: Annotated[str, MemoryRef()] = Field(
        max_length=200, description="The id of the memory that replaces this one."
    )


class LinkRequest(StrictBody):
    target_id: Annotated[str, MemoryRef()] = Field(max_length=200)
    relation: Annotated[EdgeRelation, LAX] = EdgeRelation.RELATES_TO
    weight: float = Field(default=1.0, ge=0, le=1)


async def review_decision(
    decision_id: OwnedId, body: ReviewRequest, caller: Who, nous: Agent
) -> dict[str, Any]:
    """Record how a decision turned out: ``Nous.review_decision``."""
    return dump(await nous.review_decision(decision_id, body.outcome, note=body.note))


async def get_calibration(caller: Annotated[Who, AgentKey("calibration")], nous: Agent) -> Calibration:
    """How well the agent's confidence predicted outcomes: ``Nous.calibration``."""
    return await nous.calibration()


async def list_proposals(
    caller: Annotated[Who, AgentKey("outcome proposals")],
    nous: Agent,
    limit: int = Query(default=50, ge=1, le=1000),
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Pending decisions with a proposed outcome: ``Nous.outcome_proposals``."""
    offset = _offset(cursor)
    found = await nous.outcome_proposals(limit=min(offset + limit + 1, WINDOW))
    return _page([dump(d) for d in found], offset, limit)


async def settle_proposal(
    decision_id: VisibleId,
    verdict: Verdict,
    caller: Annotated[Who, AgentKey("settling an outcome proposal")],
    nous: Agent,
) -> dict[str, Any]:
    """Accept or reject a proposed outcome: ``Nous.accept_proposal`` / ``Nous.reject_proposal``."""
    settled = await (
        nous.accept_proposal(decision_id) if verdict == "accept" else nous.reject_proposal(decision_id)
    )
    return dump(settled)


async def use_procedure(procedure_id: OwnedId, body: UseRequest, caller: Who, nous: Agent) -> dict[str, Any]:
    """Count a use of a procedure and whether it worked (``Procedures.record_use``)."""
    return dump(await nous.heart.procedures.record_use(procedure_id, success=body.success))


async def list_censors(
    caller: Who,
    nous: Agent,
    limit: int = Query(default=50, ge=1, le=1000),
    cursor: Cursor = None,
    user_id: Annotated[str | None, UserRef()] = Query(
        default=None, max_length=200, pattern=CLEAN, description="Act for this user (an agent's key)."
    ),
) -> dict[str, Any]:
    """The active censors that bind the caller's user (its own and the agent's shared ones;
    an agent's key without ``user_id``: all of them): ``Nous.censors``."""
    offset = _offset(cursor)
    found = await nous.censors(limit=min(offset + limit + 1, WINDOW), user_id=user_id)
    return _page([dump(c) for c in found], offset, limit)


async def edit_censor(censor_id: OwnedId, body: CensorEdit, caller: Who, nous: Agent) -> dict[str, Any]:
    """Change a censor: ``Nous.edit_censor``."""
    changes = body.model_dump(exclude_none=True, mode="json")
    return dump(await nous.edit_censor(censor_id, **changes))


async def report_false_positive(
    censor_id: OwnedId, body: NoteRequest, caller: Who, nous: Agent
) -> dict[str, Any]:
    """Report that a censor fired wrongly: ``Nous.report_false_positive``."""
    return dump(await nous.report_false_positive(censor_id, body.note))


async def retire_censor(censor_id: OwnedId, body: NoteRequest, caller: Who, nous: Agent) -> dict[str, Any]:
    """Retire a censor (``note``: why): ``Nous.retire_censor``."""
    return dump(await nous.retire_censor(censor_id, body.note))


async def link_memories(memory_id: OwnedId, body: LinkRequest, caller: Who, nous: Agent) -> LinkCreated:
    """Link a memory to another: ``Nous.link``."""
    return LinkCreated(
        created=await nous.link(memory_id, body.target_id, body.relation.value, weight=body.weight)
    )


async def memory_links(memory_id: VisibleId, caller: Who, nous: Agent) -> list[Edge]:
    """The links touching a memory (it is the source or the target), newest first, those to
    memories the key sees: ``Nous.edges``."""
    return [edge for edge, _ in await linked(nous, caller, await nous.get(memory_id))]


async def supersede_memory(
    memory_id: OwnedId, body: SupersedeRequest, caller: Who, nous: Agent
) -> dict[str, Any]:
    """Mark a memory as replaced by another (``by``): ``Nous.supersede``."""
    return dump(await nous.supersede(memory_id, by=body.by))


async def get_identity(
    caller: Annotated[Who, AgentKey("the agent's identity")], nous: Agent
) -> list[IdentitySection]:
    """The agent's identity sections that were set: ``Nous.identity``. For the agent's key."""
    return await nous.identity()


async def set_identity(
    section: IdentitySectionName,
    body: IdentityRequest,
    caller: Annotated[Who, AgentKey("the agent's identity")],
    nous: Agent,
) -> IdentitySection:
    """Set one identity section (a new version): ``Nous.set_identity``."""
    return await nous.set_identity(section.value, body.content)


async def get_working_memory(session_id: OwnSessionPath, caller: Who, nous: Agent) -> dict[str, Any]:
    """A session's working memory (``WorkingMemory.get``)."""
    await nous.session(session_id)  # 404 for a session this caller does not have
    return caller.outside((await nous.heart.working_memory.get(session_id)).model_dump(mode="json"))


async def export_memories(caller: Annotated[Who, AgentKey("export")], nous: Agent) -> StreamingResponse:
    """This agent's memories and edges as JSONL: ``Nous.export_lines``."""

    async def lines() -> Any:
        async for line in nous.export_lines():
            yield line + "\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")


async def import_memories(
    request: Request, caller: Annotated[Who, AgentKey("import")], nous: Agent
) -> Imported:
    """An export's JSONL lines (validated whole first; nothing is written if a line is bad):
    ``Nous.import_jsonl``."""
    try:
        text = (await request.body()).decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError("the body is not UTF-8 text", field="body") from None
    if not text.strip():
        raise InvalidInputError("the body is empty: send an export's JSONL lines", field="body")
    total = 0

    def parsed(count: int) -> None:
        nonlocal total
        total = count

    new = await nous.import_jsonl(io.StringIO(text), on_parsed=parsed)
    return Imported(imported=new, already_present=total - new)
