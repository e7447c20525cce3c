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
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import quote
from uuid import uuid4

import httpx

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


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _kinds(kinds: Sequence[str | MemoryKind] | str | None) -> list[str] | None:
    if kinds is None:
        return None
    return [MemoryKind(kinds).value] if isinstance(kinds, str) else [MemoryKind(k).value for k in kinds]


def _value(item: object) -> object:
    return getattr(item, "value", item)


def _body(**fields: Any) -> dict[str, Any]:
    """A JSON body of the fields given (None left out, datetimes as ISO 8601, enums as values)."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None:
            continue
        out[name] = value.isoformat() if isinstance(value, datetime) else _value(value)
    return out


def _written(data: Mapping[str, Any]) -> WriteResult:
    return WriteResult(
        status=WriteStatus(data["status"]),
        memory=_memory(data["memory"]),
        existing_id=data.get("existing_id"),
        similarity=data.get("similarity"),
        warnings=data.get("warnings") or [],
    )


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
        query: dict[str, Any] = {k: _value(v) for k, v in (params or {}).items() if v is not None}
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

    # -- writes --------------------------------------------------------------------------------
    async def learn(
        self,
        content: str,
        *,
        subject: str | None = None,
        category: str | FactCategory | None = None,
        source: str | None = None,
        confidence: float = 1.0,
        tags: list[str] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        occurred_at: datetime | None = None,
        frame: str | None = None,
        supersedes: str | None = None,
        dedup: bool = True,
    ) -> WriteResult:
        """Store a fact through the server's write path (duplicate, update, contradiction checks)."""
        body = _body(
            type="fact",
            content=content,
            subject=subject,
            category=category,
            source=source,
            confidence=confidence,
            tags=tags,
            user_id=user_id,
            session_id=session_id,
            occurred_at=occurred_at,
            frame=frame,
            supersedes=supersedes,
            dedup=dedup,
        )
        return _written(await self._call("POST", "/v1/memories", json=body))

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
        opening: str | None = None,
    ) -> Episode:
        """Open an episode; close it with ``end_episode``."""
        body = _body(
            title=title,
            trigger=trigger,
            frame=frame,
            session_id=session_id,
            user_id=user_id,
            started_at=started_at,
            participants=participants,
            tags=tags,
            opening=opening,
        )
        return _typed(await self._call("POST", "/v1/episodes", json=body), Episode)

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
        body = _body(
            summary=summary,
            outcome=outcome,
            lessons=lessons,
            structured_summary=structured_summary,
            ended_at=ended_at,
        )
        return _typed(await self._call("POST", f"/v1/episodes/{episode_id}/end", json=body), Episode)

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
        frame: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        occurred_at: datetime | None = None,
        dedup: bool = True,
    ) -> WriteResult:
        """Store a procedure (an agent's key only: procedures are shared)."""
        body = _body(
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
            frame=frame,
            session_id=session_id,
            user_id=user_id,
            occurred_at=occurred_at,
            dedup=dedup,
        )
        return _written(await self._call("POST", "/v1/memories", json=body))

    async def add_censor(
        self,
        trigger_pattern: str,
        *,
        action: str | CensorAction = CensorAction.WARN,
        reason: str | None = None,
        domain: str | None = None,
        escalation_threshold: int = 3,
        tags: list[str] | None = None,
        user_id: str | None = None,
        occurred_at: datetime | None = None,
        dedup: bool = True,
    ) -> WriteResult:
        """Store a censor (an agent's key only: censors are shared)."""
        body = _body(
            type="censor",
            content=trigger_pattern,
            action=action,
            reason=reason,
            domain=domain,
            escalation_threshold=escalation_threshold,
            tags=tags,
            user_id=user_id,
            occurred_at=occurred_at,
            dedup=dedup,
        )
        return _written(await self._call("POST", "/v1/memories", json=body))

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
        thoughts: list[str] | None = None,
        session_id: str | None = None,
        episode_id: str | None = None,
        user_id: str | None = None,
        frame: str | None = None,
        occurred_at: datetime | None = None,
    ) -> Decision:
        """Store a decision with its confidence and typed reasons."""
        body = _body(
            content=description,
            context=context,
            confidence=confidence,
            category=category,
            stakes=stakes,
            pattern=pattern,
            tags=tags,
            thoughts=thoughts,
            session_id=session_id,
            episode_id=episode_id,
            user_id=user_id,
            frame=frame,
            occurred_at=occurred_at,
        )
        if reasons is not None:
            body["reasons"] = [
                r.model_dump(mode="json") if isinstance(r, Reason) else dict(r) for r in reasons
            ]
        return _typed(await self._call("POST", "/v1/decisions", json=body), Decision)

    async def review_decision(self, decision_id: str, outcome: str, *, note: str | None = None) -> Decision:
        """Record how a decision turned out (success, partial, failure, pending)."""
        body = _body(outcome=outcome, note=note)
        return _typed(await self._call("POST", f"/v1/decisions/{decision_id}/review", json=body), Decision)

    async def outcome_proposals(self, *, limit: int = 100) -> list[Decision]:
        """Outcomes the pipeline proposed for decisions, waiting to be accepted or rejected."""
        return [_typed(d, Decision) for d in await self._pages("/v1/proposals", limit)]

    async def accept_proposal(self, decision_id: str) -> Decision:
        return _typed(await self._call("POST", f"/v1/proposals/{decision_id}/accept"), Decision)

    async def reject_proposal(self, decision_id: str) -> Decision:
        return _typed(await self._call("POST", f"/v1/proposals/{decision_id}/reject"), Decision)

    async def calibration(self) -> Calibration:
        """How well the agent's confidence matches its decisions' outcomes."""
        return Calibration.model_validate(await self._call("GET", "/v1/calibration"))

    # -- the turn loop ---------------------------------------------------------------------------
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
        """Before the agent answers: record the message and get the turn's context."""
        body = _body(text=user_text, user_id=user_id, frame=frame, budget=budget, at=at)
        data = dict(await self._call("POST", f"/v1/sessions/{session_id}/turns", json=body))
        data["text"] = data.pop("context")
        return TurnContext.model_validate(data)

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
        """The context ``pre_turn`` would build for ``user_text``, writing nothing."""
        body = _body(
            text=user_text,
            session_id=session_id,
            user_id=user_id,
            frame=frame,
            budget=budget,
            at=at,
            as_of=as_of,
        )
        return Context.model_validate(await self._call("POST", "/v1/preview", json=body))

    async def post_turn(
        self, session_id: str, result: TurnResult | str, *, at: datetime | None = None
    ) -> SessionState:
        """After the agent answered: record its reply (and the tools used, memories written)."""
        turn = result if isinstance(result, TurnResult) else TurnResult(reply=result)
        body = _body(
            text=turn.reply,
            tools_used=turn.tools_used,
            decision_ids=turn.decision_ids,
            fact_ids=turn.fact_ids,
            at=at,
        )
        return SessionState.model_validate(
            await self._call("POST", f"/v1/sessions/{session_id}/reply", json=body)
        )

    async def end_session(
        self, session_id: str, *, reflection: str | None = None, at: datetime | None = None
    ) -> SessionEnd:
        """End a session: close its episode, learn its reflection."""
        data = await self._call(
            "POST", f"/v1/sessions/{session_id}/end", json=_body(reflection=reflection, at=at)
        )
        return SessionEnd(
            session=SessionState.model_validate(data["session"]),
            episode=None if data.get("episode") is None else _typed(data["episode"], Episode),
            facts=[_written(f) for f in data.get("facts") or []],
            ended_now=data["ended_now"],
        )

    async def session(self, session_id: str) -> SessionState:
        return SessionState.model_validate(await self._call("GET", f"/v1/sessions/{session_id}"))

    async def sessions(self, *, ended: bool | None = None, limit: int = 100) -> list[SessionState]:
        """Sessions, most recent first (``ended=True`` / ``False`` to choose)."""
        found = await self._pages("/v1/sessions", limit, {"ended": ended})
        return [SessionState.model_validate(s) for s in found]

    async def identity(self) -> list[IdentitySection]:
        return [IdentitySection.model_validate(s) for s in await self._call("GET", "/v1/identity")]

    async def set_identity(self, section: str, content: str) -> IdentitySection:
        data = await self._call("PUT", f"/v1/identity/{section}", json={"content": content})
        return IdentitySection.model_validate(data)

    # -- censors ---------------------------------------------------------------------------------
    async def check_action(
        self,
        action_text: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        override: bool = False,
    ) -> ActionCheck:
        """Judge an action before taking it: allow, warn or block."""
        body = _body(action=action_text, session_id=session_id, user_id=user_id, override=override)
        return ActionCheck.model_validate(await self._call("POST", "/v1/check-action", json=body))

    async def censors(self, *, limit: int = 200, user_id: str | None = None) -> list[Censor]:
        return [_typed(c, Censor) for c in await self._pages("/v1/censors", limit, {"user_id": user_id})]

    async def report_false_positive(self, censor_id: str, note: str | None = None) -> Censor:
        data = await self._call("POST", f"/v1/censors/{censor_id}/false-positive", json=_body(note=note))
        return _typed(data, Censor)

    async def edit_censor(
        self,
        censor_id: str,
        *,
        trigger_pattern: str | None = None,
        action: str | CensorAction | None = None,
        reason: str | None = None,
        escalation_threshold: int | None = None,
    ) -> Censor:
        body = _body(
            trigger_pattern=trigger_pattern,
            action=action,
            reason=reason,
            escalation_threshold=escalation_threshold,
        )
        return _typed(await self._call("PATCH", f"/v1/censors/{censor_id}", json=body), Censor)

    async def retire_censor(self, censor_id: str, reason: str | None = None) -> Censor:
        data = await self._call("POST", f"/v1/censors/{censor_id}/retire", json=_body(note=reason))
        return _typed(data, Censor)

    # -- recall ----------------------------------------------------------------------------------
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
    ) -> list[RecallHit]:
        """Memories relevant to ``query``, best first, each with a relevance 0..1."""
        body = _body(
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
            active_censors=list(active_censors) if active_censors is not None else None,
            now=now,
            as_of=as_of,
            reinforce=reinforce,
            preset=preset,
            min_score=min_score,
            in_session=in_session,
        )
        data = await self._call("POST", "/v1/recall", json=body)
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
        """The most recent memories by time, whatever their topic."""
        body = _body(
            limit=limit,
            types=_kinds(kinds),
            hours=hours,
            since=since,
            until=until,
            session_id=session_id,
            user_id=user_id,
        )
        return [_memory(m) for m in (await self._call("POST", "/v1/recall/recent", json=body))["items"]]

    async def check_similar(
        self,
        content: str,
        kind: str | MemoryKind = MemoryKind.FACT,
        *,
        user_id: str | None = None,
        subject: str | None = None,
    ) -> SimilarityCheck:
        """What storing ``content`` would find (nothing is written)."""
        body = _body(content=content, type=kind, user_id=user_id, subject=subject)
        return SimilarityCheck.model_validate(
            await self._call("POST", "/v1/memories/check-similar", json=body)
        )

    # -- memories --------------------------------------------------------------------------------
    async def get(self, memory_id: str) -> Memory:
        return _memory(await self._call("GET", f"/v1/memories/{memory_id}"))

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
    ) -> list[Memory]:
        """Memories, most recent first; the filters as ``Nous.memories``."""
        params: dict[str, Any] = {
            "type": _kinds(kinds),
            "include_inactive": include_inactive,
            "include_superseded": include_superseded,
            "superseded_only": superseded_only,
            "user_id": user_id,
            "subject": subject,
            "category": category,
            "session_id": session_id,
            "lifecycle": [LifecycleState(s).value for s in lifecycle] if lifecycle else None,
            "since": _iso(since),
            "until": _iso(until),
            # the server's cursor is the offset of the page (it hands it back as next_cursor)
            "cursor": str(offset) if offset else None,
        }
        found = await self._pages("/v1/memories", limit, params)
        return [_memory(m) for m in found]

    async def update(self, memory_id: str, **changes: Any) -> Memory:
        """Change fields of a memory (content, subject, category, tags, confidence)."""
        return _memory(await self._call("PATCH", f"/v1/memories/{memory_id}", json=_body(**changes)))

    async def forget(self, memory_id: str, *, hard: bool = False) -> Memory:
        return _memory(await self._call("DELETE", f"/v1/memories/{memory_id}", params={"hard": hard}))

    async def forget_user(self, user_id: str) -> ErasureReceipt:
        """Erase one of the agent's users for good (an agent's key); the receipt counts what went."""
        found = await self._call("DELETE", f"/v1/users/{quote(user_id, safe='')}")
        return ErasureReceipt.model_validate(found)

    async def restore(self, memory_id: str) -> Memory:
        return _memory(await self._call("POST", f"/v1/memories/{memory_id}/restore"))

    async def history(self, memory_id: str) -> list[HistoryEntry]:
        found = await self._call("GET", f"/v1/memories/{memory_id}/history")
        return [HistoryEntry.model_validate(h) for h in found]

    async def link(
        self,
        source_id: str,
        target_id: str,
        relation: str | EdgeRelation = "relates_to",
        *,
        weight: float = 1.0,
    ) -> bool:
        """Link two memories; False when the link already existed."""
        body = _body(target_id=target_id, relation=relation, weight=weight)
        return bool((await self._call("POST", f"/v1/memories/{source_id}/links", json=body))["created"])

    async def edges(self, memory_id: str) -> list[Edge]:
        """The typed links touching a memory, newest first."""
        found = await self._call("GET", f"/v1/memories/{memory_id}/links")
        return [Edge.model_validate(e) for e in found]

    async def supersede(self, memory_id: str, *, by: str) -> Memory:
        """Mark a memory as replaced by another one (``by``)."""
        return _memory(await self._call("POST", f"/v1/memories/{memory_id}/supersede", json=_body(by=by)))

    # -- the store -------------------------------------------------------------------------------
    async def stats(self) -> StoreStats:
        data = dict(await self._call("GET", "/v1/stats"))
        data.pop("events", None)
        return StoreStats.model_validate(data)

    async def event_counts(self) -> dict[EventStatus, int]:
        """Outbox events by status."""
        data = await self._call("GET", "/v1/stats")
        return {EventStatus(k): int(v) for k, v in (data.get("events") or {}).items()}

    async def events(self, *, status: str | EventStatus | None = None, limit: int = 100) -> list[Event]:
        found = await self._pages("/v1/events", limit, {"status": status})
        return [Event.model_validate(e) for e in found]

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
