"""Every REST operation of ``nous serve``, declared once: its handler (whose name is the
operationId, in camelCase), method and path, answer model, status, tag and documented answers.
``create_app`` registers the routes from this table and nothing else registers one;
``scripts/gen_client.py`` writes ``AsyncClient``'s methods from the ``calls`` of each row.

What a request may reach is declared on the handler's parameters and body fields (scope markers,
``nous.server.scope``) and applied by the one dispatcher every route goes through
(``ScopedRoute``), so a row needs nothing more to be scoped; ``tests/test_scope_table.py`` probes
every row's fields with another user's and another agent's values."""

from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi import FastAPI, Response
from fastapi.responses import StreamingResponse

from nous.cognitive import Context
from nous.heart.censor_rules import ActionCheck
from nous.memory.dedup import SimilarityCheck
from nous.models import Calibration, Edge, ErasureReceipt, HistoryEntry, WorkingMemory
from nous.models.session import IdentitySection, SessionState
from nous.models.threads import Thread
from nous.server import aggregates, essentials, routes, threads
from nous.server.problems import READ, READ_ID, WRITE, WRITE_ID, errors
from nous.server.schemas import (
    AnyMemory,
    CensorOut,
    CensorPage,
    CreatedMemory,
    DecisionOut,
    DecisionPage,
    EpisodeOut,
    EpisodePage,
    EventPage,
    Imported,
    LinkCreated,
    MemoryPage,
    ProcedureOut,
    SessionEndOut,
    SessionPage,
    Stats,
    TurnOutput,
)

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
Tag = Literal[
    "memories",
    "recall",
    "decisions",
    "episodes",
    "sessions",
    "procedures",
    "censors",
    "identity",
    "conversations",
    "threads",
    "service",
]
Answers = dict[int | str, dict[str, Any]]


@dataclass(frozen=True)
class Call:
    """An ``AsyncClient`` method written from an operation's row (``scripts/gen_client.py``): the
    ``Nous`` method of the same name, with its parameters (less those the server decides) sent as
    the row's path parameters, query or body fields by name, and its answer made from the JSON
    the server returns (``data``).

    ``wire`` renames a parameter on the wire (``"description": "content"``; ``"**"`` spreads the
    dict its converter returns into the body); ``convert`` names the client function that makes
    a parameter's value JSON; ``fixed`` adds fields or path parameters always sent (values as
    Python source); ``answer`` is an expression over ``data``; ``paged`` follows the list's
    cursors up to ``limit`` items."""

    method: str
    answer: str
    wire: dict[str, str] = field(default_factory=dict)
    convert: dict[str, str] = field(default_factory=dict)
    fixed: dict[str, str] = field(default_factory=dict)
    paged: bool = False


@dataclass(frozen=True)
class Operation:
    """One REST operation."""

    handler: Any  # an async function; its parameters are the request's, its scope markers with them
    method: Method
    path: str
    tag: Tag
    answers: Answers
    response: Any = None  # the answer's model (its schema in the OpenAPI document)
    status: int = 200
    response_class: type[Response] | None = None
    openapi_extra: dict[str, Any] | None = None
    calls: tuple[Call, ...] = ()  # the AsyncClient methods written from this row

    @property
    def name(self) -> str:
        return str(self.handler.__name__)

    def register(self, app: FastAPI) -> None:
        extra: dict[str, Any] = {}
        if self.response_class is not None:
            extra["response_class"] = self.response_class
        if self.openapi_extra is not None:
            extra["openapi_extra"] = self.openapi_extra
        app.add_api_route(
            self.path,
            self.handler,
            methods=[self.method],
            response_model=self.response,
            status_code=self.status,
            tags=[self.tag],
            responses=self.answers,
            **extra,
        )


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        essentials.health,
        "GET",
        "/health",
        tag="service",
        response=essentials.Health,
        answers=errors(503),
    ),
    Operation(
        essentials.create_memory,
        "POST",
        "/v1/memories",
        tag="memories",
        response=CreatedMemory,
        status=201,
        answers=essentials.CREATE_ANSWERS | errors(*WRITE, 404),  # 404: the fact it supersedes is unknown
        calls=(
            Call("learn", "_written(data)", fixed={"type": '"fact"'}),
            Call(
                "add_procedure",
                "_written(data)",
                wire={"description": "content"},
                fixed={"type": '"procedure"'},
            ),
            Call(
                "add_censor",
                "_written(data)",
                wire={"trigger_pattern": "content"},
                fixed={"type": '"censor"'},
            ),
        ),
    ),
    Operation(
        essentials.get_memory,
        "GET",
        "/v1/memories/{memory_id}",
        tag="memories",
        response=AnyMemory,
        answers=routes.links(200, "UpdateMemory", "ForgetMemory", "MemoryHistory") | errors(*READ_ID),
        calls=(Call("get", "_memory(data)"),),
    ),
    Operation(
        essentials.recall,
        "POST",
        "/v1/recall",
        tag="recall",
        response=essentials.RecallResponse,
        answers=errors(*WRITE),
        calls=(Call("recall", "_hits(data)", wire={"kinds": "types"}, convert={"kinds": "_kinds"}),),
    ),
    Operation(
        routes.list_memories,
        "GET",
        "/v1/memories",
        tag="memories",
        response=MemoryPage,
        answers=errors(*READ),
        calls=(
            Call(
                "memories",
                "[_memory(m) for m in data]",
                wire={"kinds": "type", "offset": "cursor"},
                convert={"kinds": "_kinds", "offset": "_cursor", "where": "_where_query"},
                paged=True,
            ),
        ),
    ),
    Operation(
        routes.update_memory,
        "PATCH",
        "/v1/memories/{memory_id}",
        tag="memories",
        response=AnyMemory,
        answers=routes.links(200, "GetMemory", "ForgetMemory", "MemoryHistory") | errors(*WRITE_ID),
        calls=(Call("update", "_memory(data)"),),
    ),
    Operation(
        routes.forget_memory,
        "DELETE",
        "/v1/memories/{memory_id}",
        tag="memories",
        response=AnyMemory,
        answers=routes.links(200, "RestoreMemory", "GetMemory", "MemoryHistory") | errors(*READ_ID),
        calls=(Call("forget", "_memory(data)"),),
    ),
    Operation(
        routes.restore_memory,
        "POST",
        "/v1/memories/{memory_id}/restore",
        tag="memories",
        response=AnyMemory,
        answers=routes.links(200, "GetMemory", "UpdateMemory", "ForgetMemory", "MemoryHistory")
        | errors(*READ_ID),
        calls=(Call("restore", "_memory(data)"),),
    ),
    Operation(
        routes.memory_history,
        "GET",
        "/v1/memories/{memory_id}/history",
        tag="memories",
        response=list[HistoryEntry],
        answers=errors(*READ_ID),
        calls=(Call("history", "[HistoryEntry.model_validate(h) for h in data]"),),
    ),
    Operation(
        routes.check_similar,
        "POST",
        "/v1/memories/check-similar",
        tag="memories",
        response=SimilarityCheck,
        answers=errors(*WRITE),
        calls=(Call("check_similar", "SimilarityCheck.model_validate(data)", wire={"kind": "type"}),),
    ),
    Operation(
        routes.recall_recent,
        "POST",
        "/v1/recall/recent",
        tag="recall",
        response=MemoryPage,
        answers=errors(*WRITE),
        calls=(
            Call(
                "recall_recent",
                "[_memory(m) for m in data['items']]",
                wire={"kinds": "types"},
                convert={"kinds": "_kinds"},
            ),
        ),
    ),
    Operation(
        routes.pre_turn,
        "POST",
        "/v1/sessions/{session_id}/turns",
        tag="sessions",
        response=TurnOutput,
        answers=errors(*WRITE, 409),
        calls=(Call("pre_turn", "_turn_context(data)", wire={"user_text": "text"}),),
    ),
    Operation(
        routes.post_turn,
        "POST",
        "/v1/sessions/{session_id}/reply",
        tag="sessions",
        response=SessionState,
        answers=errors(*WRITE_ID, 409),
        calls=(
            Call(
                "post_turn",
                "SessionState.model_validate(data)",
                wire={"result": "**"},
                convert={"result": "_reply"},
            ),
        ),
    ),
    Operation(
        routes.end_session,
        "POST",
        "/v1/sessions/{session_id}/end",
        tag="sessions",
        response=SessionEndOut,
        answers=errors(*WRITE_ID),
        calls=(Call("end_session", "_session_end(data)"),),
    ),
    Operation(
        routes.check_action,
        "POST",
        "/v1/check-action",
        tag="censors",
        response=ActionCheck,
        answers=errors(*WRITE),
        calls=(Call("check_action", "ActionCheck.model_validate(data)", wire={"action_text": "action"}),),
    ),
    Operation(
        routes.get_stats,
        "GET",
        "/v1/stats",
        tag="service",
        response=Stats,
        answers=errors(401, 403, 503),
        calls=(
            Call("stats", "_stats(data)"),
            Call("event_counts", "_event_counts(data)"),
        ),
    ),
    Operation(
        routes.list_events,
        "GET",
        "/v1/events",
        tag="service",
        response=EventPage,
        answers=errors(*READ),
        calls=(Call("events", "[Event.model_validate(e) for e in data]", paged=True),),
    ),
    Operation(
        routes.forget_user,
        "DELETE",
        "/v1/users/{user_id}",
        tag="memories",
        response=ErasureReceipt,
        answers=errors(*READ),
        calls=(Call("forget_user", "ErasureReceipt.model_validate(data)"),),
    ),
    Operation(
        routes.review_decision,
        "POST",
        "/v1/decisions/{decision_id}/review",
        tag="decisions",
        response=DecisionOut,
        answers=errors(*WRITE_ID),
        calls=(Call("review_decision", "_typed(data, Decision)"),),
    ),
    Operation(
        routes.get_calibration,
        "GET",
        "/v1/calibration",
        tag="decisions",
        response=Calibration,
        answers=errors(401, 403, 503),
        calls=(Call("calibration", "Calibration.model_validate(data)"),),
    ),
    Operation(
        routes.list_proposals,
        "GET",
        "/v1/proposals",
        tag="decisions",
        response=DecisionPage,
        answers=errors(*READ),
        calls=(Call("outcome_proposals", "[_typed(d, Decision) for d in data]", paged=True),),
    ),
    Operation(
        routes.settle_proposal,
        "POST",
        "/v1/proposals/{decision_id}/{verdict}",
        tag="decisions",
        response=DecisionOut,
        answers=errors(*READ_ID, 409),
        calls=(
            Call("accept_proposal", "_typed(data, Decision)", fixed={"verdict": '"accept"'}),
            Call("reject_proposal", "_typed(data, Decision)", fixed={"verdict": '"reject"'}),
        ),
    ),
    Operation(
        routes.use_procedure,
        "POST",
        "/v1/procedures/{procedure_id}/use",
        tag="procedures",
        response=ProcedureOut,
        answers=errors(*WRITE_ID),
    ),
    Operation(
        routes.list_censors,
        "GET",
        "/v1/censors",
        tag="censors",
        response=CensorPage,
        answers=errors(*READ),
        calls=(Call("censors", "[_typed(c, Censor) for c in data]", paged=True),),
    ),
    Operation(
        routes.edit_censor,
        "PATCH",
        "/v1/censors/{censor_id}",
        tag="censors",
        response=CensorOut,
        answers=errors(*WRITE_ID),
        calls=(Call("edit_censor", "_typed(data, Censor)"),),
    ),
    Operation(
        routes.report_false_positive,
        "POST",
        "/v1/censors/{censor_id}/false-positive",
        tag="censors",
        response=CensorOut,
        answers=errors(*WRITE_ID),
        calls=(Call("report_false_positive", "_typed(data, Censor)"),),
    ),
    Operation(
        routes.retire_censor,
        "POST",
        "/v1/censors/{censor_id}/retire",
        tag="censors",
        response=CensorOut,
        answers=errors(*WRITE_ID),
        calls=(Call("retire_censor", "_typed(data, Censor)", wire={"reason": "note"}),),
    ),
    Operation(
        routes.link_memories,
        "POST",
        "/v1/memories/{memory_id}/links",
        tag="memories",
        response=LinkCreated,
        answers=errors(*WRITE_ID),
        calls=(Call("link", "bool(data['created'])", wire={"source_id": "memory_id"}),),
    ),
    Operation(
        routes.memory_links,
        "GET",
        "/v1/memories/{memory_id}/links",
        tag="memories",
        response=list[Edge],
        answers=errors(*READ_ID),
        calls=(Call("edges", "[Edge.model_validate(e) for e in data]"),),
    ),
    Operation(
        routes.supersede_memory,
        "POST",
        "/v1/memories/{memory_id}/supersede",
        tag="memories",
        response=AnyMemory,
        answers=routes.links(200, "GetMemory", "MemoryHistory") | errors(*WRITE_ID),
        calls=(Call("supersede", "_memory(data)"),),
    ),
    Operation(
        routes.get_identity,
        "GET",
        "/v1/identity",
        tag="identity",
        response=list[IdentitySection],
        answers=errors(401, 403, 503),
        calls=(Call("identity", "[IdentitySection.model_validate(s) for s in data]"),),
    ),
    Operation(
        routes.set_identity,
        "PUT",
        "/v1/identity/{section}",
        tag="identity",
        response=IdentitySection,
        answers=errors(*WRITE),
        calls=(Call("set_identity", "IdentitySection.model_validate(data)"),),
    ),
    Operation(
        routes.get_working_memory,
        "GET",
        "/v1/sessions/{session_id}/working-memory",
        tag="sessions",
        response=WorkingMemory,
        answers=errors(*READ_ID),
    ),
    Operation(
        routes.export_memories,
        "GET",
        "/v1/export",
        tag="conversations",
        answers=routes.EXPORT_BODY | errors(401, 403, 503),
        response_class=StreamingResponse,
    ),
    Operation(
        routes.import_memories,
        "POST",
        "/v1/import",
        tag="conversations",
        response=Imported,
        answers=errors(*WRITE),
        openapi_extra=routes.JSONL_BODY,
    ),
    Operation(
        aggregates.create_decision,
        "POST",
        "/v1/decisions",
        tag="decisions",
        response=DecisionOut,
        status=201,
        answers=aggregates.location("decision") | errors(*WRITE_ID),
        calls=(Call("record_decision", "_typed(data, Decision)", wire={"description": "content"}),),
    ),
    Operation(
        aggregates.list_decisions,
        "GET",
        "/v1/decisions",
        tag="decisions",
        response=DecisionPage,
        answers=errors(*READ),
    ),
    Operation(
        aggregates.get_decision,
        "GET",
        "/v1/decisions/{decision_id}",
        tag="decisions",
        response=DecisionOut,
        answers=errors(*READ_ID),
    ),
    Operation(
        aggregates.start_episode,
        "POST",
        "/v1/episodes",
        tag="episodes",
        response=EpisodeOut,
        status=201,
        answers=aggregates.location("episode") | errors(*WRITE),
        calls=(Call("start_episode", "_typed(data, Episode)"),),
    ),
    Operation(
        aggregates.list_episodes,
        "GET",
        "/v1/episodes",
        tag="episodes",
        response=EpisodePage,
        answers=errors(*READ),
    ),
    Operation(
        aggregates.get_episode,
        "GET",
        "/v1/episodes/{episode_id}",
        tag="episodes",
        response=EpisodeOut,
        answers=errors(*READ_ID),
    ),
    Operation(
        aggregates.end_episode,
        "POST",
        "/v1/episodes/{episode_id}/end",
        tag="episodes",
        response=EpisodeOut,
        answers=errors(*WRITE_ID),
        calls=(Call("end_episode", "_typed(data, Episode)"),),
    ),
    Operation(
        aggregates.list_sessions,
        "GET",
        "/v1/sessions",
        tag="sessions",
        response=SessionPage,
        answers=errors(*READ),
        calls=(Call("sessions", "[SessionState.model_validate(s) for s in data]", paged=True),),
    ),
    Operation(
        aggregates.get_session,
        "GET",
        "/v1/sessions/{session_id}",
        tag="sessions",
        response=SessionState,
        answers=errors(*READ_ID),
        calls=(Call("session", "SessionState.model_validate(data)"),),
    ),
    Operation(
        aggregates.preview_turn,
        "POST",
        "/v1/preview",
        tag="sessions",
        response=Context,
        answers=errors(*WRITE),
        calls=(Call("preview_turn", "Context.model_validate(data)", wire={"user_text": "text"}),),
    ),
    Operation(
        aggregates.ingest,
        "POST",
        "/v1/ingest",
        tag="conversations",
        response=aggregates.Job,
        status=202,
        answers=aggregates.INGEST_ANSWERS | errors(*WRITE),
    ),
    Operation(
        aggregates.get_job,
        "GET",
        "/v1/jobs/{job_id}",
        tag="conversations",
        response=aggregates.Job,
        answers=errors(*READ_ID),
    ),
    Operation(
        threads.list_threads,
        "GET",
        "/v1/threads",
        tag="threads",
        response=threads.ThreadPage,
        answers=errors(*READ),
        calls=(Call("threads", "[Thread.model_validate(t) for t in data]", paged=True),),
    ),
    Operation(
        threads.get_thread,
        "GET",
        "/v1/threads/{thread_id}",
        tag="threads",
        response=Thread,
        answers=errors(*READ_ID),
        calls=(Call("thread", "Thread.model_validate(data)"),),
    ),
)
