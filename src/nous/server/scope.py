"""Who a request speaks for, and what its key may reach.

An agent's key reaches all of that agent's memory. A user-bound key (an agent's key made for one
of its users) is narrower: it reads its user's memories and the agent's shared ones, changes only
its user's own, and its sessions are its user's alone. Agent-wide views (stats, events,
calibration, proposals, export, import) and the agent's shared organs (identity, censors,
procedures) are for the agent's key; a user-bound key reads, and its actions are checked against,
only the censors that bind its user (the agent's shared ones and its user's own). Another
agent's or user's memory answers 404 exactly as a missing id does, so no answer tells one caller
what another has.

Request bodies declare their scope by field, with a marker in the field's ``Annotated`` metadata
(``MemoryRef``, ``SessionRef``, ``UserRef``); ``apply_scope`` is the one function that applies
them, and ``ScopedRoute`` runs it on every body before its handler sees it. A marker is not a
pydantic constraint, so the OpenAPI document does not show it.
"""

import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args, get_origin

from fastapi.routing import APIRoute
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from nous.api import Nous
from nous.errors import NotFoundError, PermissionDeniedError
from nous.models import Edge, Memory
from nous.models.session import SessionState


class Caller(BaseModel):
    """Who a request speaks for: an agent, and for a user-bound key, one of its users."""

    agent_id: str
    user_id: str | None = None

    def acting_user(self, user_id: str | None) -> str | None:
        """The user a call acts for. A user-bound key acts only as its own user (another user_id is
        refused, not silently replaced, so a client sees its mistake); an agent's key may act for
        any of its users, or for the agent as a whole when none is given."""
        if user_id is not None and not user_id.strip():
            user_id = None
        if self.user_id is None:
            return user_id
        if user_id not in (None, self.user_id):
            raise PermissionDeniedError(
                "this API key acts only as its own user; omit user_id or give that user"
            )
        return self.user_id

    def session_key(self, session_id: str) -> str:
        """The stored id of this caller's session ``session_id``. A user-bound key's sessions are
        kept under its user, so two users of one agent may both use "s1" and neither reaches the
        other's (the length prefix keeps any user id and session id apart)."""
        if self.user_id is None:
            return session_id
        return f"~{len(self.user_id)}:{self.user_id}:{session_id}"

    def session_keys(self, session_id: str | None) -> str | None:
        return None if session_id is None else self.session_key(session_id)

    def own_session_id(self, stored: str | None) -> str | None:
        """A stored session id as this caller names it (``session_key`` undone); None if there is
        none or it is not this caller's session."""
        if stored is None:
            return None
        prefix = self.session_key("")
        return stored[len(prefix) :] if stored.startswith(prefix) else None

    def own_session(self, state: SessionState) -> SessionState | None:
        """``state`` with the caller's own session id, or None if it is not the caller's session."""
        own = self.own_session_id(state.session_id)
        return None if own is None else state.model_copy(update={"session_id": own})

    def outside(self, answer: dict[str, Any], session_id: str) -> dict[str, Any]:
        """``answer`` with the caller's own session id in place of the stored one."""
        if "session_id" in answer:
            answer["session_id"] = session_id
        return answer

    def require_agent_key(self, what: str) -> None:
        """PermissionDeniedError for a user-bound key asking for an agent-wide ``what``."""
        if self.user_id is not None:
            raise PermissionDeniedError(
                f"{what} is for the agent's key; a user-bound key reaches only its user's memories"
            )


async def visible(nous: Nous, caller: Caller, memory_id: str) -> Memory:
    """The caller's memory (a user-bound key sees its user's and the shared ones); NotFoundError
    (404) otherwise, worded as for a missing id."""
    memory = await nous.get(memory_id)
    if caller.user_id is not None and memory.user_id not in (None, caller.user_id):
        raise NotFoundError(f"no memory with id {memory_id!r}")
    return memory


async def owned(nous: Nous, caller: Caller, memory_id: str) -> Memory:
    """The caller's memory to change: as ``visible``, and a user-bound key may not change the
    agent's shared memory (403; it can read that memory, so the answer reveals nothing)."""
    memory = await visible(nous, caller, memory_id)
    if caller.user_id is not None and memory.user_id is None:
        raise PermissionDeniedError(
            f"memory {memory_id!r} is the agent's shared memory; a user-bound key changes only its user's"
        )
    return memory


async def linked(
    nous: Nous, caller: Caller, memory: Memory, *, limit: int = 200
) -> list[tuple[Edge, Memory]]:
    """The edges touching ``memory``, each with the memory at its other end, newest first: only
    those whose other end the caller sees (a user-bound key does not learn of another user's
    memory through a link), and at most ``limit``."""
    found: list[tuple[Edge, Memory]] = []
    for edge in await nous.edges(memory.id):
        other_id = edge.target_id if edge.source_id == memory.id else edge.source_id
        try:
            other = await visible(nous, caller, other_id)
        except NotFoundError:  # purged, or another user's
            continue
        found.append((edge, other))
        if len(found) >= limit:
            break
    return found


# -- scope declared by field -------------------------------------------------------------------
@dataclass(frozen=True)
class MemoryRef:
    """The field names memories (one id, or a list of ids): each must be one the caller sees
    (``visible``) or may change (``owned``), answered as those answer (404, or 403 for the agent's
    shared memory). ``unknown="drop"`` leaves out an id the caller does not see instead, for a
    hint that names memories but reads or changes none of them (recall's active censors)."""

    need: Literal["visible", "owned"] = "visible"
    unknown: Literal["refuse", "drop"] = "refuse"


@dataclass(frozen=True)
class SessionRef:
    """The field names one of the caller's sessions: it becomes the stored id
    (``Caller.session_key``), so a user-bound key reaches only its user's sessions."""


@dataclass(frozen=True)
class UserRef:
    """The field names the user a call acts for: ``Caller.acting_user`` (a user-bound key's own
    user when none is given; 403 for another)."""


ScopeMarker = MemoryRef | SessionRef | UserRef
Body = TypeVar("Body", bound=BaseModel)


def scope_of(field: FieldInfo) -> ScopeMarker | None:
    """The scope marker a model field declares, if any."""
    return _marker(field.metadata)


def parameter_scope(annotation: Any) -> ScopeMarker | None:
    """The scope marker of a route parameter annotated ``Annotated[T, marker]``, if any."""
    return _marker(getattr(annotation, "__metadata__", ()))


def _marker(metadata: Any) -> ScopeMarker | None:
    return next((m for m in metadata if isinstance(m, MemoryRef | SessionRef | UserRef)), None)


async def scoped_value(nous: Nous, caller: Caller, marker: ScopeMarker, value: Any) -> Any:
    """``value`` of a field marked ``marker``, checked and as the engine names it."""
    if isinstance(marker, UserRef):
        return caller.acting_user(value)
    if value is None:
        return None
    if isinstance(marker, SessionRef):
        return caller.session_key(value)
    check = visible if marker.need == "visible" else owned
    ids = value if isinstance(value, list) else [value]
    kept = []
    for memory_id in ids:
        try:
            kept.append((await check(nous, caller, memory_id)).id)
        except (NotFoundError, PermissionDeniedError):
            if marker.unknown == "refuse":
                raise
    return kept if isinstance(value, list) else kept[0] if kept else None


async def apply_scope(nous: Nous, caller: Caller, body: Body) -> Body:
    """``body`` with every marked field checked and rewritten for ``caller`` (nested models too):
    memory ids the caller may not reach are refused, session ids become the caller's stored ones,
    the acting user is resolved. The one place a request's fields meet the key's scope."""
    changes: dict[str, Any] = {}
    for name, field in type(body).model_fields.items():
        marker = scope_of(field)
        if marker is None and not scoped_models(field.annotation):
            continue  # nothing in it to scope (and a deprecated field is not read)
        value = getattr(body, name)
        if marker is not None:
            changes[name] = await scoped_value(nous, caller, marker, value)
        elif isinstance(value, BaseModel):
            changes[name] = await apply_scope(nous, caller, value)
        elif isinstance(value, list) and any(isinstance(v, BaseModel) for v in value):
            changes[name] = [await apply_scope(nous, caller, v) for v in value]
    return body.model_copy(update=changes) if changes else body


def scoped_models(annotation: Any) -> bool:
    """Whether ``annotation`` is (or holds) a model with a scope marker somewhere in it."""
    if get_origin(annotation) is not None:
        return any(scoped_models(a) for a in get_args(annotation))
    if not (inspect.isclass(annotation) and issubclass(annotation, BaseModel)):
        return False
    return any(
        scope_of(f) is not None or scoped_models(f.annotation) for f in annotation.model_fields.values()
    )


Endpoint = Callable[..., Awaitable[Any]]


def scoped_endpoint(endpoint: Endpoint, nous_for: Callable[[Caller], Nous]) -> Endpoint:
    """``endpoint`` with its request bodies passed through ``apply_scope`` first, and its marked
    parameters (a query's ``user_id``) through ``scoped_value`` (the caller is the argument that
    is a ``Caller``); unchanged if nothing of it declares a scope."""
    parameters = inspect.signature(endpoint).parameters.values()
    bodies = [p.name for p in parameters if scoped_models(p.annotation)]
    marked = {p.name: m for p in parameters if (m := parameter_scope(p.annotation)) is not None}
    if not bodies and not marked:
        return endpoint
    if not inspect.iscoroutinefunction(endpoint) or not any(
        Caller in (p.annotation, *get_args(p.annotation)) for p in parameters
    ):
        raise TypeError(f"{endpoint.__name__}: a route with a scope is async and takes a Caller")

    @functools.wraps(endpoint)
    async def run(**kwargs: Any) -> Any:
        caller = next(v for v in kwargs.values() if isinstance(v, Caller))
        nous = nous_for(caller)
        for name, marker in marked.items():
            kwargs[name] = await scoped_value(nous, caller, marker, kwargs[name])
        for name in bodies:
            if isinstance(kwargs[name], BaseModel):
                kwargs[name] = await apply_scope(nous, caller, kwargs[name])
        return await endpoint(**kwargs)

    return run


def scoped_route(nous_for: Callable[[Caller], Nous]) -> type[APIRoute]:
    """The route class of the API: every route's request bodies go through ``apply_scope``
    (``nous_for`` gives the caller's agent's ``Nous``)."""

    class ScopedRoute(APIRoute):
        def __init__(self, path: str, endpoint: Endpoint, **kwargs: Any) -> None:
            super().__init__(path, scoped_endpoint(endpoint, nous_for), **kwargs)

    return ScopedRoute
