"""Structured output: ask for JSON, validate it against a pydantic schema, and ask once more
with the validation error if the first answer does not fit. Every call's usage is reported."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from nous.errors import LLMError, LLMOutputError
from nous.llm.base import ChatMessage, Completion, LLMProvider

T = TypeVar("T", bound=BaseModel)
UsageSink = Callable[[Completion | None, bool], Awaitable[None]]
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def parse_json_object(text: str) -> object:
    """The JSON object in a reply, tolerating code fences and prose around it."""
    stripped = _FENCE.sub("", text.strip())
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start < 0 or end <= start:
            raise
        return json.loads(stripped[start : end + 1])


async def complete_structured(
    provider: LLMProvider,
    messages: list[ChatMessage],
    schema: type[T],
    *,
    max_tokens: int = 1024,
    on_call: UsageSink | None = None,
) -> T:
    """The reply parsed as ``schema``; one repair request on invalid JSON or schema errors, then
    LLMOutputError. Transport failures (timeouts, 429, 5xx) raise LLMError at once."""
    conversation = list(messages)
    problem = ""
    for _attempt in range(2):
        try:
            completion = await provider.complete(conversation, max_tokens=max_tokens, json_mode=True)
        except LLMError:
            if on_call is not None:
                await on_call(None, False)
            raise
        try:
            value = schema.model_validate(parse_json_object(completion.text))
        except (json.JSONDecodeError, ValidationError) as exc:
            problem = _describe(exc)
            if on_call is not None:
                await on_call(completion, False)
            conversation += [
                ChatMessage(role="assistant", content=completion.text[:4000]),
                ChatMessage(
                    role="user",
                    content=f"That reply was not usable: {problem}. Answer again with only the JSON "
                    "object, exactly in the requested shape.",
                ),
            ]
            continue
        if on_call is not None:
            await on_call(completion, True)
        return value
    raise LLMOutputError(f"the model's reply did not fit the {schema.__name__} schema twice: {problem}")


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        errors = exc.errors()[:3]
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in errors)
    return f"invalid JSON ({exc})"
