"""Conversation file formats: Nous's native JSON, chat logs of messages (``nous.ingest.shapes``)
and LoCoMo's.

Native: ``{"sessions": [{"id": "s1", "started_at": "ISO-8601",
"messages": [{"role": "user", "name": "optional", "content": "..."}]}]}``
(optional per message: ``id``, ``occurred_at``; optional top level: ``id``, ``participants``).

Parsing validates the whole file first and names the first bad record, so a bad
file stores nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from nous._time import as_utc
from nous.errors import InvalidInputError
from nous.ingest.shapes import detect_shape, messages_to_native, refused

FORMATS = ("auto", "native", "messages", "locomo")


class ConversationMessage(BaseModel):
    """One turn."""

    id: str
    role: str = "user"
    name: str | None = None
    content: str = Field(min_length=1)
    occurred_at: datetime | None = None


class ConversationSession(BaseModel):
    """A stretch of conversation at one time."""

    id: str
    started_at: datetime | None = None
    messages: list[ConversationMessage]


class Conversation(BaseModel):
    """A multi-session conversation."""

    id: str
    participants: list[str] = Field(default_factory=list)
    sessions: list[ConversationSession]
    source_format: str


_LOCOMO_SESSION = re.compile(r"^session_(\d+)$")
_LOCOMO_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%H:%M on %d %B, %Y")


def _bad(where: str, problem: str) -> InvalidInputError:
    return InvalidInputError(f"{where}: {problem}", field=where)


def _locomo_date(raw: Any, where: str) -> datetime:
    if not isinstance(raw, str):
        raise _bad(where, "missing or non-text date_time")
    text = " ".join(raw.split())
    for fmt in _LOCOMO_DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise _bad(where, f"unrecognised date {raw!r}")


def _parse_locomo(data: dict[str, Any], digest: str) -> Conversation:
    conv = data.get("conversation", data)
    if not isinstance(conv, dict):
        raise _bad("conversation", "expected an object")
    numbers = sorted(int(m.group(1)) for k in conv if (m := _LOCOMO_SESSION.match(k)))
    sessions: list[ConversationSession] = []
    for n in numbers:
        key = f"session_{n}"
        turns = conv[key]
        if not isinstance(turns, list):
            raise _bad(key, "expected a list of turns")
        if not turns:
            continue
        started = _locomo_date(conv.get(f"{key}_date_time"), f"{key}_date_time")
        messages = []
        for i, turn in enumerate(turns):
            where = f"{key}[{i}]"
            if not isinstance(turn, dict):
                raise _bad(where, "expected an object")
            text, speaker, dia_id = turn.get("text"), turn.get("speaker"), turn.get("dia_id")
            if not isinstance(text, str) or not isinstance(speaker, str) or not isinstance(dia_id, str):
                raise _bad(where, "needs text, speaker and dia_id strings")
            caption = turn.get("blip_caption")
            content = text.strip()
            if isinstance(caption, str) and caption.strip():
                content = f"{content} [shares a photo of {caption.strip()}]".strip()
            if not content:
                raise _bad(where, "empty text")
            messages.append(ConversationMessage(id=dia_id, role="user", name=speaker, content=content))
        sessions.append(ConversationSession(id=key, started_at=started, messages=messages))
    if not sessions:
        raise _bad("conversation", "no sessions with turns")
    participants = [p for p in (conv.get("speaker_a"), conv.get("speaker_b")) if isinstance(p, str)]
    conv_id = str(data.get("sample_id") or f"locomo-{digest}")
    return Conversation(id=conv_id, participants=participants, sessions=sessions, source_format="locomo")


def _parse_locomo_list(data: list[Any], digest: str) -> Conversation:
    """Several LoCoMo samples as one conversation: each sample's sessions, ids prefixed by the
    sample's id (``26/session_1``) so they stay apart."""
    sessions: list[ConversationSession] = []
    participants: list[str] = []
    for n, item in enumerate(data):
        if not isinstance(item, dict):
            raise _bad(f"[{n}]", "expected a LoCoMo sample object")
        try:
            one = _parse_locomo(item, f"{digest}-{n}")
        except InvalidInputError as exc:
            raise InvalidInputError(f"[{n}].{exc}", field=f"[{n}]") from None
        sample = str(item.get("sample_id") or n + 1)
        sessions += [s.model_copy(update={"id": f"{sample}/{s.id}"}) for s in one.sessions]
        participants += [p for p in one.participants if p not in participants]
    ids = [s.id for s in sessions]
    if len(set(ids)) != len(ids):
        raise _bad("sample_id", "LoCoMo samples in one file need distinct sample_id values")
    return Conversation(
        id=f"locomo-{digest}", participants=participants, sessions=sessions, source_format="locomo"
    )


def _parse_native(data: dict[str, Any], digest: str) -> Conversation:
    raw_sessions = data.get("sessions")
    if not isinstance(raw_sessions, list) or not raw_sessions:
        raise _bad("sessions", "expected a non-empty list")
    sessions = []
    for s_index, raw in enumerate(raw_sessions):
        where = f"sessions[{s_index}]"
        if not isinstance(raw, dict):
            raise _bad(where, "expected an object")
        messages = raw.get("messages")
        if not isinstance(messages, list):
            raise _bad(f"{where}.messages", "expected a list")
        parsed = []
        for m_index, msg in enumerate(messages):
            m_where = f"{where}.messages[{m_index}]"
            if not isinstance(msg, dict):
                raise _bad(m_where, "expected an object")
            try:
                parsed.append(
                    ConversationMessage.model_validate({"id": f"{raw.get('id', s_index)}:{m_index}", **msg})
                )
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(p) for p in first["loc"])
                raise _bad(m_where, f"{field}: {first['msg']}") from None
            if not parsed[-1].content.strip():  # as in LoCoMo files: a blank turn is no turn
                raise _bad(m_where, "content: empty text")
        try:
            sessions.append(
                ConversationSession(
                    id=str(raw.get("id", f"s{s_index + 1}")),
                    started_at=raw.get("started_at"),
                    messages=parsed,
                )
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            raise _bad(where, f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    ids = [s.id for s in sessions]
    if len(set(ids)) != len(ids):
        raise _bad("sessions", "session ids must be unique")
    participants = data.get("participants") or sorted(
        {m.name for s in sessions for m in s.messages if m.name}
    )
    if not isinstance(participants, list) or not all(isinstance(p, str) for p in participants):
        raise _bad("participants", "expected a list of names")
    return Conversation(
        id=str(data.get("id") or f"conv-{digest}"),
        participants=participants,
        sessions=sessions,
        source_format="native",
    )


def parse_conversation(raw: str | bytes, *, fmt: str = "auto") -> Conversation:
    """Parse a conversation file's text; ``fmt`` is ``auto`` (the shape decides, see
    ``nous.ingest.shapes``), ``native``, ``messages`` or ``locomo``."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        text.encode("utf-8")  # a str given directly may hold lone surrogates
        data = json.loads(text)
        json.dumps(data, ensure_ascii=False).encode("utf-8")  # so may "\ud800" escapes, decoded
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"file is not valid UTF-8: {exc}") from None
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"file is not valid Unicode text: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise InvalidInputError("JSON nested too deeply to be a conversation file") from None
    except ValueError as exc:  # JSON Python will not read, e.g. an integer of over 4,300 digits
        raise InvalidInputError(f"not valid JSON: {exc}") from None
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown format {fmt!r}: use {', '.join(FORMATS)}", field="format")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    shape = detect_shape(data) if fmt == "auto" else fmt
    if shape == "messages":
        if fmt != "auto":
            detect_shape(data)  # a --format messages file still has to be one of its shapes
        conversation = _parse_native(messages_to_native(data), digest)
        conversation.source_format = "messages"
    elif isinstance(data, list) and shape == "locomo":
        conversation = _parse_locomo_list(data, digest)
    elif not isinstance(data, dict):
        raise refused(f"format {fmt} needs a JSON object at the top level, not {type(data).__name__}")
    elif shape == "native":
        conversation = _parse_native(data, digest)
    else:
        conversation = _parse_locomo(data, digest)
    for session in conversation.sessions:
        if session.started_at is not None:
            session.started_at = as_utc(session.started_at)
        for message in session.messages:
            if message.occurred_at is not None:
                message.occurred_at = as_utc(message.occurred_at)
    return conversation
