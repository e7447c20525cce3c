"""The agent runner behind ``nous chat``: a tool loop on the cognitive layer.

Each turn: ``pre_turn`` picks the frame and assembles the context; the frame decides the tools
offered and its instructions open the system prompt; the model answers or asks for tools; every
tool call is first checked against the agent's censors (a block is refused with its reason, a
warning goes back with the result); memory tools write through the session, so what they store
carries the turn's frame and censors; ``post_turn`` records the reply and the tools used.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from nous.api import Nous
from nous.cognitive import TurnResult, get_frame
from nous.errors import LLMError, NousError
from nous.llm import ChatMessage, LLMProvider, ToolCall, ToolSpec

MAX_STEPS = 6  # model calls per turn (tool rounds), then the turn ends with what it has

TOOLS: dict[str, ToolSpec] = {
    t.name: t
    for t in (
        ToolSpec(
            name="recall",
            description="Search long-term memory (facts, decisions, procedures, past conversations).",
            parameters={
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20},
                },
                "required": ["query"],
            },
        ),
        ToolSpec(
            name="recall_recent",
            description="The most recent conversations, whatever their topic.",
            parameters={
                "type": "object",
                "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 20}},
            },
        ),
        ToolSpec(
            name="learn_fact",
            description="Remember a lasting fact (a preference, a person, a technical detail).",
            parameters={
                "type": "object",
                "properties": {"content": {"type": "string"}, "subject": {"type": "string"}},
                "required": ["content"],
            },
        ),
        ToolSpec(
            name="record_decision",
            description="Record a decision you made, with your confidence (0-1) and reasons.",
            parameters={
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "reasons": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["description", "confidence"],
            },
        ),
        ToolSpec(
            name="create_censor",
            description="Add a rule about what must not be done (a regular expression over planned actions).",
            parameters={
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "reason": {"type": "string"},
                    "action": {"type": "string", "enum": ["warn", "block"]},
                },
                "required": ["pattern", "reason"],
            },
        ),
    )
}
# A frame's tool names (cognitive/frames.py) mapped to the runner's tools.
_FRAME_TOOL = {"recall": "recall", "recall_recent": "recall_recent", "learn_fact": "learn_fact"}
_FRAME_TOOL |= {"record_decision": "record_decision", "check_action": "create_censor"}

SYSTEM = """You are an assistant with long-term memory (Nous). {instructions}

What you know for this turn:
{context}"""


@dataclass
class TurnOutcome:
    """What one turn produced."""

    reply: str
    frame: str
    tools_used: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # tool calls the censors blocked


class AgentRunner:
    """A conversation with a model, one session, memory through the cognitive layer."""

    def __init__(
        self,
        nous: Nous,
        llm: LLMProvider,
        session_id: str,
        *,
        user_id: str | None = None,
        actor: str = "api",
    ) -> None:
        """``actor`` signs what the conversation writes (turns, facts, decisions, censors)."""
        if not llm.available:
            raise LLMError(
                "no language model is configured: set NOUS_LLM_PROVIDER=openai (with NOUS_LLM_API_BASE, "
                "e.g. http://localhost:11434/v1 for Ollama, and NOUS_LLM_MODEL) or anthropic (with NOUS_LLM_API_KEY)"
            )
        self.nous, self.llm, self.session_id, self.user_id = nous, llm, session_id, user_id
        self.actor = actor
        self.history: list[ChatMessage] = []

    async def turn(
        self, user_text: str, *, on_text: Callable[[str], Awaitable[None]] | None = None
    ) -> TurnOutcome:
        """Answer one user message."""
        ctx = await self.nous.pre_turn(self.session_id, user_text, user_id=self.user_id, actor=self.actor)
        frame = get_frame(ctx.frame)
        offered = [TOOLS[_FRAME_TOOL[t]] for t in frame.tools if t in _FRAME_TOOL]
        messages = [
            ChatMessage(
                role="system", content=SYSTEM.format(instructions=frame.instructions, context=ctx.text)
            ),
            *self.history[-12:],
            ChatMessage(role="user", content=user_text),
        ]
        outcome = TurnOutcome(reply="", frame=ctx.frame)
        for _ in range(MAX_STEPS):
            answer = await self.llm.complete(
                messages, max_tokens=1024, tools=offered or None, on_text=on_text
            )
            if not answer.tool_calls:
                outcome.reply = answer.text
                break
            messages.append(ChatMessage(role="assistant", content=answer.text, tool_calls=answer.tool_calls))
            for call in answer.tool_calls:
                result = await self._run_tool(call, {t.name for t in offered}, outcome)
                messages.append(ChatMessage(role="tool", content=result, tool_call_id=call.id))
        else:
            outcome.reply = answer.text or "(stopped after too many tool calls)"
        self.history += [
            ChatMessage(role="user", content=user_text),
            ChatMessage(role="assistant", content=outcome.reply),
        ]
        await self.nous.post_turn(
            self.session_id,
            TurnResult(reply=outcome.reply or "(no reply)", tools_used=outcome.tools_used),
            actor=self.actor,
        )
        return outcome

    async def _run_tool(self, call: ToolCall, offered: set[str], outcome: TurnOutcome) -> str:
        """Check the call against the censors, run it, and say what happened (as JSON for the model)."""
        if call.name not in offered:
            return json.dumps({"error": f"tool {call.name!r} is not available in this frame"})
        planned = f"{call.name} {json.dumps(call.arguments, ensure_ascii=False)}"
        verdict = await self.nous.check_action(planned, session_id=self.session_id, actor=self.actor)
        if verdict.decision == "block":
            outcome.refused.append(call.name)
            return json.dumps({"refused": True, "reasons": [m.reason for m in verdict.matches]})
        try:
            result = await self._execute(call)
        except NousError as exc:
            return json.dumps({"error": str(exc)})
        outcome.tools_used.append(call.name)
        if verdict.decision == "warn":
            result["warning"] = [m.reason for m in verdict.matches]
        return json.dumps(result, ensure_ascii=False, default=str)

    async def _execute(self, call: ToolCall) -> dict[str, Any]:
        a, n, session = call.arguments, self.nous, self.session_id
        if call.name == "recall":
            hits = await n.recall(
                str(a.get("query", "")),
                limit=int(a.get("limit", 8)),
                user_id=self.user_id,
                in_session=session,
            )
            return {"results": [h.brief() for h in hits]}
        if call.name == "recall_recent":
            found = await n.recall_recent(limit=int(a.get("limit", 5)), user_id=self.user_id)
            return {
                "results": [
                    {"id": m.id, "content": m.content, "at": m.occurred_at.isoformat()} for m in found
                ]
            }
        if call.name == "learn_fact":
            written = await n.learn(
                str(a.get("content", "")),
                subject=a.get("subject"),
                session_id=session,
                user_id=self.user_id,
                actor=self.actor,
            )
            return {"id": written.memory.id, "status": written.status.value}
        if call.name == "record_decision":
            reasons = [{"type": "analysis", "text": str(r)} for r in a.get("reasons") or []]
            decision = await n.record_decision(
                str(a.get("description", "")),
                confidence=float(a.get("confidence", 0.5)),
                reasons=reasons,
                session_id=session,
                actor=self.actor,
            )
            return {"id": decision.id, "flags": decision.flags}
        if call.name == "create_censor":
            made = await n.add_censor(
                str(a.get("pattern", "")),
                action=str(a.get("action", "warn")),
                reason=str(a.get("reason", "")),
                actor=self.actor,
            )
            return {"id": made.memory.id, "status": made.status.value}
        return {"error": f"unknown tool {call.name!r}"}
