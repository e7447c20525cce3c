"""The MCP server (official ``mcp`` SDK): Nous's memory as tools for Claude Desktop, Claude Code,
Cursor and other MCP clients. ``nous mcp --agent NAME`` serves one agent over stdio.

Tools: the turn loop (``context`` before answering, ``reply`` after, ``end_session`` at the end,
so a conversation becomes a summarised episode), ``remember``, ``recall``, ``recall_recent``, ``timeline``,
``record_decision``, ``check_similar``, ``check_action`` and ``forget``; read-only resources for
the agent's identity, its recent episodes and the active censors that bind the caller. A refused
or invalid call is a tool error with the reason, never a crash of the server. Inside `nous
serve`, each call speaks for its API key: a user-bound key's tools see and change only what that
key may over REST. A tool declares the scope of its parameters as a REST route does (a
``MemoryRef``, ``SessionRef`` or ``UserRef`` in the parameter's ``Annotated`` metadata, which its
schema does not show), and ``scoped`` applies it before the tool's body runs
(``nous.server.scope``). The tools are the rows of ``nous.server.mcp_tools.TOOLS``, registered
here in one loop, each through ``scoped``.
"""

import functools
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.utilities.context_injection import find_context_parameter
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import AnyUrl, ValidationError

from nous.api import Nous
from nous.errors import NousError
from nous.models import Episode
from nous.server.mcp_schema import iso
from nous.server.mcp_tools import TOOLS, calling
from nous.server.request_ids import client_message
from nous.server.scope import Caller, SessionRef, UserRef, apply_parameters, marked_parameters, scoped_value

Tool = TypeVar("Tool", bound=Callable[..., Awaitable[Any]])
INSTRUCTIONS = """Long-term memory for this conversation and the ones before it.
Each turn: call `context` with the user's message before you answer (it returns what you should
know: identity, rules, relevant memories, recent conversations), then `reply` with your answer
after you give it. When the conversation is over, call `end_session`; it is then summarised and
remembered. Use one session_id for the whole conversation.
When useful: `remember` a lasting fact (a preference, a person, a plan); `recall` to search memory;
`check_action` before a risky or irreversible action; `record_decision` for a choice you make,
with your confidence and typed reasons."""

Resolver = Callable[[Context], Awaitable[tuple[Nous, Caller]]]

# The request a resource is being read for. A static resource's function takes no arguments in
# the SDK, so the server sets this around each read for the function to find whose key is asking.
_reading: ContextVar[Context | None] = ContextVar("nous_mcp_reading", default=None)


class _NousMCP(MCPServer[Any]):
    """MCPServer that words a refused argument for the model that sent it, and makes the request
    of a resource read visible to the resource's function."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            # One line per refused argument, its allowed values or bounds, and what was sent;
            # the cause is kept, so the SDK still logs the refusal by field name only.
            problems = "; ".join(_problem(error) for error in cause.errors())
            raise ToolError(f"invalid arguments for {name}: {problems}") from cause

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        token = _reading.set(context)
        try:
            return await super().read_resource(uri, context)
        finally:
            _reading.reset(token)


def create_mcp_server(
    open_nous: Callable[[], Nous] | None = None, *, resolve: Resolver | None = None
) -> MCPServer[Any]:
    """An MCP server over one agent's memory: the Nous ``open_nous`` builds (opened when the
    server starts; stdio), or, with ``resolve``, the agent each request's API key names
    (streamable HTTP inside `nous serve`)."""
    holder: dict[str, Nous] = {}

    @asynccontextmanager
    async def lifespan(server: MCPServer[Any]) -> AsyncIterator[None]:
        if open_nous is None:
            yield
            return
        async with open_nous() as nous:
            holder["nous"] = nous
            yield
        holder.clear()

    server = _NousMCP(name="nous", instructions=INSTRUCTIONS, lifespan=lifespan)

    async def caller(ctx: Context) -> tuple[Nous, Caller]:
        if resolve is not None:
            return await resolve(ctx)
        if "nous" not in holder:
            raise ToolError("the memory store is not open")
        nous = holder["nous"]
        return nous, Caller(agent_id=nous.agent_id)

    for spec in TOOLS:
        server.add_tool(
            scoped(caller, spec.fn),
            name=spec.name,
            title=spec.title,
            description=spec.description,
            annotations=spec.annotations,
        )
    _add_resources(server, caller)
    return server


def _add_resources(server: MCPServer[Any], caller: Resolver) -> None:
    """Read-only views a client may show or attach without a tool call."""

    async def read(fn: Callable[[Nous, Caller], Awaitable[Any]]) -> str:
        ctx = _reading.get()
        if ctx is None:
            raise ResourceError("this resource is read through an MCP request")
        try:
            nous, who = await caller(ctx)
            return json.dumps(await fn(nous, who), ensure_ascii=False)
        except NousError as exc:
            raise ResourceError(client_message(exc)) from None

    @server.resource(
        "nous://identity",
        name="identity",
        description="The agent's identity: character, values, protocols, preferences, boundaries "
        "(the sections that were set), each with its version and date. For the agent's key.",
        mime_type="application/json",
    )
    async def identity() -> str:
        async def sections(nous: Nous, who: Caller) -> list[dict[str, Any]]:
            who.require_agent_key("the agent's identity")
            return [
                {
                    "section": s.section,
                    "content": s.content,
                    "version": s.version,
                    "at": s.updated_at.isoformat(),
                }
                for s in await nous.identity()
            ]

        return await read(sections)

    @server.resource(
        "nous://episodes/recent",
        name="recent-episodes",
        description="The conversations of the last days, newest first: each episode's title, "
        "summary, dates and outcome.",
        mime_type="application/json",
    )
    async def recent_episodes() -> str:
        async def episodes(nous: Nous, who: Caller) -> list[dict[str, Any]]:
            found = await nous.recall_recent(limit=20, kinds="episode", user_id=who.user_id)
            return [
                {
                    "id": e.id,
                    "type": e.kind.value,
                    "title": e.title,
                    "summary": e.summary,
                    "content": e.content,
                    "at": e.occurred_at.isoformat(),
                    "ended_at": iso(e.ended_at),
                    "outcome": e.outcome.value,
                }
                for e in found
                if isinstance(e, Episode)
            ]

        return await read(episodes)

    @server.resource(
        "nous://censors",
        name="censors",
        description="The active censors: what each one catches (pattern), its action "
        "(warn, block or absolute), why, and when it was made. A user's key reads the censors "
        "that bind its user: the agent's shared ones and its user's own.",
        mime_type="application/json",
    )
    async def censors() -> str:
        async def active(nous: Nous, who: Caller) -> list[dict[str, Any]]:
            return [
                {
                    "id": c.id,
                    "type": c.kind.value,
                    "pattern": c.trigger_pattern,
                    "action": c.action.value,
                    "reason": c.reason,
                    "at": c.occurred_at.isoformat(),
                }
                for c in await nous.censors(
                    limit=1000, user_id=await scoped_value(nous, who, UserRef(), None)
                )
            ]

        return await read(active)


def scoped(caller: Resolver, tool: Tool) -> Tool:
    """``tool`` run for the request's caller (``caller`` resolves it from the request's Context;
    the body reads it with ``mcp_tools.caller()``), with the scope its parameters declare applied
    before its body runs (as ``ScopedRoute`` does for a REST route): memory ids checked, session
    ids made the caller's stored ones, the acting user resolved. A refusal, in the scope or in the
    body, is a tool error with the reason. An answer naming a scoped session names it as the
    caller sent it. The signature (and so the tool's schema) is ``tool``'s own."""
    marked = marked_parameters(tool)
    context = find_context_parameter(tool)
    if context is None or not inspect.iscoroutinefunction(tool):
        raise TypeError(f"{tool.__name__}: a tool is async and takes the request's Context")
    names_session = any(isinstance(m, SessionRef) for m in marked.values())

    @functools.wraps(tool)
    async def run(**kwargs: Any) -> Any:
        try:
            nous, who = await caller(kwargs[context])
            arguments = await apply_parameters(nous, who, marked, kwargs)
            token = calling.set((nous, who))
            try:
                answer = await tool(**arguments)
            finally:
                calling.reset(token)
        except NousError as exc:  # a tool error with the reason, as the REST API's 4xx
            raise ToolError(client_message(exc)) from None
        return who.outside(answer) if names_session and isinstance(answer, dict) else answer

    return run  # type: ignore[return-value]  # the same signature as ``tool``


def _problem(error: Any) -> str:
    """``reasons.0.type: Input should be 'analysis', ... or 'constraint' (got 'gut')``."""
    where = ".".join(str(part) for part in error["loc"]) or "arguments"
    text = f"{where}: {error['msg']}"
    sent = error.get("input")
    if error["type"] != "missing" and isinstance(sent, str | int | float | bool):
        text += f" (got {str(sent)[:80]!r})" if isinstance(sent, str) else f" (got {sent!r})"
    return text
