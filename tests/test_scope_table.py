"""The scope table, generated from the operations themselves. Every REST body field, query and
path parameter, and MCP tool parameter that names a memory, a session or a user declares its scope
with a marker (``nous.server.scope``: ``MemoryRef``, ``SessionRef``, ``UserRef``) that one
dispatcher applies (``ScopedRoute`` for REST, ``nous.server.mcp.scoped`` for the tools); an
agent-wide view declares ``AgentKey``. A parameter that names one without a marker fails the first
test, and a server module that applies a scope by hand (calls ``visible``, ``owned``,
``session_key``, ``session_keys`` or ``acting_user`` outside ``scope.py``) fails the second,
unless the allow-list below says why. Each marked parameter is then tried, on a real server on
both backends, with values of the other side: user-bound keys alice and bob of agent A (bob's
memory and session, the agent's shared memory), and agent B's key (agent A's). Another's memory
answers 404 exactly as a missing id does (403 for the agent's shared memory where a user-bound key
needs to own it, and for any agent-wide view), another user is 403, another's session is never
reached, and after every request the owner's memories, links and session are as they were. The
hand-written table in tests/test_isolation.py keeps what this cannot express (lists, pages,
ingest, import, jobs, the inspector)."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import inspect
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

import httpx
from fastapi.routing import APIRoute
from pydantic import BaseModel

import nous.server
from nous import Nous, Settings
from nous.server import create_app
from nous.server.mcp import create_mcp_server
from nous.server.scope import (
    JobRef,
    MemoryRef,
    ScopeMarker,
    SessionRef,
    ThreadRef,
    UserRef,
    agent_key,
    marked_parameters,
    parameter_scope,
    scope_of,
)
from tests.test_isolation import _client, _mcp_text, served  # noqa: F401 - a fixture, used by name
from tests.test_server import LiveServer

# A field names an id, a session or a user by its name, or by saying so in its description.
NAMES_AN_ID = re.compile(r"(^|_)ids?$|session|^user|^supersedes$|^by$|^target")
SAYS_IDS = re.compile(r"\bids?\b", re.IGNORECASE)
# Request bodies that are not models, and why the generator has no row for them.
NOT_MODELS = {
    ("POST", "/v1/ingest"): "a conversation in any format nous ingest reads: tests/test_isolation.py, "
    "and ids spelling another user's session key: tests/test_ingest_users.py",
    ("POST", "/v1/import"): "an export's JSONL, agent key only: tests/test_isolation.py",
}
# Query and path parameters still resolved in their handler, and why.
BY_HAND_PARAMETERS = {
    ("DELETE", "/v1/users/{user_id}", "user_id"): "the route is for the agent's key (AgentKey), which "
    "erases any of its users",
}
# MCP tool parameters whose names look like an id's but are not one.
NOT_IDS = {("context", "user_text"): "the user's message, verbatim"}
# The functions that apply a scope, which only nous/server/scope.py may call.
SCOPE_FUNCTIONS = {"visible", "owned", "session_key", "session_keys", "acting_user"}
# (module under nous/server, function) -> why that module still calls it itself.
SCOPED_BY_HAND: dict[tuple[str, str], str] = {}
# Words only bob's memories hold (the agent's shared ones are alice's to read).
MARK = re.compile(r"zorblax|quillon", re.IGNORECASE)


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    """The models ``annotation`` is or holds (a list of them, an optional one)."""
    if get_origin(annotation) is not None:
        for arg in get_args(annotation):
            yield from _models(arg)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        for field in annotation.model_fields.values():
            yield from _models(field.annotation)


Route = tuple[str, str]  # method, path


@dataclass(frozen=True)
class Scoped:
    """A marked field of an operation: its marker, whether it takes a list, where it is sent, and
    whether the operation is for the agent's key (``AgentKey``)."""

    marker: ScopeMarker
    many: bool
    where: str  # "body", "query" or "path"
    agent_only: bool = False


def _routes() -> Iterator[tuple[Route, APIRoute]]:
    app = create_app(Settings(database_url="sqlite:///:memory:"))
    for route in app.routes:
        if isinstance(route, APIRoute) and route.include_in_schema:
            for method in route.methods or ():
                yield (method, route.path), route


def _bodies() -> dict[Route, type[BaseModel]]:
    """Every REST route that takes a model as its body, and that model."""
    found: dict[Route, type[BaseModel]] = {}
    for key, route in _routes():
        for param in route.dependant.body_params:
            models = list(_models(param.field_info.annotation))
            if not models:
                assert key in NOT_MODELS, (key, "a body of no model")
                continue
            found[key] = models[0]
    return found


def _scoped() -> dict[Route, dict[str, Scoped]]:
    """Every operation's marked body fields and query parameters."""
    found: dict[Route, dict[str, Scoped]] = {}
    for key, model in _bodies().items():
        for name, field in model.model_fields.items():
            if (marker := scope_of(field)) is not None:
                found.setdefault(key, {})[name] = Scoped(marker, _takes_list(field.annotation), "body")
    for key, route in _routes():
        for where, params in (("query", route.dependant.query_params), ("path", route.dependant.path_params)):
            for param in params:
                if (marker := parameter_scope(_parameter(route, param.name))) is not None:
                    many = _takes_list(param.field_info.annotation)
                    only = agent_key(route.endpoint) is not None
                    found.setdefault(key, {})[param.alias] = Scoped(marker, many, where, only)
    return found


def _parameter(route: APIRoute, name: str) -> Any:
    return inspect.signature(route.endpoint).parameters[name].annotation


def _takes_list(annotation: Any) -> bool:
    return get_origin(annotation) is list or any(get_origin(a) is list for a in get_args(annotation))


def test_every_field_that_names_an_id_a_session_or_a_user_declares_its_scope() -> None:
    unmarked = []
    for (method, path), body in _bodies().items():
        for model in _models(body):
            for name, field in model.model_fields.items():
                named = NAMES_AN_ID.search(name) or SAYS_IDS.search(field.description or "")
                if named and scope_of(field) is None:
                    unmarked.append(f"{method} {path}: {model.__name__}.{name}")
    for (method, path), route in _routes():
        for param in [*route.dependant.query_params, *route.dependant.path_params]:
            named = NAMES_AN_ID.search(param.alias) or SAYS_IDS.search(param.field_info.description or "")
            marked = parameter_scope(_parameter(route, param.name)) is not None
            if named and not marked and (method, path, param.alias) not in BY_HAND_PARAMETERS:
                unmarked.append(f"{method} {path}: parameter {param.alias}")
    for name, tool in _tools().items():
        for argument in inspect.signature(tool).parameters.values():
            described = " ".join(
                getattr(m, "description", None) or "" for m in _metadata(argument.annotation)
            )
            named = NAMES_AN_ID.search(argument.name) or SAYS_IDS.search(described)
            if (
                named
                and parameter_scope(argument.annotation) is None
                and (name, argument.name) not in NOT_IDS
            ):
                unmarked.append(f"MCP tool {name}: {argument.name}")
    assert not unmarked, "fields without a scope marker (nous.server.scope): " + ", ".join(unmarked)


def _tools() -> dict[str, Callable[..., Any]]:
    """Every MCP tool's function (as registered: the scope wrapper keeps the tool's signature)."""
    server = create_mcp_server()  # never started: only its tools are read
    return {tool.name: tool.fn for tool in server._tool_manager.list_tools()}


def _metadata(annotation: Any) -> tuple[Any, ...]:
    return tuple(getattr(annotation, "__metadata__", ()))


def _scope_calls() -> Counter[tuple[str, str]]:
    """(module, name) -> how often a server module other than scope.py names a function that
    applies a scope (a call, a reference or an import)."""
    root = Path(nous.server.__file__).parent
    found: Counter[tuple[str, str]] = Counter()
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        if module == "scope.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name):
                names = [node.id]
            elif isinstance(node, ast.Attribute):
                names = [node.attr]
            elif isinstance(node, ast.ImportFrom):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name in SCOPE_FUNCTIONS:
                    found[(module, name)] += 1
    return found


def test_no_server_module_applies_a_scope_by_hand() -> None:
    found = _scope_calls()
    by_hand = sorted(
        f"{module}: {name} x{n}"
        for (module, name), n in found.items()
        if (module, name) not in SCOPED_BY_HAND
    )
    assert not by_hand, "scope applied by hand (declare a marker instead, nous.server.scope): " + ", ".join(
        by_hand
    )
    stale = sorted(set(SCOPED_BY_HAND) - set(found))
    assert not stale, f"allow-list entries with nothing left to allow: {stale}"
    print(f"scope applied by hand: {sum(found.values())}: {dict(found)}")


# -- the probes ------------------------------------------------------------------------------------
@dataclass
class Side:
    """One intruder against one owner: whose key sends, and whose values it sends."""

    name: str
    key: str  # the intruder's key name
    target: str  # "bob" (a user's memory), "shared" (the agent's own) or "agent" (another agent's)
    user: str | None  # another user's id to act as, if this side has one
    session: str  # the owner's session, as the intruder would name it


SIDES = [
    Side("user", "alice", "bob", user="bob", session="owner-session"),
    Side("shared", "alice", "shared", user=None, session="owner-session"),
    Side("agent", "b", "bob", user=None, session="~3:bob:owner-session"),
]
# Which planted memory a field is tried with (a fact unless its name says otherwise: a censor's
# or a procedure's id is tried with a fact too, which the scope refuses before the kind is read).
KIND_OF_FIELD = {"decision_ids": "decision", "decision_id": "decision", "episode_id": "episode"}


@dataclass
class Base:
    """A request that is valid for the intruder: its path (a template filled from ``params``),
    its body, and what to do first."""

    path: str
    body: dict[str, Any] | None = None
    before: Callable[[httpx.Client], None] | None = None
    params: dict[str, str] = dataclasses.field(default_factory=dict)

    def url(self, **probed: Any) -> str:
        return self.path.format(**{**self.params, **probed})


def _turn_first(client: httpx.Client) -> None:
    assert client.post("/v1/sessions/probe/turns", json={"text": "Is the harbor open?"}).status_code == 200


def _path(path: str, body: dict[str, Any] | None = None, **params: str) -> Base:
    return Base(path, body, params=params)


BASES: dict[tuple[str, str], Callable[[str], Base]] = {  # route -> (the intruder's own fact) -> Base
    ("GET", "/v1/memories"): lambda own: Base("/v1/memories", {}),
    ("GET", "/v1/censors"): lambda own: Base("/v1/censors", {}),
    ("POST", "/v1/memories"): lambda own: Base(
        "/v1/memories", {"type": "fact", "content": f"Porto has good coffee {uuid.uuid4().hex[:6]}"}
    ),
    ("POST", "/v1/recall"): lambda own: Base("/v1/recall", {"query": "what is the vault combination?"}),
    ("POST", "/v1/memories/check-similar"): lambda own: Base(
        "/v1/memories/check-similar", {"content": "Where is the ledger moving?"}
    ),
    ("POST", "/v1/recall/recent"): lambda own: Base(
        "/v1/recall/recent", {"types": ["fact", "turn", "episode", "decision"], "limit": 100}
    ),
    ("POST", "/v1/sessions/{session_id}/turns"): lambda own: _path(
        "/v1/sessions/{session_id}/turns", {"text": "When is the launch?"}, session_id="probe"
    ),
    ("POST", "/v1/sessions/{session_id}/reply"): lambda own: Base(
        "/v1/sessions/{session_id}/reply", {"text": "Noted."}, _turn_first, {"session_id": "probe"}
    ),
    ("POST", "/v1/check-action"): lambda own: Base("/v1/check-action", {"action": "wipe the vault now"}),
    ("POST", "/v1/memories/{memory_id}/links"): lambda own: _path(
        "/v1/memories/{memory_id}/links", {"target_id": own}, memory_id=own
    ),
    ("POST", "/v1/memories/{memory_id}/supersede"): lambda own: _path(
        "/v1/memories/{memory_id}/supersede", {"by": own}, memory_id=own
    ),
    # the routes whose marked parameter is in the path
    ("GET", "/v1/memories/{memory_id}"): lambda own: _path("/v1/memories/{memory_id}"),
    ("GET", "/v1/jobs/{job_id}"): lambda own: _path("/v1/jobs/{job_id}"),
    ("GET", "/v1/threads"): lambda own: _path("/v1/threads"),
    ("GET", "/v1/threads/{thread_id}"): lambda own: _path("/v1/threads/{thread_id}"),
    ("PATCH", "/v1/memories/{memory_id}"): lambda own: _path("/v1/memories/{memory_id}", {"tags": ["probe"]}),
    ("DELETE", "/v1/memories/{memory_id}"): lambda own: _path("/v1/memories/{memory_id}"),
    ("POST", "/v1/memories/{memory_id}/restore"): lambda own: _path("/v1/memories/{memory_id}/restore"),
    ("GET", "/v1/memories/{memory_id}/history"): lambda own: _path("/v1/memories/{memory_id}/history"),
    ("GET", "/v1/memories/{memory_id}/links"): lambda own: _path("/v1/memories/{memory_id}/links"),
    ("GET", "/v1/decisions/{decision_id}"): lambda own: _path("/v1/decisions/{decision_id}"),
    ("POST", "/v1/decisions/{decision_id}/review"): lambda own: _path(
        "/v1/decisions/{decision_id}/review", {"outcome": "success"}
    ),
    ("POST", "/v1/proposals/{decision_id}/{verdict}"): lambda own: _path(
        "/v1/proposals/{decision_id}/{verdict}", verdict="accept"
    ),
    ("GET", "/v1/episodes/{episode_id}"): lambda own: _path("/v1/episodes/{episode_id}"),
    ("POST", "/v1/episodes/{episode_id}/end"): lambda own: _path(
        "/v1/episodes/{episode_id}/end", {"summary": "probe"}
    ),
    ("POST", "/v1/procedures/{procedure_id}/use"): lambda own: _path(
        "/v1/procedures/{procedure_id}/use", {"success": True}
    ),
    ("PATCH", "/v1/censors/{censor_id}"): lambda own: _path("/v1/censors/{censor_id}", {"reason": "probe"}),
    ("POST", "/v1/censors/{censor_id}/false-positive"): lambda own: _path(
        "/v1/censors/{censor_id}/false-positive", {"note": "probe"}
    ),
    ("POST", "/v1/censors/{censor_id}/retire"): lambda own: _path(
        "/v1/censors/{censor_id}/retire", {"note": "probe"}
    ),
    ("GET", "/v1/sessions/{session_id}"): lambda own: _path("/v1/sessions/{session_id}"),
    ("GET", "/v1/sessions/{session_id}/working-memory"): lambda own: _path(
        "/v1/sessions/{session_id}/working-memory"
    ),
    ("POST", "/v1/sessions/{session_id}/end"): lambda own: _path("/v1/sessions/{session_id}/end", {}),
    ("POST", "/v1/decisions"): lambda own: Base("/v1/decisions", {"content": "Keep the Porto ledger"}),
    ("POST", "/v1/episodes"): lambda own: Base("/v1/episodes", {"title": "Porto planning"}),
    ("POST", "/v1/preview"): lambda own: Base("/v1/preview", {"text": "When is the launch?"}),
    ("POST", "/v1/ingest"): lambda own: Base(
        "/v1/ingest?wait=true",
        {
            "id": "porto",
            "sessions": [{"id": "s1", "messages": [{"role": "user", "content": "Porto is lovely"}]}],
        },
    ),
}


def _plant(bob: httpx.Client, agent: httpx.Client, settings: Settings) -> dict[str, dict[str, str]]:
    """Bob's memory and session, and the agent's shared memory: their ids by owner and kind."""

    def made(client: httpx.Client, path: str, body: dict[str, Any]) -> str:
        answer = client.post(path, json=body)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["id"])

    ids = {
        "bob": {
            "fact": made(
                bob, "/v1/memories", {"type": "fact", "content": "Bob's Zorblax vault code is 7419"}
            ),
            "decision": made(bob, "/v1/decisions", {"content": "Move the Zorblax ledger to Quillon"}),
            "episode": made(bob, "/v1/episodes", {"title": "Zorblax launch planning"}),
        },
        "shared": {
            "fact": made(agent, "/v1/memories", {"type": "fact", "content": "The harbor office opens at 9"}),
            "decision": made(agent, "/v1/decisions", {"content": "Keep the harbor office open on Fridays"}),
            "episode": made(agent, "/v1/episodes", {"title": "Harbor office review"}),
        },
    }
    job = bob.post(
        "/v1/ingest",
        json={"id": "bob-notes", "sessions": [{"id": "n1", "messages": [{"role": "user", "content": "hi"}]}]},
    )
    assert job.status_code == 202, job.text
    ids["jobs"] = {"bob": str(job.json()["id"])}
    for path, body in (
        ("/v1/sessions/owner-session/turns", {"text": "Remind me the Zorblax launch is on Friday"}),
        ("/v1/sessions/owner-session/reply", {"text": "Zorblax: Friday, noted."}),
    ):
        assert bob.post(path, json=body).status_code == 200
    ids["threads"] = {"bob": _bobs_thread(bob, settings)}
    return ids


def _bobs_thread(bob: httpx.Client, settings: Settings) -> str:
    """One of bob's topic threads, built now (no event worker runs here)."""

    async def build() -> None:
        async with Nous(settings, agent_id="agent-a") as nous:
            await nous.build_threads()

    asyncio.run(build())  # from a sync test or a worker thread: no loop runs here
    found = [t for t in bob.get("/v1/threads").json()["items"] if t["user_id"] == "bob"]
    assert found, "bob has no thread"
    return str(found[0]["id"])


def _state(bob: httpx.Client, agent: httpx.Client, ids: dict[str, dict[str, str]]) -> dict[str, Any]:
    """What no intruder may change: the planted memories and their links, bob's session."""
    memories = {}
    for owner in (ids["bob"], ids["shared"]):
        for i in owner.values():
            memory = agent.get(f"/v1/memories/{i}").json()
            for volatile in ("last_accessed_at", "access_count", "stability", "retrievability"):
                memory.pop(volatile, None)
            memories[i] = (memory, agent.get(f"/v1/memories/{i}/links").json())
    recent = bob.post("/v1/recall/recent", json={"session_id": "owner-session", "limit": 100, "hours": 1})
    return {
        "memories": memories,
        "session": bob.get("/v1/sessions/owner-session").json(),
        "in_session": [m["id"] for m in recent.json()["items"]],
    }


def _value(marker: ScopeMarker, field: str, side: Side, ids: dict[str, dict[str, str]]) -> Any:
    """What the intruder puts in a marked field on ``side`` (None: nothing to try there)."""
    if isinstance(marker, UserRef):
        return side.user
    if isinstance(marker, JobRef):
        return None if side.target == "shared" else ids["jobs"]["bob"]
    if isinstance(marker, ThreadRef):
        return None if side.target == "shared" else ids["threads"]["bob"]
    if isinstance(marker, SessionRef):
        return None if side.target == "shared" else side.session
    if side.target == "shared" and marker.need == "visible":
        return None  # alice may read the agent's shared memory
    return ids["shared" if side.target == "shared" else "bob"][KIND_OF_FIELD.get(field, "fact")]


def _expect(scoped: Scoped, side: Side) -> int | None:
    """The status a probe must get (None: any answer, as long as nothing leaks or changes)."""
    marker = scoped.marker
    if scoped.agent_only and side.key != "b":  # an agent-wide view: a user-bound key is refused first
        return 403
    if isinstance(marker, UserRef):
        return 403 if side.user else None
    if isinstance(marker, JobRef | ThreadRef):
        return 404
    if isinstance(marker, SessionRef) or marker.unknown == "drop":
        return None
    return 403 if side.target == "shared" else 404


def _send(
    client: httpx.Client, method: str, base: Base, field: str, scoped: Scoped, value: Any
) -> httpx.Response:
    sent = [value] if scoped.many else value
    if scoped.where == "path":
        return client.request(method, base.url(**{field: sent}), json=base.body)
    if scoped.where == "query":  # with the base body, if the route takes one
        return client.request(method, base.url(), params={field: sent}, json=base.body or None)
    return client.request(method, base.url(), json={**(base.body or {}), field: sent})


def test_every_marked_field_refuses_the_other_sides_memory_session_and_user(
    served: tuple[LiveServer, dict[str, str]],  # noqa: F811 - the fixture imported above
) -> None:
    server, keys = served
    operations = _scoped()
    assert set(operations) == set(BASES), "a route with scoped fields and no base request here"
    clients = {name: _client(server, keys[name]) for name in ("a", "b", "alice", "bob")}
    tried: set[tuple[str, str, str, str]] = set()
    try:
        ids = _plant(clients["bob"], clients["a"], server.settings)
        before = _state(clients["bob"], clients["a"], ids)
        for side in SIDES:
            intruder = clients[side.key]
            unseen = {
                i
                for owner, got in ids.items()
                for i in got.values()
                if owner in ("bob", "jobs", "threads") or side.key == "b"
            }
            own = intruder.post("/v1/memories", json={"type": "fact", "content": "Porto trams are yellow"})
            assert own.status_code == 201, own.text
            for (method, route), fields in sorted(operations.items()):
                for field, scoped in fields.items():
                    value = _value(scoped.marker, field, side, ids)
                    if value is None:
                        continue
                    base = BASES[(method, route)](own.json()["id"])
                    if base.before is not None:
                        base.before(intruder)
                    answer = _send(intruder, method, base, field, scoped, value)
                    where = (side.name, method, route, field)
                    expected = _expect(scoped, side)
                    if expected is not None:
                        assert answer.status_code == expected, (where, answer.text)
                    else:
                        assert answer.status_code < 500, (where, answer.text)
                    assert not MARK.search(answer.text), (where, answer.text)
                    if expected is None:  # answered, with no id the intruder may not see
                        assert not any(i in answer.text for i in unseen), (where, answer.text)
                    if expected == 404:  # the owner's id answers as a missing one does
                        missing = str(uuid.uuid4())
                        # every answer has its own request id; the rest must match
                        twin = {
                            **_send(intruder, method, base, field, scoped, missing).json(),
                            "request_id": None,
                        }
                        got = {**answer.json(), "request_id": None}
                        got["detail"] = got["detail"].replace(str(value), missing)
                        assert got == twin, (where, got, twin)
                    assert _state(clients["bob"], clients["a"], ids) == before, where
                    tried.add(where)
        _probe_agent_views(clients["alice"], clients, ids, before)
    finally:
        for client in clients.values():
            client.close()
    probed = {(m, r, f) for _, m, r, f in tried}
    sides = {s for s, *_ in tried}
    print(
        f"scope table: {len(operations)} operations x {len(probed)} fields x {len(sides)} sides: {len(tried)} probes"
    )
    marked = {(m, r, f) for (m, r), fs in operations.items() for f in fs}
    assert probed == marked, marked - probed  # every marked field tried on some side


# The agent-wide views (``AgentKey``): a request a user-bound key sends to each (by the ids planted).
AGENT_VIEWS: dict[tuple[str, str], Callable[[dict[str, dict[str, str]]], Base]] = {
    ("GET", "/v1/stats"): lambda ids: _path("/v1/stats"),
    ("GET", "/v1/events"): lambda ids: _path("/v1/events"),
    ("GET", "/v1/calibration"): lambda ids: _path("/v1/calibration"),
    ("GET", "/v1/proposals"): lambda ids: _path("/v1/proposals"),
    ("POST", "/v1/proposals/{decision_id}/{verdict}"): lambda ids: _path(
        "/v1/proposals/{decision_id}/{verdict}", decision_id=ids["shared"]["decision"], verdict="reject"
    ),
    ("DELETE", "/v1/users/{user_id}"): lambda ids: _path("/v1/users/{user_id}", user_id="bob"),
    ("GET", "/v1/identity"): lambda ids: _path("/v1/identity"),
    ("PUT", "/v1/identity/{section}"): lambda ids: _path(
        "/v1/identity/{section}", {"content": "Keeper of Porto"}, section="character"
    ),
    ("GET", "/v1/export"): lambda ids: _path("/v1/export"),
    ("POST", "/v1/import"): lambda ids: _path("/v1/import", {}),
}


def _probe_agent_views(
    intruder: httpx.Client,
    clients: dict[str, httpx.Client],
    ids: dict[str, dict[str, str]],
    before: dict[str, Any],
) -> None:
    """Every route that declares ``AgentKey`` refuses a user-bound key (403) and changes nothing."""
    views = {key for key, route in _routes() if agent_key(route.endpoint) is not None}
    assert views == set(AGENT_VIEWS), "an agent-wide view with no request here"
    for (method, _), base in sorted(AGENT_VIEWS.items()):
        request = base(ids)
        answer = intruder.request(method, request.url(), json=request.body)
        assert answer.status_code == 403, (method, request.url(), answer.text)
        assert not MARK.search(answer.text), answer.text
        assert _state(clients["bob"], clients["a"], ids) == before, (method, request.url())


# -- the MCP tools' parameters -------------------------------------------------------------------
# tool -> its arguments for the intruder (a session is "probe", started by `context` first)
MCP_BASES: dict[str, dict[str, Any]] = {
    "context": {"session_id": "probe", "user_text": "When is the launch?"},
    "reply": {"session_id": "probe", "text": "Noted."},
    "end_session": {"session_id": "probe"},
    "remember": {"content": "Porto has good coffee"},
    "recall": {"query": "what is the vault combination?", "limit": 50},
    "recall_recent": {"limit": 100, "hours": 48},
    "timeline": {"topic": "when is the launch?", "threads": 5},
    "record_decision": {"description": "Use the Porto venue", "confidence": 0.6},
    "check_similar": {"content": "Where is the ledger moving?"},
    "check_action": {"action": "wipe the vault now"},
    "forget": {},  # its one parameter is the memory it forgets
}


def _mcp_scoped() -> dict[str, dict[str, Scoped]]:
    """Every MCP tool's marked parameters."""
    found: dict[str, dict[str, Scoped]] = {}
    for name, tool in _tools().items():
        for param, marker in marked_parameters(tool).items():
            many = _takes_list(inspect.signature(tool).parameters[param].annotation)
            found.setdefault(name, {})[param] = Scoped(marker, many, "tool")
    return found


async def test_every_marked_tool_parameter_refuses_the_other_sides_memory_session_and_user(
    served: tuple[LiveServer, dict[str, str]],  # noqa: F811
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    server, keys = served
    tools = _mcp_scoped()
    assert set(tools) == set(MCP_BASES), "a tool with scoped parameters and no base arguments here"
    clients = {name: _client(server, keys[name]) for name in ("a", "bob")}
    tried: set[tuple[str, str, str]] = set()
    try:
        ids = await asyncio.to_thread(_plant, clients["bob"], clients["a"], server.settings)
        before = await asyncio.to_thread(_state, clients["bob"], clients["a"], ids)
        for side in SIDES:
            unseen = {
                i
                for owner, got in ids.items()
                for i in got.values()
                if owner in ("bob", "jobs", "threads") or side.key == "b"
            }
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {keys[side.key]}"}, timeout=120)
            async with Client(streamable_http_client(f"{server.url}/mcp/", http_client=http)) as intruder:
                for tool, params in sorted(tools.items()):
                    for param, scoped in params.items():
                        value = _value(scoped.marker, param, side, ids)
                        if value is None:
                            continue
                        if tool in ("reply", "end_session"):  # a conversation of the intruder's own
                            assert not (await intruder.call_tool("context", MCP_BASES["context"])).is_error
                        sent = [value] if scoped.many else value
                        result = await intruder.call_tool(tool, {**MCP_BASES[tool], param: sent})
                        text, where = _mcp_text(result), (side.name, tool, param)
                        assert not MARK.search(text), (where, text)
                        if _expect(scoped, side) is None:  # answered, naming nothing of the owner's
                            assert not any(i in text for i in unseen), (where, text)
                        else:
                            assert result.is_error, (where, text)
                        if isinstance(scoped.marker, MemoryRef) and side.target != "shared":
                            # the owner's id fails exactly as a missing one does
                            missing = str(uuid.uuid4())
                            again = [missing] if scoped.many else missing
                            twin = await intruder.call_tool(tool, {**MCP_BASES[tool], param: again})
                            assert twin.is_error, (where, _mcp_text(twin))
                            assert text.replace(str(value), "ID") == _mcp_text(twin).replace(missing, "ID")
                        state = await asyncio.to_thread(_state, clients["bob"], clients["a"], ids)
                        assert state == before, where
                        tried.add(where)
    finally:
        for client in clients.values():
            client.close()
    marked = {(t, p) for t, ps in tools.items() for p in ps}
    assert {(t, p) for _, t, p in tried} == marked  # every marked parameter tried on some side
    print(f"MCP scope table: {len(tools)} tools x {len(marked)} parameters: {len(tried)} probes")


# -- the findings, as reported -------------------------------------------------------------------
def test_f1_a_user_cannot_supersede_another_users_or_the_agents_shared_fact(
    served: tuple[LiveServer, dict[str, str]],  # noqa: F811
) -> None:
    server, keys = served
    with (
        _client(server, keys["alice"]) as alice,
        _client(server, keys["bob"]) as bob,
        _client(server, keys["a"]) as agent,
    ):
        bobs = bob.post("/v1/memories", json={"type": "fact", "content": "Bob's locker code is 5512"}).json()
        shared = agent.post(
            "/v1/memories", json={"type": "fact", "content": "The office wifi is guest"}
        ).json()
        replaced = alice.post(
            "/v1/memories", json={"type": "fact", "content": "alice replaces", "supersedes": bobs["id"]}
        )
        assert replaced.status_code == 404, replaced.text
        assert "5512" not in replaced.text
        on_shared = alice.post(
            "/v1/memories",
            json={"type": "fact", "content": "alice replaces wifi", "supersedes": shared["id"]},
        )
        assert on_shared.status_code == 403, on_shared.text  # as her PATCH of it is
        listed = {m["id"] for m in bob.get("/v1/memories?type=fact").json()["items"]}
        assert bobs["id"] in listed  # still current in bob's list
        assert agent.get(f"/v1/memories/{shared['id']}").json()["superseded_by"] is None
        context = alice.post("/v1/sessions/s1/turns", json={"text": "what replaced what?"}).json()["context"]
        assert "5512" not in context and "alice replaces" not in context
        own = alice.post("/v1/memories", json={"type": "fact", "content": "Alice parks on level 2"}).json()
        mine = alice.post(
            "/v1/memories",
            json={"type": "fact", "content": "Alice parks on level 3", "supersedes": own["id"]},
        )
        assert mine.status_code == 201 and mine.json()["status"] == "superseded", mine.text


def test_f3_a_reply_cannot_link_another_users_decisions_or_facts(
    served: tuple[LiveServer, dict[str, str]],  # noqa: F811
) -> None:
    server, keys = served
    with _client(server, keys["alice"]) as alice, _client(server, keys["bob"]) as bob:
        decision = bob.post("/v1/decisions", json={"content": "Sell the Quillon shares"}).json()["id"]
        fact = bob.post("/v1/memories", json={"type": "fact", "content": "Bob's PIN is 4321"}).json()["id"]
        assert alice.post("/v1/sessions/s2/turns", json={"text": "Plan my week"}).status_code == 200
        for field, value in (("decision_ids", decision), ("fact_ids", fact)):
            answer = alice.post("/v1/sessions/s2/reply", json={"text": "Done.", field: [value]})
            assert answer.status_code == 404, answer.text
            assert bob.get(f"/v1/memories/{value}/links").json() == []  # no part_of edge to alice's turn
        own = alice.post("/v1/decisions", json={"content": "Book the Porto train"}).json()["id"]
        linked = alice.post("/v1/sessions/s2/reply", json={"text": "Booked.", "decision_ids": [own]})
        assert linked.status_code == 200, linked.text
