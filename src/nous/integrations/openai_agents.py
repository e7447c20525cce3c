"""The OpenAI Agents SDK's conversation memory backed by Nous: ``NousSession`` is a ``Session``.

``Runner.run(agent, text, session=NousSession(nous, "chat-1"))`` keeps the conversation in Nous
(``docs/integrations.md``):

- each user message runs ``pre_turn`` (frame, the user's turn, the session's episode, and the
  context to show the model: ``session.context``); the assistant's answer runs ``post_turn`` once
  the SDK saves a batch that ends with an assistant message (every assistant text and tool name
  since the user message, so the exchange is stored as two turns);
- the SDK's items are kept verbatim, in order, in the metadata of the assistant turn of their
  exchange (``openai_agents_items``: each item's JSON text, within the metadata limits)
  (items before the session's first answer wait in this object until it comes), so
  ``get_items`` returns exactly what was added, in a later process too;
- ``clear_session`` ends the Nous session (its episode closes and the event pipeline summarises
  it) and empties the SDK's history; ``end`` ends it and keeps the history. A later message opens
  the next Nous session of the conversation (``ID~2``, ``ID~3``...), as it does after the
  pipeline ended an idle one, and the history carries on.
"""

from __future__ import annotations

import json
from typing import Any, cast

from agents import TResponseInputItem
from agents.memory import SessionSettings

from nous.cognitive import SessionEnd, TurnContext, TurnResult
from nous.errors import NotFoundError
from nous.integrations._engine import Engine
from nous.models import Memory

ITEMS_KEY = "openai_agents_items"  # a carrier turn's metadata key: its items' JSON texts, in order
# Turns written before metadata existed carry their items as tags instead (read, never written):
ITEM_TAG = "openai-agents:item:"  # + 6-digit position in the carrier turn + ":" + the item's JSON
ASSISTANT_PREFIX = "assistant: "  # how post_turn stores the assistant's turn
MAX_TURNS = 100_000  # the largest page Nous.memories gives


class NousSession:
    """An OpenAI Agents SDK ``Session`` over a ``Nous`` or ``AsyncClient``; ``user_id`` is the
    Nous user the conversation belongs to."""

    session_settings: SessionSettings | None = None

    def __init__(self, memory: Engine, session_id: str, *, user_id: str | None = None) -> None:
        self.engine = memory
        self.session_id = session_id
        self.user_id = user_id
        self.context: TurnContext | None = None  # what pre_turn assembled for the latest message
        self._pending: list[dict[str, Any]] = []  # items no turn carries yet
        self._awaiting_reply = False
        self._replies: list[str] = []
        self._tools: list[str] = []

    # -- the Session protocol ----------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        items = [item for _, carried in await self._carriers() for item in carried] + self._pending
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return [cast(TResponseInputItem, item) for item in items]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        if not items:
            return
        nous_id = self._nous_id(await self._live_generation())
        for raw in items:
            item = as_dict(raw)
            said = user_text(item)
            if said is not None:
                if self._awaiting_reply and self._replies:
                    await self._record_reply(nous_id)  # the previous answer, before the next message
                self.context = await self.engine.pre_turn(nous_id, said, user_id=self.user_id)
                self._awaiting_reply, self._replies, self._tools = True, [], []
            else:
                reply = assistant_text(item)
                if reply:
                    self._replies.append(reply)
                tool = tool_name(item)
                if tool:
                    self._tools.append(tool)
            self._pending.append(item)
        last = as_dict(items[-1])
        if self._awaiting_reply and self._replies and assistant_text(last) is not None:
            await self._record_reply(nous_id)
        await self._carry_pending()

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the latest item from the SDK's history (the Nous turns stay: memory is audited,
        not rewritten)."""
        if self._pending:
            return cast(TResponseInputItem, self._pending.pop())
        for turn, carried in reversed(await self._carriers()):
            if carried:
                await self.engine.update(turn.id, **carrying(turn, carried[:-1]))
                return cast(TResponseInputItem, carried[-1])
        return None

    async def clear_session(self) -> None:
        """End the Nous session (summarised by the event pipeline) and empty the SDK's history."""
        await self.end()
        for turn, carried in await self._carriers():
            if carried:
                await self.engine.update(turn.id, **carrying(turn, []))
        self._pending = []

    # -- beyond the protocol -----------------------------------------------------------------
    async def end(self, reflection: str | None = None) -> SessionEnd | None:
        """End the live Nous session: its episode closes and the event pipeline summarises it;
        each ``reflection`` line becomes a lesson. The SDK's history stays; the next message opens
        the conversation's next Nous session. None if no session was live."""
        nous_id = self._nous_id(await self._live_generation())
        if self._awaiting_reply and self._replies:
            await self._record_reply(nous_id)
        self._awaiting_reply, self._replies, self._tools, self.context = False, [], [], None
        try:
            state = await self.engine.session(nous_id)
        except NotFoundError:
            return None
        if state.ended:
            return None
        return await self.engine.end_session(nous_id, reflection=reflection)

    def _nous_id(self, generation: int) -> str:
        return self.session_id if generation == 1 else f"{self.session_id}~{generation}"

    async def _live_generation(self) -> int:
        """The first of the conversation's Nous sessions that has not ended (or not begun)."""
        generation = 1
        while True:
            try:
                state = await self.engine.session(self._nous_id(generation))
            except NotFoundError:
                return generation
            if not state.ended:
                return generation
            generation += 1

    async def _record_reply(self, nous_id: str) -> None:
        """post_turn with the exchange's answer; its assistant turn carries the pending items."""
        result = TurnResult(reply="\n\n".join(self._replies), tools_used=self._tools)
        self._awaiting_reply, self._replies, self._tools = False, [], []
        await self.engine.post_turn(nous_id, result)
        turns = await self.engine.memories("turn", session_id=nous_id, limit=2)
        carrier = next(t for t in turns if t.content.startswith(ASSISTANT_PREFIX))
        await self.engine.update(carrier.id, **carrying(carrier, carried_items(carrier) + self._pending))
        self._pending = []

    async def _carry_pending(self) -> None:
        """Give items added after the latest answer to that answer's turn, so they persist."""
        if not self._pending:
            return
        carriers = await self._carriers()
        if not carriers:
            return  # the session's first answer will carry them
        turn, carried = carriers[-1]
        await self.engine.update(turn.id, **carrying(turn, carried + self._pending))
        self._pending = []

    async def _carriers(self) -> list[tuple[Memory, list[dict[str, Any]]]]:
        """The conversation's assistant turns that carry items, oldest first, with their items."""
        found: list[tuple[Memory, list[dict[str, Any]]]] = []
        for generation in range(1, await self._live_generation() + 1):
            turns = await self.engine.memories("turn", session_id=self._nous_id(generation), limit=MAX_TURNS)
            for turn in sorted(turns, key=lambda t: (t.occurred_at, t.created_at)):
                if ITEMS_KEY in turn.metadata or any(t.startswith(ITEM_TAG) for t in turn.tags):
                    found.append((turn, carried_items(turn)))
        return found


def as_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    dumped = item.model_dump(exclude_unset=True)  # a pydantic item from the SDK
    assert isinstance(dumped, dict)
    return dumped


def carrying(turn: Memory, items: list[dict[str, Any]]) -> dict[str, Any]:
    """The changes (``update`` keywords) that make ``turn`` carry exactly ``items``: its metadata
    with them (empty once it carries none), its tags without the old item tags."""
    metadata = {k: v for k, v in turn.metadata.items() if k != ITEMS_KEY}
    if items:
        metadata[ITEMS_KEY] = [json.dumps(item, ensure_ascii=False) for item in items]
    return {"metadata": metadata, "tags": [t for t in turn.tags if not t.startswith(ITEM_TAG)]}


def carried_items(turn: Memory) -> list[dict[str, Any]]:
    texts = turn.metadata.get(ITEMS_KEY)
    if isinstance(texts, list):
        return [json.loads(t) for t in texts if isinstance(t, str)]
    tagged = sorted(t.removeprefix(ITEM_TAG) for t in turn.tags if t.startswith(ITEM_TAG))
    return [json.loads(t.split(":", 1)[1]) for t in tagged]


def _text(content: Any, part_types: tuple[str, ...]) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text") or p.get("refusal")
            for p in content
            if isinstance(p, dict) and p.get("type") in part_types
        ]
        return "\n".join(p for p in parts if isinstance(p, str)) or None
    return None


def user_text(item: dict[str, Any]) -> str | None:
    """The text of a user message (None for any other item or a message without text)."""
    if item.get("role") != "user" or item.get("type", "message") != "message":
        return None
    text = _text(item.get("content"), ("input_text",))
    return text if text and text.strip() else None


def assistant_text(item: dict[str, Any]) -> str | None:
    if item.get("role") != "assistant" or item.get("type", "message") != "message":
        return None
    return _text(item.get("content"), ("output_text", "refusal")) or ""


def tool_name(item: dict[str, Any]) -> str | None:
    kind = item.get("type")
    if kind == "function_call":
        name = item.get("name")
        return name if isinstance(name, str) else None
    return kind if isinstance(kind, str) and kind.endswith("_call") else None
