"""The REST routes beyond create / get / recall: a memory's life (update, forget, restore, history,
links), the duplicate check, listing with cursors, recent memories, the turn loop, censors'
check-action, events and stats. Every route works on the caller's agent only."""

import base64
import io
import json
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import quote

from fastapi import FastAPI, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from nous.api import Nous
from nous.errors import InvalidInputError
from nous.models import Memory
from nous.server.bodies import IsoDatetime, StrictBody
from nous.server.scope import owned, visible


class UpdateMemory(StrictBody):
    content: str | None = Field(default=None, max_length=100_000)
    subject: str | None = None
    category: str | None = None
    tags: list[str] | None = None
    confidence: float | None = Field(default=None, ge=0, le=1)


class CheckSimilar(StrictBody):
    content: str = Field(min_length=1, max_length=100_000, pattern=r"\S")
    type: Literal["fact", "procedure", "censor"] = "fact"
    subject: str | None = None


class RecentRequest(StrictBody):
    limit: int = Field(default=10, ge=1, le=1000)
    types: list[str] | None = None
    hours: float | None = Field(default=None, gt=0)
    since: IsoDatetime | None = None


class TurnRequest(StrictBody):
    text: str = Field(min_length=1, max_length=100_000, pattern=r"\S")
    budget: int | None = Field(default=None, ge=1, le=1_000_000)


class ReplyRequest(StrictBody):
    reply: str = Field(min_length=1, max_length=100_000, pattern=r"\S")
    tools_used: list[str] = Field(default_factory=list)


class EndRequest(StrictBody):
    reflection: str | None = Field(default=None, max_length=20_000)


class ActionRequest(StrictBody):
    action: str = Field(min_length=1, max_length=100_000, pattern=r"\S")
    session_id: str | None = None


class Page(BaseModel):
    items: list[dict[str, Any]]
    next_cursor: str | None = None


def _dump(memory: Memory) -> dict[str, Any]:
    return {"type": memory.kind.value, **memory.model_dump(mode="json")}


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        kind, _, value = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if kind != "o" or not value.isdigit():
            raise ValueError(cursor)
        return int(value)
    except ValueError:
        raise InvalidInputError("cursor is not one this API gave out", field="cursor") from None


def _page(rows: list[dict[str, Any]], offset: int, limit: int) -> Page:
    """One page of ``rows`` (fetched from the start, one more than the page to know if more follow)."""
    window = rows[offset : offset + limit]
    more = len(rows) > offset + limit
    return Page(items=window, next_cursor=_cursor(offset + limit) if more else None)


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


def register(
    app: FastAPI,
    who: Any,
    nous_for: Callable[[Any], Nous],
) -> None:
    """Add the routes to ``app``; ``who`` is the caller dependency (an ``Annotated`` type)."""

    @app.get("/v1/memories", response_model=Page, tags=["memories"])
    async def list_memories(
        caller: who,
        types: list[str] | None = Query(default=None),
        limit: int = Query(default=50, ge=1, le=1000),
        cursor: str | None = None,
    ) -> Page:
        nous, offset = nous_for(caller), _offset(cursor)
        found = await nous.memories(types, limit=limit + 1, offset=offset, user_id=caller.user_id)
        more = len(found) > limit
        return Page(
            items=[_dump(m) for m in found[:limit]], next_cursor=_cursor(offset + limit) if more else None
        )

    @app.patch(
        "/v1/memories/{memory_id}",
        response_model=dict[str, Any],
        tags=["memories"],
        responses=links(200, "GetMemory", "ForgetMemory", "MemoryHistory"),
    )
    async def update_memory(memory_id: str, body: UpdateMemory, caller: who) -> dict[str, Any]:
        nous = nous_for(caller)
        memory = await owned(nous, caller, memory_id)
        changes = body.model_dump(exclude_none=True)
        return _dump(await nous.update(memory.id, **changes))

    @app.delete(
        "/v1/memories/{memory_id}",
        response_model=dict[str, Any],
        tags=["memories"],
        responses=links(200, "RestoreMemory", "GetMemory", "MemoryHistory"),
    )
    async def forget_memory(memory_id: str, caller: who, hard: bool = False) -> dict[str, Any]:
        nous = nous_for(caller)
        memory = await owned(nous, caller, memory_id)
        return _dump(await nous.forget(memory.id, hard=hard))

    @app.post(
        "/v1/memories/{memory_id}/restore",
        response_model=dict[str, Any],
        tags=["memories"],
        responses=links(200, "GetMemory", "UpdateMemory", "ForgetMemory", "MemoryHistory"),
    )
    async def restore_memory(memory_id: str, caller: who) -> dict[str, Any]:
        nous = nous_for(caller)
        memory = await owned(nous, caller, memory_id)
        return _dump(await nous.restore(memory.id))

    @app.get("/v1/memories/{memory_id}/history", response_model=list[dict[str, Any]], tags=["memories"])
    async def memory_history(memory_id: str, caller: who) -> list[dict[str, Any]]:
        nous = nous_for(caller)
        memory = await visible(nous, caller, memory_id)
        return [h.model_dump(mode="json") for h in await nous.history(memory.id)]

    @app.post("/v1/memories/check-similar", response_model=dict[str, Any], tags=["memories"])
    async def check_similar(body: CheckSimilar, caller: who) -> dict[str, Any]:
        nous = nous_for(caller)
        found = await nous.check_similar(
            body.content, body.type, user_id=caller.user_id, subject=body.subject
        )
        return found.model_dump(mode="json")

    @app.post("/v1/recall/recent", response_model=Page, tags=["recall"])
    async def recall_recent(body: RecentRequest, caller: who) -> Page:
        nous = nous_for(caller)
        found = await nous.recall_recent(
            limit=body.limit,
            kinds=body.types or ("episode",),
            hours=body.hours,
            since=body.since,
            user_id=caller.user_id,
        )
        return Page(items=[_dump(m) for m in found])

    @app.post("/v1/sessions/{session_id}/turns", response_model=dict[str, Any], tags=["sessions"])
    async def pre_turn(session_id: str, body: TurnRequest, caller: who) -> dict[str, Any]:
        turn = await nous_for(caller).pre_turn(
            caller.session_key(session_id), body.text, user_id=caller.user_id, budget=body.budget
        )
        answer = {"context": turn.text, **turn.model_dump(mode="json", exclude={"text"})}
        return caller.outside(answer, session_id)

    @app.post("/v1/sessions/{session_id}/reply", response_model=dict[str, Any], tags=["sessions"])
    async def post_turn(session_id: str, body: ReplyRequest, caller: who) -> dict[str, Any]:
        from nous.cognitive import TurnResult

        state = await nous_for(caller).post_turn(
            caller.session_key(session_id), TurnResult(reply=body.reply, tools_used=body.tools_used)
        )
        return caller.outside(state.model_dump(mode="json"), session_id)

    @app.post("/v1/sessions/{session_id}/end", response_model=dict[str, Any], tags=["sessions"])
    async def end_session(session_id: str, body: EndRequest, caller: who) -> dict[str, Any]:
        done = await nous_for(caller).end_session(caller.session_key(session_id), reflection=body.reflection)
        return caller.outside(done.model_dump(mode="json"), session_id)

    @app.post("/v1/check-action", response_model=dict[str, Any], tags=["censors"])
    async def check_action(body: ActionRequest, caller: who) -> dict[str, Any]:
        verdict = await nous_for(caller).check_action(
            body.action, session_id=caller.session_keys(body.session_id)
        )
        return verdict.model_dump(mode="json")

    @app.get("/v1/stats", response_model=dict[str, Any], tags=["service"])
    async def stats(caller: who) -> dict[str, Any]:
        caller.require_agent_key("stats")
        nous = nous_for(caller)
        counts = await nous.event_counts()
        return {
            **(await nous.stats()).model_dump(mode="json"),
            "events": {k.value: v for k, v in counts.items()},
        }

    @app.get("/v1/events", response_model=Page, tags=["service"])
    async def events(
        caller: who,
        status: str | None = None,
        limit: int = Query(default=50, ge=1, le=1000),
        cursor: str | None = None,
    ) -> Page:
        caller.require_agent_key("the event queue")
        offset = _offset(cursor)
        found = await nous_for(caller).events(status=status, limit=min(offset + limit + 1, 1000))
        return _page([e.model_dump(mode="json") for e in found], offset, limit)


class ReviewRequest(StrictBody):
    outcome: Literal["success", "partial", "failure", "pending"]
    note: str | None = Field(default=None, max_length=5000)


class UseRequest(StrictBody):
    success: bool | None = None


class CensorEdit(StrictBody):
    trigger_pattern: str | None = Field(default=None, max_length=5000)
    action: Literal["warn", "block", "absolute"] | None = None
    reason: str | None = Field(default=None, max_length=5000)
    escalation_threshold: int | None = Field(default=None, ge=1, le=1_000_000)


class NoteRequest(StrictBody):
    note: str | None = Field(default=None, max_length=5000)


class IdentityRequest(StrictBody):
    content: str = Field(min_length=1, max_length=100_000, pattern=r"\S")


class LinkRequest(StrictBody):
    target_id: str = Field(max_length=200)
    relation: str = "relates_to"
    weight: float = Field(default=1.0, ge=0, le=1)


def register_organs(
    app: FastAPI,
    who: Any,
    nous_for: Callable[[Any], Nous],
) -> None:
    """Routes for decisions, procedures, censors, episodes, identity, working memory, links,
    proposals, ingest and export / import."""

    @app.post("/v1/decisions/{decision_id}/review", response_model=dict[str, Any], tags=["decisions"])
    async def review(decision_id: str, body: ReviewRequest, caller: who) -> dict[str, Any]:
        nous = nous_for(caller)
        memory = await owned(nous, caller, decision_id)
        return _dump(await nous.review_decision(memory.id, body.outcome, note=body.note))

    @app.get("/v1/calibration", response_model=dict[str, Any], tags=["decisions"])
    async def calibration(caller: who) -> dict[str, Any]:
        caller.require_agent_key("calibration")
        return (await nous_for(caller).calibration()).model_dump(mode="json")

    @app.get("/v1/proposals", response_model=Page, tags=["decisions"])
    async def proposals(
        caller: who, limit: int = Query(default=50, ge=1, le=1000), cursor: str | None = None
    ) -> Page:
        caller.require_agent_key("outcome proposals")
        offset = _offset(cursor)
        found = await nous_for(caller).outcome_proposals(limit=offset + limit + 1)
        return _page([_dump(d) for d in found], offset, limit)

    @app.post("/v1/proposals/{decision_id}/{verdict}", response_model=dict[str, Any], tags=["decisions"])
    async def settle(decision_id: str, verdict: Literal["accept", "reject"], caller: who) -> dict[str, Any]:
        caller.require_agent_key("settling an outcome proposal")
        nous = nous_for(caller)
        memory = await visible(nous, caller, decision_id)
        settled = await (
            nous.accept_proposal(memory.id) if verdict == "accept" else nous.reject_proposal(memory.id)
        )
        return _dump(settled)

    @app.post("/v1/procedures/{procedure_id}/use", response_model=dict[str, Any], tags=["procedures"])
    async def use_procedure(procedure_id: str, body: UseRequest, caller: who) -> dict[str, Any]:
        nous = nous_for(caller)
        memory = await owned(nous, caller, procedure_id)
        return _dump(await nous.heart.procedures.record_use(memory.id, success=body.success))

    @app.get("/v1/censors", response_model=Page, tags=["censors"])
    async def censors(
        caller: who, limit: int = Query(default=50, ge=1, le=1000), cursor: str | None = None
    ) -> Page:
        offset = _offset(cursor)
        found = await nous_for(caller).censors(limit=offset + limit + 1)
        return _page([_dump(c) for c in found], offset, limit)

    @app.patch("/v1/censors/{censor_id}", response_model=dict[str, Any], tags=["censors"])
    async def edit_censor(censor_id: str, body: CensorEdit, caller: who) -> dict[str, Any]:
        nous = nous_for(caller)
        memory = await owned(nous, caller, censor_id)
        return _dump(await nous.edit_censor(memory.id, **body.model_dump(exclude_none=True)))

    @app.post("/v1/censors/{censor_id}/false-positive", response_model=dict[str, Any], tags=["censors"])
    async def false_positive(censor_id: str, body: NoteRequest, caller: who) -> dict[str, Any]:
        nous = nous_for(caller)
        memory = await owned(nous, caller, censor_id)
        return _dump(await nous.report_false_positive(memory.id, body.note))

    @app.post("/v1/censors/{censor_id}/retire", response_model=dict[str, Any], tags=["censors"])
    async def retire(censor_id: str, body: NoteRequest, caller: who) -> dict[str, Any]:
        nous = nous_for(caller)
        memory = await owned(nous, caller, censor_id)
        return _dump(await nous.retire_censor(memory.id, body.note))

    @app.post("/v1/memories/{memory_id}/links", response_model=dict[str, bool], tags=["memories"])
    async def link(memory_id: str, body: LinkRequest, caller: who) -> dict[str, bool]:
        nous = nous_for(caller)
        source = await owned(nous, caller, memory_id)
        target = await visible(nous, caller, body.target_id)
        return {"created": await nous.link(source.id, target.id, body.relation, weight=body.weight)}

    @app.get("/v1/identity", response_model=list[dict[str, Any]], tags=["identity"])
    async def identity(caller: who) -> list[dict[str, Any]]:
        return [s.model_dump(mode="json") for s in await nous_for(caller).identity()]

    @app.put("/v1/identity/{section}", response_model=dict[str, Any], tags=["identity"])
    async def set_identity(section: str, body: IdentityRequest, caller: who) -> dict[str, Any]:
        caller.require_agent_key("the agent's identity")
        return (await nous_for(caller).set_identity(section, body.content)).model_dump(mode="json")

    @app.get("/v1/sessions/{session_id}/working-memory", response_model=dict[str, Any], tags=["sessions"])
    async def working_memory(session_id: str, caller: who) -> dict[str, Any]:
        nous, key = nous_for(caller), caller.session_key(session_id)
        await nous.session(key)  # 404 for a session this caller does not have
        return caller.outside((await nous.heart.working_memory.get(key)).model_dump(mode="json"), session_id)

    @app.post("/v1/ingest", response_model=dict[str, Any], tags=["conversations"])
    async def ingest(body: dict[str, Any], caller: who) -> dict[str, Any]:
        report = await nous_for(caller).ingest(json.dumps(body), user_id=caller.user_id)
        return report.model_dump(mode="json")

    @app.get(
        "/v1/export",
        tags=["conversations"],
        response_class=StreamingResponse,
        responses={
            200: {
                "description": "JSONL: a header line, then memories and edges",
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        },
    )
    async def export(caller: who) -> StreamingResponse:
        caller.require_agent_key("export")
        nous = nous_for(caller)

        async def lines() -> Any:
            async for line in nous.export_lines():
                yield line + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    @app.post("/v1/import", response_model=dict[str, int], tags=["conversations"])
    async def import_(request: Request, caller: who) -> dict[str, int]:
        """An export's JSONL lines (validated whole first; nothing is written if a line is bad)."""
        caller.require_agent_key("import")
        try:
            text = (await request.body()).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInputError("the body is not UTF-8 text") from None
        return {"imported": await nous_for(caller).import_jsonl(io.StringIO(text))}
