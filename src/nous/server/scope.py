"""Who a request speaks for, and what its key may reach.

An agent's key reaches all of that agent's memory. A user-bound key (an agent's key made for one
of its users) is narrower: it reads its user's memories and the agent's shared ones, changes only
its user's own, and its sessions are its user's alone. Agent-wide views (stats, events,
calibration, proposals, export, import) and the agent's shared organs (identity, censors,
procedures) are for the agent's key; a user-bound key reads, and its actions are checked against,
only the censors that bind its user (the agent's shared ones and its user's own). Another
agent's or user's memory answers 404 exactly as a missing id does, so no answer tells one caller
what another has.

Every operation declares its scope where it takes its values, with a marker in the
``Annotated`` metadata of a body's field or of a route's or MCP tool's parameter (``MemoryRef``,
``SessionRef``, ``UserRef``, ``JobRef``, ``ThreadRef``), and a view for the agent's key says so on its caller parameter
(``AgentKey``). ``scoped_value`` is the one function that applies a marker: ``ScopedRoute`` runs
it on every route's marked parameters and bodies before the handler, ``nous.server.mcp`` on every
tool's marked parameters before the tool, and the inspector's forms and the OpenAI proxy call it
for the ids and sessions they read. No other module calls ``visible``, ``owned`` or
``Caller.session_key`` / ``acting_user`` (``tests/test_scope_table.py`` holds them to it). A marker
is not a pydantic constraint, so neither the OpenAPI document nor a tool's schema shows it.
"""

import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args, get_origin

from fastapi.routing import APIRoute
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from nous.api import Nous
from nous.errors import NotFoundError, PermissionDeniedError
from nous.models import Edge, Memory
from nous.models.events import EventKind
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

    def outside(self, answer: dict[str, Any]) -> dict[str, Any]:
        """``answer`` with the caller's own session id (as the caller sent it) in place of the
        stored one it holds."""
        own = self.own_session_id(answer.get("session_id"))
        if own is not None:
            answer["session_id"] = own
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
class JobRef:
    """The field names one of the agent's jobs (an ingest): a user-bound key reaches only its
    user's jobs; another's, or an id that is no job, answers 404 as a missing one does."""


@dataclass(frozen=True)
class ThreadRef:
    """The field names one of the agent's topic threads: a user-bound key reaches its user's
    threads and the agent's shared ones; another user's, or an id that is no thread, answers 404
    as a missing one does."""


@dataclass(frozen=True)
class UserRef:
    """The field names the user a call acts for: ``Caller.acting_user`` (a user-bound key's own
    user when none is given; 403 for another)."""


@dataclass(frozen=True)
class AgentKey:
    """On a route's caller parameter (``Annotated[Who, AgentKey("stats")]``): the route is an
    agent-wide view, for the agent's key (403 for a user-bound key, before anything else of the
    request is looked at, so a user-bound key learns nothing of an id it sends)."""

    what: str


ScopeMarker = MemoryRef | SessionRef | UserRef | JobRef | ThreadRef
Body = TypeVar("Body", bound=BaseModel)


def scope_of(field: FieldInfo) -> ScopeMarker | None:
    """The scope marker a model field declares, if any."""
    return _marker(field.metadata)


def parameter_scope(annotation: Any) -> ScopeMarker | None:
    """The scope marker of a route parameter annotated ``Annotated[T, marker]``, if any."""
    return _marker(getattr(annotation, "__metadata__", ()))


def _marker(metadata: Any) -> ScopeMarker | None:
    return next(
        (m for m in metadata if isinstance(m, MemoryRef | SessionRef | UserRef | JobRef | ThreadRef)), None
    )


def marked_parameters(fn: Callable[..., Any]) -> dict[str, ScopeMarker]:
    """The parameters of ``fn`` (a route's or an MCP tool's) that declare a scope, by name."""
    return {
        p.name: m
        for p in inspect.signature(fn).parameters.values()
        if (m := parameter_scope(p.annotation)) is not None
    }


async def apply_parameters(
    nous: Nous, caller: Caller, marked: dict[str, ScopeMarker], values: dict[str, Any]
) -> dict[str, Any]:
    """``values`` (a call's arguments by name) with each parameter of ``marked`` checked and
    rewritten for ``caller`` by ``scoped_value``, in ``marked``'s order."""
    scoped = dict(values)
    for name, marker in marked.items():
        scoped[name] = await scoped_value(nous, caller, marker, values[name])
    return scoped


def agent_key(fn: Callable[..., Any]) -> AgentKey | None:
    """The ``AgentKey`` a route declares on one of its parameters, if any."""
    for parameter in inspect.signature(fn).parameters.values():
        found = [m for m in getattr(parameter.annotation, "__metadata__", ()) if isinstance(m, AgentKey)]
        if found:
            return found[0]
    return None


async def scoped_value(nous: Nous, caller: Caller, marker: ScopeMarker, value: Any) -> Any:
    """``value`` of a field marked ``marker``, checked and as the engine names it."""
    if isinstance(marker, UserRef):
        return caller.acting_user(value)
    if value is None:
        return None
    if isinstance(marker, SessionRef):
        return caller.session_key(value)
    if isinstance(marker, JobRef):
        return await _job_id(nous, caller, value)
    if isinstance(marker, ThreadRef):
        return await _thread_id(nous, caller, value)
    ids = value if isinstance(value, list) else [value]
    kept = []
    for memory_id in ids:
        try:
            kept.append((await scoped_memory(nous, caller, marker, memory_id)).id)
        except (NotFoundError, PermissionDeniedError):
            if marker.unknown == "refuse":
                raise
    return kept if isinstance(value, list) else kept[0] if kept else None


async def _job_id(nous: Nous, caller: Caller, job_id: str) -> str:
    """The id of the caller's job ``job_id`` (an ``ingest.requested`` event of its agent and, for
    a user-bound key, of its user); NotFoundError otherwise."""
    found = await nous.store.events(nous.agent_id, event_id=job_id.strip(), limit=1) if job_id.strip() else []
    if (
        not found
        or found[0].kind != EventKind.INGEST_REQUESTED
        or (caller.user_id is not None and found[0].payload.get("user_id") != caller.user_id)
    ):
        raise NotFoundError(f"no job with id {job_id!r}")
    return found[0].id


async def _thread_id(nous: Nous, caller: Caller, thread_id: str) -> str:
    """The id of the caller's thread ``thread_id`` (its user's or the agent's shared one);
    NotFoundError otherwise."""
    found = (
        await nous.store.threads(nous.agent_id, ids=[thread_id.strip()], limit=1) if thread_id.strip() else []
    )
    if not found or (caller.user_id is not None and found[0].user_id not in (None, caller.user_id)):
        raise NotFoundError(f"no thread with id {thread_id!r}")
    return found[0].id


async def scoped_memory(nous: Nous, caller: Caller, marker: MemoryRef, memory_id: str) -> Memory:
    """The memory ``memory_id`` names, as ``marker`` requires the caller to reach it: for a page
    that shows the memory itself (``scoped_value`` gives its id)."""
    return await (visible if marker.need == "visible" else owned)(nous, caller, memory_id)


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


def scoped_endpoint(
    endpoint: Endpoint, nous_for: Callable[[Caller], Nous], path_parameters: Collection[str] = ()
) -> Endpoint:
    """``endpoint`` with its scope applied before it runs: the agent's key required first if it
    declares ``AgentKey``, then its marked query parameters (a ``user_id``) through
    ``scoped_value``, its request bodies through ``apply_scope``, and its marked path parameters
    (``path_parameters``: a memory's or a session's id) last (the caller is the argument that is
    a ``Caller``); unchanged if nothing of it declares a scope."""
    parameters = inspect.signature(endpoint).parameters.values()
    bodies = [p.name for p in parameters if scoped_models(p.annotation)]
    marked = marked_parameters(endpoint)
    needs_agent = agent_key(endpoint)
    if not bodies and not marked and needs_agent is None:
        return endpoint
    if not inspect.iscoroutinefunction(endpoint) or not any(
        Caller in (p.annotation, *get_args(p.annotation)) for p in parameters
    ):
        raise TypeError(f"{endpoint.__name__}: a route with a scope is async and takes a Caller")
    before = {name: m for name, m in marked.items() if name not in path_parameters}
    after = {name: m for name, m in marked.items() if name in path_parameters}

    @functools.wraps(endpoint)
    async def run(**kwargs: Any) -> Any:
        caller = next(v for v in kwargs.values() if isinstance(v, Caller))
        if needs_agent is not None:
            caller.require_agent_key(needs_agent.what)
        nous = nous_for(caller)
        kwargs = await apply_parameters(nous, caller, before, kwargs)
        for name in bodies:
            if isinstance(kwargs[name], BaseModel):
                kwargs[name] = await apply_scope(nous, caller, kwargs[name])
        kwargs = await apply_parameters(nous, caller, after, kwargs)
        return await endpoint(**kwargs)

    return run


def scoped_route(nous_for: Callable[[Caller], Nous]) -> type[APIRoute]:
    """The route class of the API: every route's scope (``scoped_endpoint``) is applied before
    its handler runs (``nous_for`` gives the caller's agent's ``Nous``)."""

    class ScopedRoute(APIRoute):
        def __init__(self, path: str, endpoint: Endpoint, **kwargs: Any) -> None:
            in_path = set(re.findall(r"{(\w+)", path))
            super().__init__(path, scoped_endpoint(endpoint, nous_for, in_path), **kwargs)

    return ScopedRoute
