"""The MCP tools, declared in one table (``TOOLS``) that ``nous.server.mcp`` registers row by row.
Each tool states what it reads or changes in its annotations (read-only, destructive, idempotent;
never open-world: it touches only this store), describes every parameter and names only MCP tool
names in its text, so a model can use it from the schema alone. A parameter that names a memory,
a session or a user declares its scope (``nous.server.scope``), which the dispatcher
(``nous.server.mcp.scoped``) applies before the body runs: a body sees only checked ids, the
caller's stored session id and the acting user. Every body takes the request's ``Context`` (the
dispatcher resolves the caller from it) and reads the caller's store with ``caller()``."""

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import BeforeValidator, Field

from nous._sequences import spread
from nous.api import Nous
from nous.cognitive import TurnResult
from nous.events.transcript import clip
from nous.models.heart import censor_actions_text
from nous.server.bodies import MetadataObject, WhereObject
from nous.server.mcp_schema import (
    CensorActionName,
    Confidence,
    DecisionCategoryName,
    FactCategoryName,
    Limit,
    MemoryKindName,
    OptionalSessionId,
    ReasonIn,
    SessionId,
    StakesName,
    UserId,
    dated,
    iso,
)
from nous.server.scope import Caller, MemoryRef, SessionRef

# Recall strengthens what it returns (a memory that is used fades more slowly), which is the
# store's own bookkeeping, not a change the caller asked for: to a client, searching is reading.
READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
ONCE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
REMOVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

# The store and caller of the tool call being run, set by the dispatcher around the body.
calling: ContextVar[tuple[Nous, Caller] | None] = ContextVar("nous_mcp_calling", default=None)


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: its body and what the server registers it with."""

    fn: Callable[..., Awaitable[Any]]
    name: str
    title: str
    annotations: ToolAnnotations
    description: str


def caller() -> tuple[Nous, Caller]:
    """The store and caller the running tool body speaks for."""
    found = calling.get()
    if found is None:
        raise RuntimeError("a tool body runs through the dispatcher (nous.server.mcp.scoped)")
    return found


def _blank_is_none(value: Any) -> Any:
    return None if value == "" else value


async def turn_context(
    ctx: Context,
    session_id: SessionId,
    user_text: Annotated[
        str, Field(min_length=1, max_length=100_000, description="The user's message, verbatim.")
    ],
    user_id: UserId = None,
    budget: Annotated[
        int | None,
        Field(ge=1, le=1_000_000, description="Token budget for the context; omit for the frame's own."),
    ] = None,
) -> dict[str, Any]:
    nous, _ = caller()
    turn = await nous.pre_turn(session_id, user_text, user_id=user_id, budget=budget)
    return {
        "session_id": session_id,
        "turn": turn.turn,
        "frame": turn.frame,
        "context": turn.text,
        "tokens": turn.tokens,
        "budget": turn.budget,
        "episode_id": turn.episode_id,
        # The memories the context shows (each dated in its text), for `reply`'s links or `forget`.
        "memories": [
            {"id": i.id, "type": i.kind, "section": sec.name}
            for sec in turn.sections
            for i in sec.items
            if i.id is not None
        ],
    }


async def reply(
    ctx: Context,
    session_id: SessionId,
    text: Annotated[
        str, Field(min_length=1, max_length=100_000, description="Your answer to the user, verbatim.")
    ],
    tools_used: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=200)]],
        Field(max_length=100, description="Names of the tools you used in this turn."),
    ] = [],  # noqa: B006 - the SDK copies defaults into the schema and never mutates them
    # Only memories the caller sees are linked to its conversation; another agent's or user's
    # id answers as a missing one (the scope of REST's reply fields).
    decision_ids: Annotated[
        list[str],
        Field(max_length=100, description="Ids `record_decision` returned during this turn."),
        MemoryRef(),
    ] = [],  # noqa: B006
    fact_ids: Annotated[
        list[str],
        Field(max_length=100, description="Ids `remember` returned during this turn."),
        MemoryRef(),
    ] = [],  # noqa: B006
) -> dict[str, Any]:
    nous, _ = caller()
    state = await nous.post_turn(
        session_id,
        TurnResult(reply=text, tools_used=tools_used, decision_ids=decision_ids, fact_ids=fact_ids),
    )
    return {
        "session_id": session_id,
        "turns": state.turn_count,
        "episode_id": state.episode_id,
        "at": state.last_active_at.isoformat(),
    }


async def end_session(
    ctx: Context,
    session_id: SessionId,
    reflection: Annotated[
        str | None,
        Field(
            max_length=20_000,
            description="What to do differently next time, one lesson per line; omit if none.",
        ),
    ] = None,
) -> dict[str, Any]:
    nous, _ = caller()
    done = await nous.end_session(session_id, reflection=reflection)
    episode = done.episode
    return {
        "session_id": session_id,
        "turns": done.session.turn_count,
        "ended_now": done.ended_now,
        "ended_at": iso(done.session.ended_at),
        "episode": None
        if episode is None
        else {
            **dated(episode),
            "title": episode.title,
            "active": episode.active,
            "ended_at": iso(episode.ended_at),
            "summary": episode.summary,
        },
        "lessons": [{**dated(f.memory), "status": f.status.value} for f in done.facts],
    }


async def remember(
    ctx: Context,
    content: Annotated[
        str,
        Field(min_length=1, max_length=100_000, description="The fact, as one self-contained sentence."),
    ],
    subject: Annotated[
        str | None, Field(max_length=500, description="Who or what it is about (e.g. a person's name).")
    ] = None,
    category: Annotated[FactCategoryName | None, Field(description="What kind of fact it is.")] = None,
    session_id: OptionalSessionId = None,
    user_id: UserId = None,
    metadata: Annotated[
        MetadataObject | None,
        Field(description='Labels to filter on later with recall\'s `where`, e.g. {"project": "apollo"}.'),
    ] = None,
) -> dict[str, Any]:
    nous, _ = caller()
    result = await nous.learn(
        content,
        subject=subject,
        category=category,
        user_id=user_id,
        session_id=session_id,
        metadata=metadata,
    )
    return {
        **dated(result.memory),
        "status": result.status.value,
        "existing_id": result.existing_id,
        "superseded_id": result.superseded_id,
        "warnings": result.warnings,
    }


async def recall(
    ctx: Context,
    query: Annotated[
        str,
        Field(min_length=1, max_length=10_000, description="What to look for, as a question or keywords."),
    ],
    limit: Limit = 10,
    types: Annotated[
        list[MemoryKindName] | None,
        Field(description="Only these kinds of memory; omit for all."),
    ] = None,
    min_score: Annotated[
        float | None,
        Field(ge=0.0, le=1.0, description="Leave out results less relevant than this (0-1); omit for 0.03."),
    ] = None,
    session_id: Annotated[
        str | None,
        Field(
            max_length=200,
            description="The conversation asking (the session_id given to `context`), to rank by "
            "what it is about; omit outside a conversation.",
        ),
        BeforeValidator(_blank_is_none),  # "" is no conversation
        SessionRef(),
    ] = None,
    since: Annotated[
        datetime | None,
        Field(description="Only memories from this time on (ISO 8601, e.g. 2026-03-01T00:00:00Z)."),
    ] = None,
    until: Annotated[
        datetime | None,
        Field(description="Only memories before this time (ISO 8601)."),
    ] = None,
    user_id: UserId = None,
    where: Annotated[
        WhereObject | None,
        Field(
            description='Only memories whose metadata matches: {"project": "apollo"}, '
            '{"project": {"in": ["a", "b"]}}, {"reviewed": {"exists": true}}, {"priority": {"gte": 2}}.'
        ),
    ] = None,
    cover: Annotated[
        bool | None,
        Field(
            description="true: strong results spread over time, one per stretch, oldest first (for "
            "'in what order...', 'summarise how...', 'what have we tried so far'); omit to decide from "
            "the question's wording; false: the best few."
        ),
    ] = None,
) -> list[dict[str, Any]]:
    nous, _ = caller()
    hits = await nous.recall(
        query,
        cover=cover,
        limit=limit,
        kinds=types,
        user_id=user_id,
        min_score=min_score,
        since=since,
        until=until,
        in_session=session_id,
        where=where,
    )
    return [h.brief() for h in hits]


async def recall_recent(
    ctx: Context,
    limit: Limit = 10,
    hours: Annotated[
        float | None,
        Field(gt=0, le=24 * 3650, description="How far back to look, in hours; omit for 48."),
    ] = None,
    types: Annotated[
        list[MemoryKindName] | None,
        Field(description="Which kinds of memory; omit for episodes."),
    ] = None,
    user_id: UserId = None,
) -> list[dict[str, Any]]:
    nous, _ = caller()
    found = await nous.recall_recent(limit=limit, hours=hours, kinds=types or ("episode",), user_id=user_id)
    return [
        {**dated(m), "title": getattr(m, "title", None), "summary": getattr(m, "summary", None)}
        for m in found
    ]


async def timeline(
    ctx: Context,
    topic: Annotated[
        str,
        Field(
            min_length=1, max_length=10_000, description="The topic or question, e.g. 'the flaky CI test'."
        ),
    ],
    threads: Annotated[int, Field(ge=1, le=5, description="How many matching threads (1-5).")] = 1,
    user_id: UserId = None,
) -> list[dict[str, Any]]:
    nous, _ = caller()
    found = await nous.threads(user_id=user_id, query=topic, limit=threads)
    out = []
    for match in found:
        thread = await nous.thread(match.id)
        members = thread.members or []
        shown = spread(members, TIMELINE_LINES)
        out.append(
            {
                "thread": thread.label,
                "score": match.score,
                "lines": [
                    f"{m.occurred_at:%Y-%m-%d %H:%M} [{m.kind.value}] "
                    + _clip(f"{m.speaker}: {m.content}" if m.speaker else m.content, TIMELINE_LINE_CHARS)
                    for m in shown
                ],
                "omitted": len(members) - len(shown),
            }
        )
    return out


TIMELINE_LINES = 40  # lines per thread: a long thread is sampled evenly, its first and last kept
TIMELINE_LINE_CHARS = 300  # a line's text, on one line


def _clip(text: str, chars: int) -> str:
    """``text`` on one line, cut to ``chars`` characters."""
    return clip(" ".join(text.split()), chars)


async def record_decision(
    ctx: Context,
    description: Annotated[
        str, Field(min_length=1, max_length=100_000, description="What was decided, as one sentence.")
    ],
    confidence: Confidence = 0.5,
    category: Annotated[
        DecisionCategoryName | None, Field(description="What area the decision is in.")
    ] = None,
    stakes: Annotated[StakesName, Field(description="How much depends on it.")] = "medium",
    context: Annotated[
        str | None,
        Field(max_length=100_000, description="The situation it was made in: the problem, the options."),
    ] = None,
    reasons: Annotated[
        list[ReasonIn],
        Field(max_length=50, description="Why, as typed reasons: [{type, text}]."),
    ] = [],  # noqa: B006
    session_id: OptionalSessionId = None,
    user_id: UserId = None,
) -> dict[str, Any]:
    nous, _ = caller()
    decision = await nous.record_decision(
        description,
        confidence=confidence,
        category=category,
        stakes=stakes,
        context=context,
        reasons=[r.model_dump() for r in reasons],
        user_id=user_id,
        session_id=session_id,
    )
    return {
        **dated(decision),
        "confidence": decision.confidence,
        "category": decision.category,
        "stakes": decision.stakes.value,
        "reasons": [r.model_dump(mode="json") for r in decision.reasons],
        "quality": decision.quality,
        "flags": decision.flags,
    }


async def check_similar(
    ctx: Context,
    content: Annotated[str, Field(min_length=1, max_length=100_000, description="The text to compare.")],
    type: Annotated[MemoryKindName, Field(description="The kind of memory it would be stored as.")] = "fact",
    user_id: UserId = None,
) -> dict[str, Any]:
    nous, _ = caller()
    found = await nous.check_similar(content, type, user_id=user_id)
    matches = []
    for m in found.matches:
        memory = await nous.get(m.id)
        matches.append(
            {
                **dated(memory),
                "similarity": m.similarity,
                "tier": m.tier.value,
                "lifecycle": m.lifecycle.value,
                "conflict": m.conflict,
            }
        )
    return {"recommendation": found.recommendation.value, "matches": matches}


async def check_action(
    ctx: Context,
    action: Annotated[
        str,
        Field(
            min_length=1,
            max_length=100_000,
            description="The action you plan, in words or as the command.",
        ),
    ],
    session_id: OptionalSessionId = None,
    user_id: UserId = None,
) -> dict[str, Any]:
    nous, _ = caller()
    verdict = await nous.check_action(action, session_id=session_id, user_id=user_id)
    return {
        "decision": verdict.decision.value,
        "reasons": verdict.reasons,
        "warnings": verdict.warnings,
        "censors": [
            {
                **dated(m.censor),
                "pattern": m.censor.trigger_pattern,
                "action": m.action.value,
                "how": m.how,
                "reason": m.censor.reason or m.reason,
                "escalated": m.escalated,
            }
            for m in verdict.matches
        ],
    }


async def create_censor(
    ctx: Context,
    pattern: Annotated[
        str,
        Field(
            min_length=1,
            max_length=2000,
            description="What the censor catches: a case-insensitive regular expression matched "
            r"against the action's text (e.g. DROP\s+TABLE); actions close in meaning also fire.",
        ),
    ],
    reason: Annotated[
        str,
        Field(min_length=1, max_length=5000, description="Why the action is refused, shown when it fires."),
    ],
    action: Annotated[
        CensorActionName,
        Field(description=f"What happens when it fires: {censor_actions_text()}."),
    ] = "warn",
) -> dict[str, Any]:
    nous, who = caller()
    # Censors bind every user of the agent, so only the agent's key sets them.
    who.require_agent_key("a censor (the agent's shared memory)")
    result = await nous.add_censor(pattern, action=action, reason=reason)
    return {**dated(result.memory), "status": result.status.value, "existing_id": result.existing_id}


async def forget(
    ctx: Context,
    memory_id: Annotated[
        str, Field(min_length=1, max_length=200, description="The memory's id."), MemoryRef("owned")
    ],
) -> dict[str, Any]:
    nous, _ = caller()
    memory = await nous.forget(memory_id)
    return {**dated(memory), "active": memory.active}


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        turn_context,
        name="context",
        title="Context for this turn",
        annotations=WRITE,
        description="Call at the start of every turn, with the user's message, before you answer. "
        "Returns what you should know for it (identity, rules, relevant memories with their dates, "
        "recent conversations) within a token budget, and records the message. The first call "
        "with a new session_id starts a conversation; after answering, call `reply`.",
    ),
    ToolSpec(
        reply,
        title="Record your reply",
        name="reply",
        annotations=WRITE,
        description="Call after you answered the user's message given to `context`, with your answer. "
        "Stores the exchange in the conversation, so it is remembered and summarised; list the "
        "tools you used and the ids of decisions and facts you stored during the turn.",
    ),
    ToolSpec(
        end_session,
        title="End the conversation",
        name="end_session",
        annotations=ONCE,
        description="Call when the conversation is over (the user said goodbye or the task is done). "
        "Closes it: a conversation that mattered becomes an episode that is summarised and "
        "recalled later (a single short exchange is not kept: its episode comes back with active "
        "false); each line of reflection is kept as a lesson. Ending twice changes nothing.",
    ),
    ToolSpec(
        remember,
        title="Remember a fact",
        name="remember",
        annotations=WRITE,
        description="Store a lasting fact: a preference, a person, a plan, a rule, a technical detail. "
        "It is checked first: a duplicate confirms the existing fact (status duplicate, existing_id), "
        "a changed fact replaces the old one.",
    ),
    ToolSpec(
        recall,
        title="Search memory",
        name="recall",
        annotations=READ,
        description="Search memory: facts, decisions, procedures, censors, episodes and conversation "
        "turns. Each result has its type, a relevance score from 0 to 1, its date, and whether it "
        "is current (false: a newer memory replaced it). Results below min_score are left out, so "
        "a question nothing answers gets an empty list.",
    ),
    ToolSpec(
        recall_recent,
        title="Recent memories",
        name="recall_recent",
        annotations=READ,
        description="The most recent memories by time, whatever their topic: by default the "
        "conversations (episodes) of the last 48 hours, newest first.",
    ),
    ToolSpec(
        timeline,
        title="Topic timeline",
        name="timeline",
        annotations=READ,
        description="The story of one topic across conversations, in time order: the topic "
        "thread(s) best matching the topic or question, each as dated lines (date, kind of memory, "
        "who said it, text), oldest first; a long thread is sampled evenly (omitted: how many lines "
        "were left out). For questions about an order, a change over time or what was tried so far; "
        "use `recall` for one fact.",
    ),
    ToolSpec(
        record_decision,
        title="Record a decision",
        name="record_decision",
        annotations=WRITE,
        description="Record a decision you make, with your confidence, its stakes and typed reasons, "
        "so its outcome can be reviewed and your confidence calibrated later. A decision the "
        "guardrails refuse (e.g. high stakes with no reason) is a tool error and is not stored.",
    ),
    ToolSpec(
        check_similar,
        title="Check before storing",
        name="check_similar",
        annotations=READ,
        description="What storing this text would find, without storing anything: the close "
        "memories (type, date, similarity, tier) and a recommendation (duplicate_found, "
        "similar_found or unique). Use before `remember` when unsure whether it is known.",
    ),
    ToolSpec(
        check_action,
        title="Check an action",
        name="check_action",
        annotations=WRITE,
        description="Before a risky or irreversible action (deleting, deploying, sending, paying), "
        "check it against the censors (the agent's and the user's): the decision is allow, warn or block, with the "
        "censors that fired and why. Do not take a blocked action. Each firing is counted, and a "
        "warning is shown in the conversation's next `context`.",
    ),
    ToolSpec(
        create_censor,
        title="Add a censor",
        name="create_censor",
        annotations=WRITE,
        description="Add a rule about what not to do: an action matching the pattern is warned "
        "about or blocked by `check_action` from now on. Use when the user says never to do "
        "something, or after a mistake that must not happen again. For the agent's key.",
    ),
    ToolSpec(
        forget,
        title="Forget a memory",
        name="forget",
        annotations=REMOVE,
        description="Forget a memory by its id (from `recall` or `remember`): it is no longer "
        "recalled. Nothing is deleted for good; the store's owner can restore it.",
    ),
)
