"""The MCP server (official ``mcp`` SDK): Nous's memory as tools for Claude Desktop, Claude Code,
Cursor and other MCP clients. ``nous mcp --agent NAME`` serves one agent over stdio.

Tools: remember (a fact through the duplicate check), recall, recall_recent, record_decision,
check_similar, check_action, context (the turn's assembled context) and forget. A refused or
invalid call is a tool error with the reason, never a crash of the server. Inside `nous serve`,
each call speaks for its API key: a user-bound key's tools see and change only what that key
may over REST (``nous.server.scope``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from nous.api import Nous
from nous.errors import NousError
from nous.server.scope import Caller, owned

T = TypeVar("T")
INSTRUCTIONS = (
    "Long-term memory. Call `context` with the user's message at the start of a turn to get what "
    "you should know; `remember` lasting facts (preferences, decisions' reasons, people, plans); "
    "`recall` to search; `check_action` before a risky action; `record_decision` for choices you "
    "make, with your confidence."
)


Resolver = Callable[[Context], Awaitable[tuple[Nous, Caller]]]


def create_mcp_server(
    open_nous: Callable[[], Nous] | None = None, *, resolve: Resolver | None = None
) -> MCPServer:
    """An MCP server over one agent's memory: the Nous ``open_nous`` builds (opened when the
    server starts; stdio), or, with ``resolve``, the agent each request's API key names
    (streamable HTTP inside `nous serve`)."""
    holder: dict[str, Nous] = {}

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[None]:
        if open_nous is None:
            yield
            return
        async with open_nous() as nous:
            holder["nous"] = nous
            yield
        holder.clear()

    server = MCPServer(name="nous", instructions=INSTRUCTIONS, lifespan=lifespan)

    async def call(ctx: Context, fn: Callable[[Nous, Caller], Awaitable[T]]) -> T:
        try:
            if resolve is not None:
                nous, who = await resolve(ctx)
            else:
                if "nous" not in holder:
                    raise ToolError("the memory store is not open")
                nous = holder["nous"]
                who = Caller(agent_id=nous.agent_id)
            return await fn(nous, who)
        except NousError as exc:  # a tool error with the reason, as the REST API's 4xx
            raise ToolError(str(exc)) from None

    @server.tool(description="Store a lasting fact. Duplicates are recognised and confirm the existing one.")
    async def remember(
        ctx: Context,
        content: str,
        subject: str | None = None,
        category: str | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        result = await call(
            ctx,
            lambda n, who: n.learn(
                content,
                subject=subject,
                category=category,
                user_id=who.user_id,
                session_id=who.session_keys(session_id),
            ),
        )
        return {
            "id": result.memory.id,
            "status": result.status.value,
            "existing_id": result.existing_id,
            "warnings": result.warnings,
        }

    @server.tool(
        description="Search memory: facts, decisions, procedures, censors, episodes and conversation turns. "
        "Each result has a relevance score from 0 to 1 (results below min_score, default 0.05, are left "
        "out, so a question nothing answers gets an empty list), its date, and whether it is current. "
        "Give the session_id of the conversation (as passed to `context`) to rank by its frame too."
    )
    async def recall(
        ctx: Context,
        query: str,
        limit: int = 10,
        types: list[str] | None = None,
        min_score: float | None = None,
        session_id: str | None = None,
    ) -> list[dict[str, Any]]:
        hits = await call(
            ctx,
            lambda n, who: n.recall(
                query,
                limit=limit,
                kinds=types,
                user_id=who.user_id,
                min_score=min_score,
                in_session=who.session_key(session_id) if session_id else None,
            ),
        )
        return [h.brief() for h in hits]

    @server.tool(description="The most recent memories by time (default: conversations of the last days).")
    async def recall_recent(
        ctx: Context, limit: int = 10, hours: float | None = None
    ) -> list[dict[str, Any]]:
        found = await call(ctx, lambda n, who: n.recall_recent(limit=limit, hours=hours, user_id=who.user_id))
        return [
            {"id": m.id, "type": m.kind.value, "content": m.content, "at": m.occurred_at.isoformat()}
            for m in found
        ]

    @server.tool(description="Record a decision with its confidence (0-1) and reasons.")
    async def record_decision(
        ctx: Context,
        description: str,
        confidence: float = 0.5,
        reasons: list[str] | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        decision = await call(
            ctx,
            lambda n, who: n.record_decision(
                description,
                confidence=confidence,
                reasons=[{"type": "analysis", "text": r} for r in reasons or []],
                user_id=who.user_id,
                session_id=who.session_keys(session_id),
            ),
        )
        return {"id": decision.id, "flags": decision.flags}

    @server.tool(description="What storing this text would find: close memories and a recommendation.")
    async def check_similar(ctx: Context, content: str, type: str = "fact") -> dict[str, Any]:
        found = await call(ctx, lambda n, who: n.check_similar(content, type, user_id=who.user_id))
        return found.model_dump(mode="json")

    @server.tool(description="Check a planned action against the agent's censors: allow, warn or block.")
    async def check_action(ctx: Context, action: str, session_id: str | None = None) -> dict[str, Any]:
        verdict = await call(
            ctx, lambda n, who: n.check_action(action, session_id=who.session_keys(session_id))
        )
        return verdict.model_dump(mode="json")

    @server.tool(
        name="context",
        description="The context for this turn: identity, rules, relevant memories, within a budget.",
    )
    async def turn_context(ctx: Context, session_id: str, user_text: str) -> dict[str, Any]:
        turn = await call(
            ctx, lambda n, who: n.pre_turn(who.session_key(session_id), user_text, user_id=who.user_id)
        )
        return {"frame": turn.frame, "context": turn.text, "tokens": turn.tokens, "budget": turn.budget}

    @server.tool(description="Forget a memory (restorable; nothing is deleted for good).")
    async def forget(ctx: Context, memory_id: str) -> dict[str, Any]:
        async def forget_owned(n: Nous, who: Caller) -> Any:
            return await n.forget((await owned(n, who, memory_id)).id)

        memory = await call(ctx, forget_owned)
        return {"id": memory.id, "active": memory.active}

    return server
