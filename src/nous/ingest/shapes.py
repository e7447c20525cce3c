"""Which shape a conversation file has, and the chat-log shapes turned into the native one.

Accepted: the rows of ``SHAPES`` (``ACCEPTED`` lists them in one line, for errors; docs/rest.md
lists the same, and tests/test_ingest_rest.py keeps the three in step):

- native: ``{"sessions": [{"id", "started_at", "messages": [...]}]}`` (``nous.ingest.formats``);
- messages: ``{"messages": [{"role", "content", "name"?}]}`` (an OpenAI-style chat log, the
  package's sample conversation), a bare list of such messages, or a list of such objects (one
  session each);
- LoCoMo: ``{"conversation": {"session_1": [...], ...}}`` or that inner object alone, or a list
  of them.

A chat log's instructions and tool traffic are not conversation: ``system``, ``developer`` and
``tool`` messages, and an assistant's tool call without text, are left out. OpenAI content parts
(``[{"type": "text", "text": ...}]``) are joined; a message with no text otherwise is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from nous.errors import InvalidInputError

Shape = Literal["native", "messages", "locomo"]


@dataclass(frozen=True)
class ConversationShape:
    """One accepted shape: the format it is read as, how errors and docs name it, and a small
    conversation of that shape (an example in the OpenAPI document and the tests)."""

    format: Shape
    named: str
    example: Any


_TURN = {"role": "user", "content": "I moved to Porto last spring."}
_REPLY = {"role": "assistant", "content": "Porto is lovely. How is the new flat?"}
_LOCOMO = {
    "speaker_a": "Ana",
    "speaker_b": "Rui",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I moved to Porto last spring."},
        {"speaker": "Rui", "dia_id": "D1:2", "text": "Porto is lovely. How is the new flat?"},
    ],
}
SHAPES: tuple[ConversationShape, ...] = (
    ConversationShape(
        "native",
        '{"sessions": [{"messages": [...]}]}',
        {"sessions": [{"id": "s1", "started_at": "2024-05-01T10:00:00Z", "messages": [_TURN, _REPLY]}]},
    ),
    ConversationShape("messages", '{"messages": [{"role", "content"}]}', {"messages": [_TURN, _REPLY]}),
    ConversationShape("messages", 'a list of messages [{"role", "content"}]', [_TURN, _REPLY]),
    ConversationShape(
        "messages",
        'a list of chats [{"messages": [...]}]',
        [{"id": "first", "messages": [_TURN]}, {"id": "second", "messages": [_REPLY]}],
    ),
    ConversationShape(
        "locomo", 'a LoCoMo sample {"conversation": {"session_1": [...]}}', {"conversation": _LOCOMO}
    ),
    ConversationShape("locomo", 'a LoCoMo conversation {"session_1": [...]}', _LOCOMO),
    ConversationShape(
        "locomo",
        "a list of LoCoMo samples",
        [{"sample_id": "a", "conversation": _LOCOMO}, {"sample_id": "b", "conversation": _LOCOMO}],
    ),
)
ACCEPTED = "accepted: " + "; ".join(shape.named for shape in SHAPES)
SKIPPED_ROLES = frozenset({"system", "developer", "tool", "function"})
_LOCOMO_KEY = re.compile(r"^session_\d+$")


def refused(problem: str) -> InvalidInputError:
    """A file whose shape is not one of the accepted ones: what was wrong, then the shapes."""
    return InvalidInputError(f"{problem}; {ACCEPTED}")


def _is_locomo(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    inner = item.get("conversation", item)
    return isinstance(inner, dict) and any(_LOCOMO_KEY.match(k) for k in inner)


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and "content" in item and ("role" in item or "name" in item)


def _is_chat(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("messages"), list) and "sessions" not in item


def _kind(value: Any) -> str:
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)


def detect_shape(data: Any) -> Shape:
    """The shape of a decoded conversation file; an InvalidInputError (with ``ACCEPTED``) when it
    is none of them."""
    if isinstance(data, dict):
        if "sessions" in data:
            return "native"
        if "messages" in data:
            if not isinstance(data["messages"], list):
                raise refused(f'"messages" is {_kind(data["messages"])}, not a list')
            return "messages"
        if _is_locomo(data):
            return "locomo"
        keys = ", ".join(list(data)[:5]) or "none"
        raise refused(f"an object with no sessions, messages or LoCoMo session_N keys (keys: {keys})")
    if isinstance(data, list):
        if not data:
            raise refused("an empty list")
        for test, shape in ((_is_message, "messages"), (_is_chat, "messages"), (_is_locomo, "locomo")):
            if test(data[0]):
                bad = next((i for i, item in enumerate(data) if not test(item)), None)
                if bad is not None:
                    raise refused(f"item [{bad}] of the list is not like item [0]")
                return shape  # type: ignore[return-value]
        raise refused("a list whose first item is not a message, a chat or a LoCoMo sample")
    raise refused(f"the top level is {_kind(data)}")


def _text(content: Any, where: str) -> str | None:
    """A message's text: a string, or the text parts of an OpenAI content list joined."""
    if isinstance(content, str):
        return content
    if content is None:
        return None
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str)) or None
    raise InvalidInputError(f"{where}.content: expected text or a list of content parts", field=where)


def _session(messages: list[Any], where: str, session_id: str, started_at: Any) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        m_where = f"{where}[{i}]"
        if not isinstance(msg, dict):
            raise InvalidInputError(f"{m_where}: expected an object with role and content", field=m_where)
        role = msg.get("role", "user")
        if not isinstance(role, str) or not role.strip():
            raise InvalidInputError(f"{m_where}.role: expected a non-empty string", field=m_where)
        if role in SKIPPED_ROLES:
            continue
        text = _text(msg.get("content"), m_where)
        if text is None and (msg.get("tool_calls") or msg.get("function_call")):
            continue  # an assistant's tool call: no words to remember
        if text is None or not text.strip():
            raise InvalidInputError(f"{m_where}.content: empty text", field=m_where)
        kept: dict[str, Any] = {"role": role, "content": text}
        for key in ("name", "occurred_at"):
            if msg.get(key) is not None:
                kept[key] = msg[key]
        out.append(kept)
    if not out:
        raise InvalidInputError(f"{where}: no user or assistant message with text", field=where)
    session: dict[str, Any] = {"id": session_id, "messages": out}
    if started_at is not None:
        session["started_at"] = started_at
    return session


def messages_to_native(data: Any) -> dict[str, Any]:
    """A chat log of shape ``messages`` as a native conversation: one session per chat."""
    if isinstance(data, dict):
        chats, prefix = [data], None
    elif _is_message(data[0]):
        chats, prefix = [{"messages": data}], None
    else:
        chats, prefix = data, ""
    sessions = []
    for n, chat in enumerate(chats):
        where = "messages" if prefix is None else f"[{n}].messages"
        own_id = chat.get("id")
        session_id = str(own_id) if isinstance(own_id, str | int) and prefix is not None else f"s{n + 1}"
        sessions.append(_session(chat["messages"], where, session_id, chat.get("started_at")))
    native: dict[str, Any] = {"sessions": sessions}
    if isinstance(data, dict):
        if isinstance(data.get("id"), str) and data["id"].strip():
            native["id"] = data["id"]
        if data.get("participants") is not None:
            native["participants"] = data["participants"]
    return native
