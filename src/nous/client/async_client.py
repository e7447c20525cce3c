"""The REST API of `nous serve` as an async client with the methods, parameters and return models
of ``Nous`` (see ``nous.client``). Parameters the server decides itself are not sent: ``actor``
(the API key is the actor), ``provenance`` and ``censors`` (the engine stamps where a memory came
from and the session's active censors), local callbacks (``progress``, ``on_parsed``) and
``record``; ``tests/test_client_surface.py`` lists them and checks the rest match."""

from __future__ import annotations

import asyncio
import json as jsonlib
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import quote
from uuid import uuid4

import httpx
from pydantic import BaseModel

from nous.cognitive import Context, SessionEnd, TurnContext, TurnResult
from nous.errors import (
    AuthenticationError,
    ConflictError,
    GuardrailError,
    InvalidInputError,
    NotFoundError,
    NousError,
    PermissionDeniedError,
    StorageError,
)
from nous.heart import ActionCheck
from nous.ingest import Conversation, IngestReport, parse_conversation
from nous.memory.dedup import SimilarityCheck
from nous.models import (
    MEMORY_TYPES,
    Calibration,
    Censor,
    CensorAction,
    Decision,
    Edge,
    EdgeRelation,
    Episode,
    ErasureReceipt,
    HistoryEntry,
    LifecycleState,
    Memory,
    MemoryKind,
    RecallHit,
    StoreStats,
    WriteResult,
    WriteStatus,
)
from nous.models.brain import DecisionCategory, Reason, Stakes
from nous.models.events import Event, EventStatus
from nous.models.heart import EpisodeOutcome, FactCategory
from nous.models.session import IdentitySection, SessionState
from nous.models.threads import Thread

_BY_CODE: dict[str, type[NousError]] = {
    "unauthorized": AuthenticationError,
    "forbidden": PermissionDeniedError,
    "not_found": NotFoundError,
    "conflict": ConflictError,
    "guardrail_blocked": GuardrailError,
    "invalid_input": InvalidInputError,
}


# The POSTs that create something: each is sent with an Idempotency-Key, and sent again with the
# same key when its answer is lost on the way (the server then answers what it answered first).
_CREATING = re.compile(
    r"/v1/(memories|decisions|episodes|ingest|import|memories/[^/]+/supersede|sessions/[^/]+/(turns|reply))"
)
RETRIES = 2


def _memory(data: Mapping[str, Any]) -> Memory:
    body = dict(data)
    kind = MemoryKind(body.pop("type", None) or body.pop("kind"))
    return MEMORY_TYPES[kind].model_validate(body)


def _typed(data: Mapping[str, Any], cls: type[Memory]) -> Any:
    memory = _memory(data)
    if not isinstance(memory, cls):
        raise StorageError(f"the server answered a {memory.kind.value}, not a {cls.__name__}")
    return memory


def _error(response: httpx.Response) -> NousError:
    """The engine's typed error for a problem-details answer."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    detail = str(body.get("detail") or body.get("title") or response.text[:500])
    status, field = response.status_code, body.get("field")
    cls = _BY_CODE.get(str(body.get("code")))
    if cls is InvalidInputError or (cls is None and status in (400, 408, 413, 422)):
        return InvalidInputError(detail, field=field)
    if cls is not None:
        return cls(detail)
    if status == 401:
        return AuthenticationError(detail)
    if status == 403:
        return PermissionDeniedError(detail)
    if status == 404:
        return NotFoundError(detail)
    if status == 409:
        return ConflictError(detail)
    if status >= 500:
        return StorageError(f"server error {status}: {detail}")
    return NousError(f"HTTP {status}: {detail}")


def _kinds(kinds: Sequence[str | MemoryKind] | str | None) -> list[str] | None:
    if kinds is None:
        return None
    return [MemoryKind(kinds).value] if isinstance(kinds, str) else [MemoryKind(k).value for k in kinds]


def _json(value: object) -> object:
    """``value`` as JSON sends it: datetimes as ISO 8601, enums as their values, models dumped."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_json(v) for v in value]
    return value


def _fields(**fields: Any) -> dict[str, Any]:
    """A body or query of the fields given, as JSON sends them (None left out)."""
    return {name: _json(value) for name, value in fields.items() if value is not None}


def _segment(value: str) -> str:
    """A path parameter, percent-encoded whole (an id may hold any character)."""
    return quote(value, safe="")


def _where_query(where: Mapping[str, Any] | None) -> str | None:
    """A metadata filter as the list route's ``where`` query parameter (JSON)."""
    return jsonlib.dumps(_json(where), separators=(",", ":")) if where else None


def _cursor(offset: int) -> str | None:
    """The list cursor that starts at ``offset`` (the server's cursors are offsets)."""
    return str(offset) if offset else None


def _reply(result: TurnResult | str) -> dict[str, Any]:
    turn = result if isinstance(result, TurnResult) else TurnResult(reply=result)
    return {
        "text": turn.reply,
        "tools_used": turn.tools_used,
        "decision_ids": turn.decision_ids,
        "fact_ids": turn.fact_ids,
    }


def _written(data: Mapping[str, Any]) -> WriteResult:
    return WriteResult(
        status=WriteStatus(data["status"]),
        memory=_memory(data["memory"]),
        existing_id=data.get("existing_id"),
        similarity=data.get("similarity"),
        warnings=data.get("warnings") or [],
    )


def _hits(data: Mapping[str, Any]) -> list[RecallHit]:
    return [
        RecallHit(
            id=r["id"],
            kind=MemoryKind(r["type"]),
            content=r["content"],
            score=r["score"],
            signals=r["signals"],
            occurred_at=r["occurred_at"],
            current=r["current"],
            memory=_memory(r["memory"]),
        )
        for r in data["results"]
    ]


def _turn_context(data: Mapping[str, Any]) -> TurnContext:
    answer = dict(data)
    answer["text"] = answer.pop("context")
    return TurnContext.model_validate(answer)


def _session_end(data: Mapping[str, Any]) -> SessionEnd:
    return SessionEnd(
        session=SessionState.model_validate(data["session"]),
        episode=None if data.get("episode") is None else _typed(data["episode"], Episode),
        facts=[_written(f) for f in data.get("facts") or []],
        ended_now=data["ended_now"],
    )


def _stats(data: Mapping[str, Any]) -> StoreStats:
    return StoreStats.model_validate({k: v for k, v in data.items() if k != "events"})


def _event_counts(data: Mapping[str, Any]) -> dict[EventStatus, int]:
    return {EventStatus(k): int(v) for k, v in (data.get("events") or {}).items()}


class AsyncClient:
    """The REST API of one agent (the key's) with the methods of ``Nous``:
    ``AsyncClient("http://127.0.0.1:8765", key=KEY)``. An agent's key may act for any of its users
    (``user_id=``); a user-bound key acts only as its own user."""

    def __init__(self, url: str, *, key: str | None = None, timeout: float = 60.0) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.AsyncClient(base_url=url.rstrip("/"), headers=headers, timeout=timeout)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        content: str | None = None,
        timeout: float | httpx.USE_CLIENT_DEFAULT | None = httpx.USE_CLIENT_DEFAULT,  # type: ignore[valid-type]
    ) -> httpx.Response:
        query: dict[str, Any] = {k: _json(v) for k, v in (params or {}).items() if v is not None}
        headers = {"Content-Type": "application/x-ndjson"} if content is not None else {}
        creates = method == "POST" and _CREATING.fullmatch(path) is not None
        if creates:
            headers["Idempotency-Key"] = uuid4().hex
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    method, path, json=json, params=query, content=content, headers=headers, timeout=timeout
                )
                break
            except httpx.TransportError as exc:  # a retry of a creating POST is safe: it carries its key
                if not creates or attempt >= RETRIES:
                    raise StorageError(
                        f"cannot reach the Nous server at {self._http.base_url}: {exc}"
                    ) from exc
                attempt += 1
                await asyncio.sleep(0.2 * 2**attempt)
            except httpx.HTTPError as exc:
                raise StorageError(f"cannot reach the Nous server at {self._http.base_url}: {exc}") from exc
        if response.status_code >= 400:
            raise _error(response)
        return response

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return (await self._send(method, path, **kwargs)).json()

    async def _pages(self, path: str, limit: int, params: Mapping[str, Any] | None = None) -> list[Any]:
        """Up to ``limit`` items of a paged list, following ``next_cursor``."""
        items: list[Any] = []
        query = dict(params or {})
        cursor: str | None = query.pop("cursor", None)  # where to start (memories' offset)
        while len(items) < limit:
            page = await self._call(
                "GET", path, params={**query, "limit": min(1000, limit - len(items)), "cursor": cursor}
            )
            items += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                break
        return items[:limit]

    # -- the service ---------------------------------------------------------------------------
    async def health(self) -> dict[str, Any]:
        """The server's health (no key needed)."""
        return dict(await self._call("GET", "/health"))

    # -- GENERATED by scripts/gen_client.py from nous.server.operations: do not edit by hand --
    async def learn(
        self,
        content: str,
        *,
        subject: str | None = None,
        category: str | FactCategory | None = None,
        source: str | None = None,
        confidence: float = 1.0,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        occurred_at: datetime | None = None,
        frame: str | None = None,
        supersedes: str | None = None,
        dedup: bool = True,
    ) -> WriteResult:
        """Store a fact through the write path (duplicate, update and contradiction checks). ``supersedes`` names
        a fact this one replaces; ``dedup=False`` stores it unchecked. With ``session_id`` of a live
        session the fact carries that session's frame and active censors."""
        data = await self._call(
            "POST",
            "/v1/memories",
            json=_fields(
                type="fact",
                content=content,
                subject=subject,
                category=category,
                source=source,
                confidence=confidence,
                tags=tags,
                metadata=metadata,
                user_id=user_id,
                session_id=session_id,
                occurred_at=occurred_at,
                frame=frame,
                supersedes=supersedes,
                dedup=dedup,
            ),
        )
        return _written(data)

    async def add_procedure(
        self,
        name: str,
        description: str,
        *,
        domain: str | None = None,
        goals: list[str] | None = None,
        core_patterns: list[str] | None = None,
        core_tools: list[str] | None = None,
        core_concepts: list[str] | None = None,
        notes: str | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        frame: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        occurred_at: datetime | None = None,
        dedup: bool = True,
    ) -> WriteResult:
        """Store a procedure (how to do something); with ``session_id`` it carries the live session's frame and
        censors."""
        data = await self._call(
            "POST",
            "/v1/memories",
            json=_fields(
                type="procedure",
                name=name,
                content=description,
                domain=domain,
                goals=goals,
                core_patterns=core_patterns,
                core_tools=core_tools,
                core_concepts=core_concepts,
                notes=notes,
                tags=tags,
                metadata=metadata,
                frame=frame,
                session_id=session_id,
                user_id=user_id,
                occurred_at=occurred_at,
                dedup=dedup,
            ),
        )
        return _written(data)

    async def add_censor(
        self,
        trigger_pattern: str,
        *,
        action: str | CensorAction = CensorAction.WARN,
        reason: str | None = None,
        domain: str | None = None,
        escalation_threshold: int = 3,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        occurred_at: datetime | None = None,
        dedup: bool = True,
    ) -> WriteResult:
        """Store a censor: a case-insensitive trigger regex and what happens when it fires (``warn``, ``block``,
        ``absolute``), with the reason shown to the agent."""
        data = await self._call(
            "POST",
            "/v1/memories",
            json=_fields(
                type="censor",
                content=trigger_pattern,
                action=action,
                reason=reason,
                domain=domain,
                escalation_threshold=escalation_threshold,
                tags=tags,
                metadata=metadata,
                user_id=user_id,
                occurred_at=occurred_at,
                dedup=dedup,
            ),
        )
        return _written(data)

    async def get(self, memory_id: str) -> Memory:
        """One memory by id (or a unique prefix of 6+ characters)."""
        data = await self._call("GET", f"/v1/memories/{_segment(memory_id)}")
        return _memory(data)

    async def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        kinds: Sequence[str | MemoryKind] | str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        include_inactive: bool = False,
        include_superseded: bool = False,
        frame: str | None = None,
        active_censors: Sequence[str] | None = None,
        now: datetime | None = None,
        as_of: datetime | None = None,
        reinforce: bool = True,
        preset: str | None = None,
        min_score: float | None = None,
        in_session: str | None = None,
        where: Mapping[str, Any] | None = None,
        cover: bool | None = None,
    ) -> list[RecallHit]:
        """Memories relevant to ``query``, best first, with the signals behind each score."""
        data = await self._call(
            "POST",
            "/v1/recall",
            json=_fields(
                query=query,
                limit=limit,
                types=_kinds(kinds),
                user_id=user_id,
                session_id=session_id,
                since=since,
                until=until,
                include_inactive=include_inactive,
                include_superseded=include_superseded,
                frame=frame,
                active_censors=active_censors,
                now=now,
                as_of=as_of,
                reinforce=reinforce,
                preset=preset,
                min_score=min_score,
                in_session=in_session,
                where=where,
                cover=cover,
            ),
        )
        return _hits(data)

    async def memories(
        self,
        kinds: Sequence[str | MemoryKind] | str | None = None,
        *,
        limit: int = 50,
        offset: int = 0,
        include_inactive: bool = False,
        include_superseded: bool = False,
        superseded_only: bool = False,
        user_id: str | None = None,
        subject: str | None = None,
        category: str | None = None,
        session_id: str | None = None,
        lifecycle: Sequence[str | LifecycleState] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> list[Memory]:
        """Memories, most recent first; with ``user_id``, that user's and the agent's shared ones."""
        data = await self._pages(
            "/v1/memories",
            limit,
            _fields(
                type=_kinds(kinds),
                cursor=_cursor(offset),
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
                where=_where_query(where),
            ),
        )
        return [_memory(m) for m in data]

    async def update(self, memory_id: str, **changes: Any) -> Memory:
        """Change fields of a memory (audited). ``metadata=`` replaces the whole object."""
        data = await self._call("PATCH", f"/v1/memories/{_segment(memory_id)}", json=_fields(**changes))
        return _memory(data)

    async def forget(self, memory_id: str, *, hard: bool = False) -> Memory:
        """Soft-delete a memory, or purge it for good with ``hard=True`` (both audited, by ``actor``). Its topic
        thread no longer holds it: its words leave the thread's label and its meaning the thread's
        centroid, and a thread with no member left is dropped."""
        data = await self._call("DELETE", f"/v1/memories/{_segment(memory_id)}", params=_fields(hard=hard))
        return _memory(data)

    async def restore(self, memory_id: str) -> Memory:
        """Undo a soft delete; the memory's topic thread counts it again."""
        data = await self._call("POST", f"/v1/memories/{_segment(memory_id)}/restore")
        return _memory(data)

    async def history(self, memory_id: str) -> list[HistoryEntry]:
        """Every recorded change to a memory, oldest first."""
        data = await self._call("GET", f"/v1/memories/{_segment(memory_id)}/history")
        return [HistoryEntry.model_validate(h) for h in data]

    async def check_similar(
        self,
        content: str,
        kind: str | MemoryKind = MemoryKind.FACT,
        *,
        user_id: str | None = None,
        subject: str | None = None,
    ) -> SimilarityCheck:
        """What storing ``content`` as ``kind`` would find: close memories and a recommendation
        (``duplicate_found`` / ``similar_found`` / ``unique``). Nothing is written."""
        data = await self._call(
            "POST",
            "/v1/memories/check-similar",
            json=_fields(content=content, type=kind, user_id=user_id, subject=subject),
        )
        return SimilarityCheck.model_validate(data)

    async def recall_recent(
        self,
        *,
        limit: int = 10,
        kinds: Sequence[str | MemoryKind] | str | None = ("episode",),
        hours: float | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
    ) -> list[Memory]:
        """The most recent memories by when they happened, whatever their topic (closed episodes included): the
        last ``hours`` (default NOUS_RECENT_HOURS, 48), or since ``since``; with ``user_id``, that
        user's and the agent's shared ones. Episodes still running in other sessions are left out: they
        are those conversations' own business until they end."""
        data = await self._call(
            "POST",
            "/v1/recall/recent",
            json=_fields(
                limit=limit,
                types=_kinds(kinds),
                hours=hours,
                since=since,
                until=until,
                session_id=session_id,
                user_id=user_id,
            ),
        )
        return [_memory(m) for m in data["items"]]

    async def pre_turn(
        self,
        session_id: str,
        user_text: str,
        *,
        user_id: str | None = None,
        frame: str | None = None,
        budget: int | None = None,
        at: datetime | None = None,
    ) -> TurnContext:
        """Before the agent answers: choose the frame, record the message, open the session's episode if it has
        earned one, and assemble the context within the frame's token budget (``budget`` overrides the
        total). A new ``session_id`` starts a session."""
        data = await self._call(
            "POST",
            f"/v1/sessions/{_segment(session_id)}/turns",
            json=_fields(text=user_text, user_id=user_id, frame=frame, budget=budget, at=at),
        )
        return _turn_context(data)

    async def post_turn(
        self, session_id: str, result: TurnResult | str, *, at: datetime | None = None
    ) -> SessionState:
        """After the agent answered: count the turn, store the exchange in the session's episode and link the
        decisions and facts written during it (``TurnResult``)."""
        data = await self._call(
            "POST", f"/v1/sessions/{_segment(session_id)}/reply", json=_fields(**_reply(result), at=at)
        )
        return SessionState.model_validate(data)

    async def end_session(
        self, session_id: str, *, reflection: str | None = None, at: datetime | None = None
    ) -> SessionEnd:
        """End a session: close its episode (discarded if the session stayed trivial), learn each reflection line
        as a lesson, and mark the session ended for the event pipeline."""
        data = await self._call(
            "POST", f"/v1/sessions/{_segment(session_id)}/end", json=_fields(reflection=reflection, at=at)
        )
        return _session_end(data)

    async def check_action(
        self,
        action_text: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        override: bool = False,
    ) -> ActionCheck:
        """Judge an action before taking it: ``decision`` is ``allow``, ``warn`` or ``block``, with the censors
        that fired (by pattern or by meaning) and their reasons. ``override=True`` turns a ``block``
        into a ``warn``, except for ``absolute`` censors, which always block. Each firing is counted
        (unless ``record`` is False) and a ``warn`` censor escalates to ``block`` after
        ``escalation_threshold`` firings. With ``session_id``, a warning is also placed in that
        session's working memory, so the next context shows it."""
        data = await self._call(
            "POST",
            "/v1/check-action",
            json=_fields(action=action_text, session_id=session_id, user_id=user_id, override=override),
        )
        return ActionCheck.model_validate(data)

    async def stats(self) -> StoreStats:
        data = await self._call("GET", "/v1/stats")
        return _stats(data)

    async def event_counts(self) -> dict[EventStatus, int]:
        """How many of the agent's events are pending, running, done and dead."""
        data = await self._call("GET", "/v1/stats")
        return _event_counts(data)

    async def events(self, *, status: str | EventStatus | None = None, limit: int = 100) -> list[Event]:
        """The agent's outbox events, newest first."""
        data = await self._pages("/v1/events", limit, _fields(status=status))
        return [Event.model_validate(e) for e in data]

    async def forget_user(self, user_id: str) -> ErasureReceipt:
        """Erase one of the agent's users for good, in one transaction: every memory of theirs (all kinds, turns
        included) with its links and audit rows, their sessions and working memory, and the events and
        ingest jobs about them. The agent's shared memories stay. The receipt (counts by table, no
        content) is kept in the agent's audit: ``history("user:ID")``."""
        data = await self._call("DELETE", f"/v1/users/{_segment(user_id)}")
        return ErasureReceipt.model_validate(data)

    async def review_decision(self, decision_id: str, outcome: str, *, note: str | None = None) -> Decision:
        data = await self._call(
            "POST", f"/v1/decisions/{_segment(decision_id)}/review", json=_fields(outcome=outcome, note=note)
        )
        return _typed(data, Decision)

    async def calibration(self) -> Calibration:
        data = await self._call("GET", "/v1/calibration")
        return Calibration.model_validate(data)

    async def outcome_proposals(self, *, limit: int = 100) -> list[Decision]:
        """Pending decisions whose outcome the reviewer proposed from later conversations."""
        data = await self._pages("/v1/proposals", limit, _fields())
        return [_typed(d, Decision) for d in data]

    async def accept_proposal(self, decision_id: str) -> Decision:
        """Resolve a decision with its proposed outcome."""
        data = await self._call("POST", f"/v1/proposals/{_segment(decision_id)}/accept")
        return _typed(data, Decision)

    async def reject_proposal(self, decision_id: str) -> Decision:
        """Drop a decision's proposed outcome; it stays pending."""
        data = await self._call("POST", f"/v1/proposals/{_segment(decision_id)}/reject")
        return _typed(data, Decision)

    async def censors(self, *, limit: int = 200, user_id: str | None = None) -> list[Censor]:
        """The censors in force, newest first: with ``user_id``, those that bind that user (its own and the
        agent's shared ones); without, every censor of the agent."""
        data = await self._pages("/v1/censors", limit, _fields(user_id=user_id))
        return [_typed(c, Censor) for c in data]

    async def edit_censor(
        self,
        censor_id: str,
        *,
        trigger_pattern: str | None = None,
        action: str | CensorAction | None = None,
        reason: str | None = None,
        escalation_threshold: int | None = None,
        reset_activations: bool = False,
    ) -> Censor:
        """Change a censor's pattern, action (``warn``, ``block``, ``absolute``), reason or escalation threshold
        (audited). Its activation count is kept unless ``reset_activations`` sets it back to 0."""
        data = await self._call(
            "PATCH",
            f"/v1/censors/{_segment(censor_id)}",
            json=_fields(
                trigger_pattern=trigger_pattern,
                action=action,
                reason=reason,
                escalation_threshold=escalation_threshold,
                reset_activations=reset_activations,
            ),
        )
        return _typed(data, Censor)

    async def report_false_positive(self, censor_id: str, note: str | None = None) -> Censor:
        """Record that a censor fired when it should not have (counted and kept in its history)."""
        data = await self._call(
            "POST", f"/v1/censors/{_segment(censor_id)}/false-positive", json=_fields(note=note)
        )
        return _typed(data, Censor)

    async def retire_censor(self, censor_id: str, reason: str | None = None) -> Censor:
        """Take a censor out of force: it never fires again; its history is kept."""
        data = await self._call(
            "POST", f"/v1/censors/{_segment(censor_id)}/retire", json=_fields(note=reason)
        )
        return _typed(data, Censor)

    async def link(
        self,
        source_id: str,
        target_id: str,
        relation: str | EdgeRelation = "relates_to",
        *,
        weight: float = 1.0,
    ) -> bool:
        """Add a typed edge between two memories; False if it already existed."""
        data = await self._call(
            "POST",
            f"/v1/memories/{_segment(source_id)}/links",
            json=_fields(target_id=target_id, relation=relation, weight=weight),
        )
        return bool(data["created"])

    async def edges(self, memory_id: str) -> list[Edge]:
        """The typed links touching a memory (it is the source or the target), newest first."""
        data = await self._call("GET", f"/v1/memories/{_segment(memory_id)}/links")
        return [Edge.model_validate(e) for e in data]

    async def supersede(self, memory_id: str, *, by: str) -> Memory:
        """Mark a memory as replaced by another one (``by``): recall then prefers the newer one, and the older one
        keeps its history (audited, with a ``supersedes`` edge)."""
        data = await self._call("POST", f"/v1/memories/{_segment(memory_id)}/supersede", json=_fields(by=by))
        return _memory(data)

    async def identity(self) -> list[IdentitySection]:
        """The agent's identity sections that were set."""
        data = await self._call("GET", "/v1/identity")
        return [IdentitySection.model_validate(s) for s in data]

    async def set_identity(self, section: str, content: str) -> IdentitySection:
        """Replace one identity section (character, values, protocols, preferences, boundaries); the old text
        stays in its history."""
        data = await self._call("PUT", f"/v1/identity/{_segment(section)}", json=_fields(content=content))
        return IdentitySection.model_validate(data)

    async def record_decision(
        self,
        description: str,
        *,
        context: str | None = None,
        confidence: float = 0.5,
        category: str | DecisionCategory | None = None,
        stakes: str | Stakes = Stakes.MEDIUM,
        reasons: Sequence[Reason | Mapping[str, Any]] | None = None,
        pattern: str | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        thoughts: list[str] | None = None,
        session_id: str | None = None,
        episode_id: str | None = None,
        user_id: str | None = None,
        frame: str | None = None,
        occurred_at: datetime | None = None,
    ) -> Decision:
        """Store a decision with its confidence and typed reasons (made at ``occurred_at``, default now; linked to
        ``episode_id`` when given). It carries a quality score and flags; a blocking guardrail raises
        ``GuardrailError`` and stores nothing. With ``session_id`` of a live session it carries that
        session's frame and censors."""
        data = await self._call(
            "POST",
            "/v1/decisions",
            json=_fields(
                content=description,
                context=context,
                confidence=confidence,
                category=category,
                stakes=stakes,
                reasons=reasons,
                pattern=pattern,
                tags=tags,
                metadata=metadata,
                thoughts=thoughts,
                session_id=session_id,
                episode_id=episode_id,
                user_id=user_id,
                frame=frame,
                occurred_at=occurred_at,
            ),
        )
        return _typed(data, Decision)

    async def start_episode(
        self,
        title: str,
        *,
        trigger: str | None = None,
        frame: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        started_at: datetime | None = None,
        participants: list[str] | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        opening: str | None = None,
    ) -> Episode:
        """Open an episode (what happened: a conversation, a task); close it with ``end_episode``."""
        data = await self._call(
            "POST",
            "/v1/episodes",
            json=_fields(
                title=title,
                trigger=trigger,
                frame=frame,
                session_id=session_id,
                user_id=user_id,
                started_at=started_at,
                participants=participants,
                tags=tags,
                metadata=metadata,
                opening=opening,
            ),
        )
        return _typed(data, Episode)

    async def end_episode(
        self,
        episode_id: str,
        *,
        summary: str | None = None,
        outcome: str | EpisodeOutcome = EpisodeOutcome.SUCCESS,
        lessons: list[str] | None = None,
        structured_summary: dict[str, Any] | None = None,
        ended_at: datetime | None = None,
    ) -> Episode:
        """Close an episode with its summary, outcome and lessons."""
        data = await self._call(
            "POST",
            f"/v1/episodes/{_segment(episode_id)}/end",
            json=_fields(
                summary=summary,
                outcome=outcome,
                lessons=lessons,
                structured_summary=structured_summary,
                ended_at=ended_at,
            ),
        )
        return _typed(data, Episode)

    async def sessions(self, *, ended: bool | None = None, limit: int = 100) -> list[SessionState]:
        """Sessions by last activity, newest first."""
        data = await self._pages("/v1/sessions", limit, _fields(ended=ended))
        return [SessionState.model_validate(s) for s in data]

    async def session(self, session_id: str) -> SessionState:
        """A session's state (NotFoundError if it never had a turn)."""
        data = await self._call("GET", f"/v1/sessions/{_segment(session_id)}")
        return SessionState.model_validate(data)

    async def preview_turn(
        self,
        user_text: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        frame: str | None = None,
        budget: int | None = None,
        at: datetime | None = None,
        as_of: datetime | None = None,
    ) -> Context:
        """The context ``pre_turn`` would build for ``user_text``, writing nothing (no session, turn, episode or
        recall review): for inspecting what the agent would see. With ``session_id`` of an existing
        session, its topic, working memory and last turns count; ``at`` is when the message is sent;
        ``as_of`` shows the store as it stood then."""
        data = await self._call(
            "POST",
            "/v1/preview",
            json=_fields(
                text=user_text,
                session_id=session_id,
                user_id=user_id,
                frame=frame,
                budget=budget,
                at=at,
                as_of=as_of,
            ),
        )
        return Context.model_validate(data)

    async def threads(
        self, *, user_id: str | None = None, limit: int = 20, query: str | None = None
    ) -> list[Thread]:
        """Topic threads: those of ``user_id`` and the agent's shared ones (no user: every thread of the agent),
        newest activity first, or with ``query`` the best matching first (each with its ``score``)."""
        data = await self._pages("/v1/threads", limit, _fields(user_id=user_id, query=query))
        return [Thread.model_validate(t) for t in data]

    async def thread(self, thread_id: str) -> Thread:
        """One topic thread with its members in time order (forgotten memories left out)."""
        data = await self._call("GET", f"/v1/threads/{_segment(thread_id)}")
        return Thread.model_validate(data)

    # -- end of the generated methods --

    # -- conversations: ingest, export, import ---------------------------------------------------
    async def ingest(
        self, source: Path | str | Conversation, *, fmt: str = "auto", user_id: str | None = None
    ) -> IngestReport:
        """Store a conversation (a file path, JSON text or a ``Conversation``) and wait for it:
        read and checked here, stored by the server within the request (no client timeout)."""
        if isinstance(source, Conversation):
            conversation = source
        else:
            is_path = isinstance(source, Path) or not source.lstrip().startswith(("{", "["))
            text = Path(source).read_text(encoding="utf-8") if is_path else str(source)
            conversation = parse_conversation(text, fmt=fmt)
        body = jsonlib.loads(conversation.model_dump_json())
        data = await self._call(
            "POST", "/v1/ingest", json=body, params={"wait": True, "user_id": user_id}, timeout=None
        )
        return IngestReport.model_validate(data)

    async def export_lines(self) -> AsyncIterator[str]:
        """Every memory and edge as JSON Lines (as ``nous export`` writes them)."""
        response = await self._send("GET", "/v1/export")
        for line in response.text.splitlines():
            if line.strip():
                yield line

    async def export_jsonl(self, path: Path | str) -> int:
        """Write the export to ``path``; returns the number of lines."""
        lines = [line async for line in self.export_lines()]
        Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return len(lines)

    async def import_jsonl(self, source: Path | str | IO[str]) -> int:
        """Import JSON Lines (a path or an open text file); returns the memories written."""
        text = Path(source).read_text(encoding="utf-8") if isinstance(source, Path | str) else source.read()
        return int((await self._call("POST", "/v1/import", content=text))["imported"])
