"""``nous serve``: the REST API over one store, every agent's memory behind its own API keys.

A request's agent comes only from its key: another agent's memory id answers 404 exactly as a
missing id does. Errors are RFC 9457 problem details (``application/problem+json``): 4xx for
anything a client can send, 503 when the store or a provider fails, never a bare 500.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from nous.api import Nous
from nous.config import Settings
from nous.errors import AuthenticationError, InvalidInputError, NousError
from nous.llm.upstream import create_upstream
from nous.models.events import EventStatus
from nous.models.keys import ApiKey
from nous.server import docs, idempotency, openai_proxy, ui
from nous.server.guards import BodyTimeout
from nous.server.keys import key_from_header, request_key
from nous.server.limits import MAX_BODY_BYTES, BodyCap, method_label
from nous.server.mcp_mount import LazyMCP
from nous.server.operations import OPERATIONS
from nous.server.problems import PROBLEM, problem, title
from nous.server.request_ids import RequestIds, client_message, public_message
from nous.server.scope import Caller, scoped_route

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context

log = logging.getLogger(__name__)
__all__ = ["MAX_BODY_BYTES", "create_app"]
DESCRIPTION = """Every `/v1` route needs an agent's API key (`nous keys create --agent NAME`) as
`Authorization: Bearer nous_...` (the **Authorize** button here takes it). Bodies are JSON: send
`Content-Type: application/json`. Errors are RFC 9457 problem details
(`application/problem+json`) whose `title` is the status's reason phrase, `code` the cause and
`field` the request field at fault, as sent.
"""
TAGS = [
    {"name": "memories", "description": "Any memory: create, read, change, forget, restore, link."},
    {"name": "recall", "description": "Search memories."},
    {"name": "decisions", "description": "Decisions, their outcomes and calibration."},
    {"name": "episodes", "description": "Episodes: things that happened."},
    {"name": "sessions", "description": "The turn loop and the sessions it keeps."},
    {"name": "procedures", "description": "How-tos and their track record."},
    {"name": "censors", "description": "Guardrails on actions."},
    {"name": "identity", "description": "The agent's identity sections."},
    {"name": "conversations", "description": "Ingest, export and import."},
    {"name": "service", "description": "Health, stats and the event queue."},
]


class Problem(Exception):
    """An HTTP error answered as problem details."""

    def __init__(self, status: int, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.detail, self.extra = status, detail, extra


# -- the route contract --------------------------------------------------------------------------
def operation_id(route: APIRoute) -> str:
    """A route's operationId: its handler's name in camelCase (``list_memories`` -> ``listMemories``)."""
    head, *rest = route.name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# -- the app ---------------------------------------------------------------------------------
def create_app(settings: Settings, *, auth: bool = True) -> FastAPI:
    """The API over the store ``settings`` name. ``auth=False`` serves the default agent without
    keys (``nous serve --no-auth``, loopback only)."""
    state: dict[str, Any] = {"views": {}, "workers": []}
    metrics = Metrics()
    resolver: dict[str, Any] = {}
    # MCP over streamable HTTP at /mcp/ (stateless: each request carries its key), built on its
    # first request.
    mcp_app = LazyMCP(resolve=lambda ctx: resolver["fn"](ctx))
    _configure_logging()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stop = asyncio.Event()
        state["stop"] = stop
        ready = state["ready"] = asyncio.Event()
        async with Nous(settings) as root:
            mcp_app.open()
            state["root"] = root  # the root runs its own agent's event worker when configured
            state["upstream"] = create_upstream(settings)  # the proxy's model; None when offline
            # The socket answers at once; the model and the vector index load behind it.
            warming = asyncio.create_task(_warm_up(root, ready))
            try:
                yield
            finally:
                warming.cancel()
                await asyncio.gather(warming, return_exceptions=True)
                stop.set()  # the other agents' workers finish the event in hand, then stop
                await asyncio.gather(*state["workers"], return_exceptions=True)
                if state["upstream"] is not None:
                    await state["upstream"].aclose()
                await mcp_app.close()
        state.clear()

    app = FastAPI(
        title="Nous",
        version=_version(),
        summary="Long-term memory for AI agents",
        lifespan=lifespan,
        openapi_url="/openapi.json",
        docs_url=None,  # served below from packaged assets: the pages work offline
        redoc_url=None,
        generate_unique_id_function=operation_id,
        swagger_ui_parameters={"persistAuthorization": True},
    )
    docs.mount(app)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]

    # Outermost first: the request id, then the key (checked before any body byte is read), then
    # the body cap on the bytes received, then the stalled-body timeout; innermost, a keyed
    # creating POST is claimed once authenticated and its body read whole (Idempotency-Key).
    app.add_middleware(idempotency.Idempotency, root=lambda: state["root"], router=app.router, auth=auth)
    app.add_middleware(BodyTimeout, timeout=settings.request_timeout_s)
    app.add_middleware(BodyCap, limit=MAX_BODY_BYTES)

    @app.middleware("http")
    async def key_first(request: Request, call_next: Any) -> Any:
        started = time.perf_counter()
        response = await _unauthorized(request) if auth else None
        if response is None and not state["ready"].is_set() and not _ungated(request.url.path):
            response = await _until_ready(state["ready"], settings.startup_wait_s)
        if response is None:
            response = await call_next(request)
        route = request.scope.get("route")
        metrics.observe(request.method, getattr(route, "path", "unmatched"), response.status_code, started)
        return response

    app.add_middleware(RequestIds)

    async def _unauthorized(request: Request) -> Response | None:
        """The 401 of a request that needs a key and has no valid one, answered before its body
        is read; None when it may go on. /mcp and the proxy need an agent's key; the REST routes
        (which refuse an admin key with 403, after reading) and /metrics any valid key."""
        path = request.url.path
        if path in openai_proxy.PATHS:
            key = await _agent_key(request)
            return openai_proxy.unauthorized() if key is None else None
        if path.startswith("/mcp"):
            if await _agent_key(request) is None:
                return problem(
                    401, "send an agent's API key: Authorization: Bearer nous_...", code="unauthorized"
                )
        elif (path.startswith("/v1/") or path == "/metrics") and await _any_key(request) is None:
            return problem(401, "send a valid API key: Authorization: Bearer nous_...", code="unauthorized")
        return None

    @app.get("/metrics", response_class=PlainTextResponse, include_in_schema=False)
    async def prometheus(request: Request) -> str:
        """Request metrics (no memory content), for an admin key or an agent's key; a user-bound
        key is refused (the counts are every agent's and every user's)."""
        if auth:
            key = await _any_key(request)
            if key is None:
                raise Problem(
                    401, "send a valid API key: Authorization: Bearer nous_...", code="unauthorized"
                )
            if key.user_id is not None:
                raise Problem(403, "the metrics are for an admin key or an agent's key", code="forbidden")
        outbox = await state["root"].store.event_counts(None)
        return metrics.render() + render_outbox(outbox)

    @app.exception_handler(Problem)
    async def on_problem(request: Request, exc: Problem) -> JSONResponse:
        return problem(exc.status, exc.detail, **exc.extra)

    @app.exception_handler(NousError)
    async def on_nous_error(request: Request, exc: NousError) -> JSONResponse:
        status = exc.http_status if exc.http_status < 500 else 503
        field = exc.field if isinstance(exc, InvalidInputError) else None
        return problem(status, client_message(exc), code=exc.code, field=field)

    async def as_page(request: Request, status: int, detail: str) -> Response | None:
        """The inspector's HTML error page for a request under /ui/, None elsewhere."""
        shown = getattr(app.state, "ui_error_page", None)
        return await shown(request, status, detail) if shown is not None else None

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        found = exc.errors()
        # A value checked against a union carries the member's name in its location
        # ("category", "str-enum[FactCategory]"): the client sent only "category".
        errors = [
            {"loc": [str(p) for p in e.get("loc", ()) if "[" not in str(p)], "msg": str(e.get("msg", ""))}
            for e in found[:20]
        ]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where, path = (first["loc"][0], first["loc"][1:]) if first["loc"] else ("body", [])
        field = ".".join(path) or None
        detail = f"{field or where}: {first['msg']}"
        media = request.headers.get("content-type", "")
        if where == "body" and not path and "json" not in media.lower():
            detail = (
                "the body must be JSON: send it with the header Content-Type: application/json "
                f"(got {media or 'no Content-Type'})"
            )
        elif found and found[0].get("type") == "json_invalid":
            detail = f"the body is not valid JSON: {first['msg']}"
        return await as_page(request, 422, detail) or problem(
            422, detail, code="invalid_input", field=field, errors=errors
        )

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # every method the path answers, not only one route's
            headers["Allow"] = ", ".join(_allowed(app, request.url.path))
            detail = f"{request.method} is not allowed here; allowed: {headers['Allow']}"
        elif exc.status_code == 404:
            detail = f"no route {request.url.path}"
        elif exc.status_code == 400:  # a body that cannot be parsed at all (not UTF-8 JSON)
            return problem(
                422,
                "the body is not valid JSON: send UTF-8 JSON with Content-Type: application/json",
                code="invalid_input",
                field="body",
            )
        else:
            detail = str(exc.detail)
        if (
            exc.status_code in (404, 405)
            and (shown := await as_page(request, exc.status_code, detail)) is not None
        ):
            return shown
        code = title(exc.status_code).lower().replace(" ", "_")
        return problem(exc.status_code, detail, headers=headers, code=code)

    @app.exception_handler(Exception)
    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return problem(503, public_message(exc), code="unexpected")

    async def caller(request: Request) -> Caller:
        """The caller of a REST request (``callers.Who``): its key's agent and user."""
        root: Nous = state["root"]
        _known_query(request)
        if not auth:
            return Caller(agent_id=root.agent_id)
        key = await _any_key(request)
        if key is None:
            raise Problem(401, "send a valid API key: Authorization: Bearer nous_...", code="unauthorized")
        if key.admin or key.agent_id is None:
            raise Problem(
                403, "an admin key manages keys; use an agent's key for its memory", code="forbidden"
            )
        return Caller(agent_id=key.agent_id, user_id=key.user_id)

    def nous_for(who: Caller) -> Nous:
        views: dict[str, Nous] = state["views"]
        view = views.get(who.agent_id)
        if view is None:
            root: Nous = state["root"]
            view = views[who.agent_id] = (
                root if who.agent_id == root.agent_id else root.for_agent(who.agent_id)
            )
            if view is not root and settings.events_worker == "in-process":
                state["workers"].append(asyncio.create_task(view.run_pipeline(state["stop"])))
        return view

    # what the handlers' dependencies (nous.server.callers) resolve their values with
    app.state.caller_of, app.state.nous_for, app.state.root = caller, nous_for, lambda: state["root"]
    app.state.ready = lambda: state["ready"].is_set()

    async def _any_key(request: Request) -> ApiKey | None:
        return await request_key(state["root"].store, request)

    async def _agent_key(request: Request) -> ApiKey | None:
        key = await _any_key(request)
        return key if key is not None and key.agent_id is not None and not key.admin else None

    async def mcp_caller(ctx: "Context") -> tuple[Nous, Caller]:
        """The agent (and user) of an MCP request (streamable HTTP): its key, checked per call."""
        if not auth:
            who = Caller(agent_id=state["root"].agent_id)
            return nous_for(who), who
        key = await key_from_header(state["root"].store, (ctx.headers or {}).get("authorization"))
        if key is None or key.agent_id is None or key.admin:
            raise AuthenticationError("send an agent's API key: Authorization: Bearer nous_...")
        who = Caller(agent_id=key.agent_id, user_id=key.user_id)
        return nous_for(who), who

    resolver["fn"] = mcp_caller
    app.mount("/mcp", mcp_app)

    # Every route's request body is checked against the caller's scope before its handler runs.
    app.router.route_class = scoped_route(nous_for)

    for operation in OPERATIONS:
        operation.register(app)
    # the inspector's pages under /ui/ (and / redirects there): the same views and key scope
    ui.mount(app, auth=auth, root=lambda: state["root"], nous_for=nous_for)

    async def proxy_caller(request: Request) -> Caller | None:
        if not auth:
            return Caller(agent_id=state["root"].agent_id)
        key = await _agent_key(request)
        return (
            None
            if key is None or key.agent_id is None
            else Caller(agent_id=key.agent_id, user_id=key.user_id)
        )

    # OpenAI-compatible chat completions with memory (outside the OpenAPI document: OpenAI's API)
    openai_proxy.register(
        app, authenticate=proxy_caller, nous_for=nous_for, upstream_of=lambda: state.get("upstream")
    )
    return app


def _configure_logging() -> None:
    """Log to stderr at INFO through rich, unless logging was configured already: what creating
    the MCP SDK's server sets up, done here since that server is built only on the first MCP
    request (`nous serve` quiets some loggers of it, the access log relies on it)."""
    from rich.console import Console
    from rich.logging import RichHandler

    handler = RichHandler(console=Console(stderr=True), rich_tracebacks=True)
    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[handler])


UNGATED = ("/health", "/metrics", "/openapi.json", "/docs")  # answered while the server starts


def _ungated(path: str) -> bool:
    return path in UNGATED or path.startswith("/docs/")


async def _warm_up(root: Nous, ready: asyncio.Event) -> None:
    """Load the embedding model and open the store's vector index, then mark the server ready.
    A failure is logged and the server marked ready all the same: each request then meets the
    error itself (a typed 503), as it would without the warm-up."""
    try:
        await asyncio.to_thread(root.embedder.provider.warm_up)
        await root.store.warm_up()
    except Exception:
        log.exception("warming up the embedding model and the vector index failed")
    finally:
        ready.set()


async def _until_ready(ready: asyncio.Event, wait_s: float) -> Response | None:
    """None once the server is ready, waiting up to ``wait_s``; else a 503 saying it is starting."""
    try:
        await asyncio.wait_for(ready.wait(), wait_s)
        return None
    except TimeoutError:
        return problem(
            503,
            "the server is starting (loading the embedding model and the vector index); retry shortly",
            code="starting",
            headers={"Retry-After": "1"},
        )


def _known_query(request: Request) -> None:
    """A query parameter the route does not take is a 422 naming it, not silently ignored (a
    misspelt filter would otherwise answer as if no filter were given)."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not request.query_params:
        return
    known = _query_names(route.dependant)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        takes = ", ".join(sorted(known)) or "none"
        raise InvalidInputError(
            f"unknown query parameter {unknown[0]!r}; this route takes: {takes}", field=unknown[0]
        )


def _query_names(dependant: Dependant) -> set[str]:
    """The query parameters a route (and its dependencies) take."""
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def _allowed(app: FastAPI, path: str) -> list[str]:
    """The methods some route answers at ``path``."""
    methods: set[str] = set()
    for route in app.router.routes:
        if isinstance(route, APIRoute | Route) and route.path_regex.match(path) and route.methods:
            methods |= route.methods
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, with every error body under ``application/problem+json`` alone."""
    if app.openapi_schema is None:
        spec = get_openapi(
            title=app.title,
            version=app.version,
            summary=app.summary,
            description=DESCRIPTION,
            routes=app.routes,
            tags=TAGS,
        )
        for operations in spec.get("paths", {}).values():
            for operation in operations.values():
                for status, answer in operation.get("responses", {}).items():
                    content = answer.get("content", {})
                    if status[0] in "45" and "application/json" in content:
                        answer["content"] = {PROBLEM: content.pop("application/json")}
        idempotency.document(spec)
        app.openapi_schema = spec
    return app.openapi_schema


class Metrics:
    """Request counts and latency per method, route and status, in Prometheus' text format."""

    def __init__(self) -> None:
        self.count: dict[tuple[str, str, int], int] = {}
        self.seconds: dict[tuple[str, str, int], float] = {}

    def observe(self, method: str, route: str, status: int, started: float) -> None:
        key = (method_label(method), route, status)
        self.count[key] = self.count.get(key, 0) + 1
        self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - started

    def render(self) -> str:
        lines = [
            "# HELP nous_requests_total Requests answered, by method, route and status.",
            "# TYPE nous_requests_total counter",
        ]
        for (method, route, status), n in sorted(self.count.items()):
            lines.append(f'nous_requests_total{{method="{method}",route="{route}",status="{status}"}} {n}')
        lines += [
            "# HELP nous_request_seconds_total Time spent answering, by method, route and status.",
            "# TYPE nous_request_seconds_total counter",
        ]
        for (method, route, status), t in sorted(self.seconds.items()):
            lines.append(
                f'nous_request_seconds_total{{method="{method}",route="{route}",status="{status}"}} {t:.6f}'
            )
        return "\n".join(lines) + "\n"


def render_outbox(counts: dict[EventStatus, int]) -> str:
    """The store's outbox by status, every agent's: the same in every process that answers."""
    lines = [
        "# HELP nous_events Outbox events in the store (every agent's), by status.",
        "# TYPE nous_events gauge",
    ]
    lines += [f'nous_events{{status="{s.value}"}} {counts.get(s, 0)}' for s in EventStatus]
    return "\n".join(lines) + "\n"


def _version() -> str:
    from nous import __version__

    return __version__
