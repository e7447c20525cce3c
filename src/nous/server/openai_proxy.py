"""An OpenAI-compatible memory proxy: ``POST /v1/chat/completions`` and ``GET /v1/models``.

An app written for the OpenAI SDK gets long-term memory by pointing its base URL at ``nous
serve`` and its API key at a Nous key. Each request runs the turn loop for the key's agent:

1. ``pre_turn`` for the last user message (a request that continues a tool loop, whose last
   message is a tool result, previews the context instead: the turn is already open);
2. the context goes in as a system message after the caller's own instructions, and the request
   goes to the configured model (``NOUS_LLM_PROVIDER``), otherwise as sent;
3. every tool call the model makes is checked with ``check_action``: a blocked call is answered
   as the model's refusal (``message.refusal``, ``finish_reason: stop``), the call withheld;
4. the reply is recorded with ``post_turn`` (a reply that asks for tools leaves the turn open).

A request sent with an ``Idempotency-Key`` header is run once: a retry with the same key and body
gets the first answer again and stores nothing more (``nous.server.idempotency``).

The session is the ``X-Nous-Session`` header (default: one per user), the user the
``X-Nous-User`` header or the request's ``user``. Errors are OpenAI's shape with their status:
the upstream's own errors as it sent them, a timeout 504, an unreachable model 502.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from nous.api import Nous
from nous.cognitive import TurnResult
from nous.errors import InvalidInputError, NousError
from nous.heart import ActionDecision
from nous.llm.upstream import Upstream, UpstreamError, error_body, text_of
from nous.server.request_ids import client_message
from nous.server.scope import Caller, SessionRef, UserRef, scoped_value
from nous.storage.base import without_riders

log = logging.getLogger(__name__)
SESSION_HEADER = "X-Nous-Session"
USER_HEADER = "X-Nous-User"
BLOCKED_HEADER = "X-Nous-Blocked"
NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")
MEMORY_NOTE = (
    "Memory (Nous): what you know that bears on the user's message. Each item is dated and may be "
    "out of date; use what helps, and say so when it does not answer.\n\n"
)


# The proxy's routes: their 401 is in OpenAI's error shape, also when answered before the body
# is read (``create_app`` checks the key first).
PATHS = frozenset({"/v1/chat/completions", "/v1/models"})


class ProxyError(Exception):
    """A request the proxy refuses: its status and OpenAI error type, code and parameter."""

    def __init__(
        self, status: int, message: str, kind: str, *, code: str | None = None, param: str | None = None
    ):
        super().__init__(message)
        self.status, self.kind, self.code, self.param = status, kind, code, param


def register(
    app: FastAPI,
    *,
    authenticate: Callable[[Request], Awaitable[Caller | None]],
    nous_for: Callable[[Caller], Nous],
    upstream_of: Callable[[], Upstream | None],
) -> None:
    """Add the proxy's two routes. ``authenticate`` is the request's caller (None: no valid
    agent key), ``upstream_of`` the configured model (None: no model configured)."""

    async def ready(request: Request) -> tuple[Caller, Upstream]:
        who = await authenticate(request)
        if who is None:
            raise _no_key()
        upstream = upstream_of()
        if upstream is None:
            raise ProxyError(
                503,
                "no model is configured: set NOUS_LLM_PROVIDER (openai for any OpenAI-compatible "
                "server, with NOUS_LLM_API_BASE; or anthropic) and restart nous serve",
                "server_error",
                code="model_not_configured",
            )
        return who, upstream

    @app.post("/v1/chat/completions", include_in_schema=False)
    async def chat_completions(request: Request) -> Response:
        try:
            who, upstream = await ready(request)
            body = await _request_body(request)
            nous = nous_for(who)
            # the user and the session are scoped as a REST request's are (``nous.server.scope``)
            sent_user = request.headers.get(USER_HEADER) or _text_field(body, "user")
            user = await scoped_value(nous, who, UserRef(), sent_user)
            name = request.headers.get(SESSION_HEADER) or f"chat-{user or 'default'}"
            if not NAME.match(name):
                raise ProxyError(
                    400, f"{SESSION_HEADER} must be 1 to 200 printable characters", "invalid_request_error"
                )
            session = await scoped_value(nous, who, SessionRef(), name)
            asked, continuing = _last_user_message(body["messages"])
            with without_riders():  # bookkeeping: a request with an Idempotency-Key may run it again
                if continuing:
                    context = await nous.preview_turn(asked, session_id=session, user_id=user)
                else:
                    context = await nous.pre_turn(session, asked, user_id=user)
            sent = {**body, "messages": _with_memory(body["messages"], context.text)}
            headers = {SESSION_HEADER: name}
            turn = _Turn(nous, session, _tools_used(body["messages"]))
            if body.get("stream"):
                opened = upstream.stream(sent)
                chunks = await opened.__aenter__()  # the upstream's refusal is an error status here
                return StreamingResponse(
                    _relay(opened, chunks, turn), media_type="text/event-stream", headers=headers
                )
            answer = await upstream.complete(sent)
            blocked = await turn.guard(answer)
            if blocked:
                headers[BLOCKED_HEADER] = ", ".join(blocked)
            await turn.finish(answer)
            return JSONResponse(answer, headers=headers)
        except (ProxyError, UpstreamError, NousError) as exc:
            return _error(exc)

    @app.get("/v1/models", include_in_schema=False)
    async def models(request: Request) -> Response:
        try:
            _, upstream = await ready(request)
            return JSONResponse(await upstream.models())
        except (ProxyError, UpstreamError, NousError) as exc:
            return _error(exc)


class _Turn:
    """One request's part of the turn loop: checking the model's tool calls, then recording the reply."""

    def __init__(self, nous: Nous, session: str, tools_used: list[str]) -> None:
        self.nous, self.session, self.tools_used = nous, session, tools_used

    async def refusal(self, calls: list[dict[str, Any]]) -> str | None:
        """Why the first blocked call of ``calls`` is refused, or None when every call may run."""
        for call in calls:
            function = call.get("function") or {}
            planned = f"{function.get('name', '')} {function.get('arguments') or '{}'}"
            verdict = await self.nous.check_action(planned, session_id=self.session)
            if verdict.decision == ActionDecision.BLOCK:
                why = "; ".join(verdict.reasons) or "a censor blocks it"
                return f"I can't run {function.get('name', 'that tool')}: {why}."
        return None

    async def guard(self, answer: dict[str, Any]) -> list[str]:
        """Each choice whose tool calls include a blocked one becomes a refusal; the names refused."""
        blocked: list[str] = []
        for choice in answer.get("choices") or []:
            message = choice.get("message") or {}
            calls = message.get("tool_calls") or []
            why = await self.refusal(calls) if calls else None
            if why is not None:
                blocked += [str((c.get("function") or {}).get("name", "")) for c in calls]
                choice["message"] = {"role": "assistant", "content": None, "refusal": why}
                choice["finish_reason"] = "stop"
        return blocked

    async def finish(self, answer: dict[str, Any]) -> None:
        """Record the reply (text or refusal) with ``post_turn``; a reply that calls tools leaves
        the turn open for the request that brings their results."""
        choices = answer.get("choices") or [{}]
        message = choices[0].get("message") or {}
        if message.get("tool_calls"):
            return
        await self.record(text_of(message.get("content")) or str(message.get("refusal") or ""))

    async def record(self, reply: str) -> None:
        if not reply.strip():
            return
        try:
            await self.nous.post_turn(self.session, TurnResult(reply=reply, tools_used=self.tools_used))
        except NousError:  # the caller has its answer; a turn that cannot be recorded is logged
            log.exception("could not record the reply of session %s", self.session)


async def _relay(opened: Any, chunks: AsyncIterator[dict[str, Any]], turn: _Turn) -> AsyncIterator[str]:
    """The upstream's chunks as server-sent events, in order, as it sent them; chunks carrying
    tool calls are held until the calls are complete and checked, then sent, or replaced by a
    refusal. The reply is recorded when the stream ends."""
    text: list[str] = []
    held: list[dict[str, Any]] = []
    calls: dict[int, dict[str, Any]] = {}
    refused: str | None = None
    try:
        async for chunk in chunks:
            choice = (chunk.get("choices") or [{}])[0]
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(str(delta["content"]))
            if delta.get("tool_calls") or (held and not delta.get("content")):
                for piece in delta.get("tool_calls") or []:
                    call = calls.setdefault(
                        int(piece.get("index", 0)), {"function": {"name": "", "arguments": ""}}
                    )
                    function = piece.get("function") or {}
                    call["function"]["name"] += function.get("name") or ""
                    call["function"]["arguments"] += function.get("arguments") or ""
                held.append(chunk)
                if not choice.get("finish_reason"):
                    continue
            if held:
                refused = await turn.refusal([calls[i] for i in sorted(calls)])
                if refused is None:
                    for waiting in held:
                        yield _event(waiting)
                else:
                    yield _event(_refusal_chunk(held[0], refused))
                held = []
                continue
            yield _event(chunk)
        if held:  # the stream ended without a finish reason
            refused = await turn.refusal([calls[i] for i in sorted(calls)])
            for waiting in [_refusal_chunk(held[0], refused)] if refused else held:
                yield _event(waiting)
        # recorded before the end marker: a client may close the connection as soon as it reads it
        if refused is not None or not calls:
            await turn.record(refused or "".join(text))
        yield "data: [DONE]\n\n"
    except UpstreamError as exc:
        yield _event(exc.body)
    finally:
        await opened.__aexit__(None, None, None)


def _refusal_chunk(like: dict[str, Any], why: str) -> dict[str, Any]:
    return {
        **like,
        "choices": [{"index": 0, "delta": {"role": "assistant", "refusal": why}, "finish_reason": "stop"}],
    }


def _no_key() -> ProxyError:
    return ProxyError(
        401,
        "send an agent's Nous API key as the API key (Authorization: Bearer nous_...)",
        "invalid_request_error",
        code="invalid_api_key",
    )


def unauthorized() -> JSONResponse:
    """The 401 of a proxy request without an agent's key, in OpenAI's error shape."""
    return _error(_no_key())


def _event(payload: Any) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


async def _request_body(request: Request) -> dict[str, Any]:
    """The JSON body, checked as far as the proxy reads it: ``messages`` is a non-empty list of
    objects with a role. The rest goes to the model as sent."""
    try:
        body = json.loads(await request.body())
    except ValueError:
        raise ProxyError(400, "the body must be JSON", "invalid_request_error") from None
    except RecursionError:  # the parser's own bound on nesting
        raise ProxyError(400, "the body is nested too deeply", "invalid_request_error") from None
    if not isinstance(body, dict):
        raise ProxyError(400, "the body must be a JSON object", "invalid_request_error")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ProxyError(400, "messages must be a non-empty list", "invalid_request_error", param="messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ProxyError(
                400,
                f"messages[{i}] must be an object with a role",
                "invalid_request_error",
                param=f"messages[{i}]",
            )
    return body


def _text_field(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    return value if isinstance(value, str) and value.strip() else None


def _last_user_message(messages: list[dict[str, Any]]) -> tuple[str, bool]:
    """The last user message's text, and whether the request continues its turn (messages
    follow it: the model's tool calls and their results)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            text = text_of(messages[i].get("content"))
            if not text.strip():
                raise ProxyError(
                    400, f"messages[{i}] has no text", "invalid_request_error", param=f"messages[{i}]"
                )
            return text, i < len(messages) - 1
    raise ProxyError(400, "messages must include a user message", "invalid_request_error", param="messages")


def _with_memory(messages: list[dict[str, Any]], context: str) -> list[dict[str, Any]]:
    """The messages with the memory context as a system message after the caller's leading
    instructions (system or developer messages), so theirs come first."""
    at = 0
    while at < len(messages) and messages[at].get("role") in ("system", "developer"):
        at += 1
    return [*messages[:at], {"role": "system", "content": MEMORY_NOTE + context}, *messages[at:]]


def _tools_used(messages: list[dict[str, Any]]) -> list[str]:
    """The tools the model called since the last user message (their results are in the request)."""
    used: list[str] = []
    for message in reversed(messages):
        if message.get("role") == "user":
            break
        for call in message.get("tool_calls") or []:
            used.append(str((call.get("function") or {}).get("name", "")))
    return list(reversed(used))


def _error(exc: Exception) -> JSONResponse:
    """An error as OpenAI's shape with its status."""
    if isinstance(exc, UpstreamError):
        return JSONResponse(exc.body, status_code=exc.status)
    if isinstance(exc, ProxyError):
        return JSONResponse(
            error_body(str(exc), exc.kind, code=exc.code, param=exc.param), status_code=exc.status
        )
    assert isinstance(exc, NousError)
    param = exc.field if isinstance(exc, InvalidInputError) else None
    return error_response(
        exc.http_status if exc.http_status < 500 else 503, client_message(exc), code=exc.code, param=param
    )


def error_response(
    status: int,
    message: str,
    *,
    code: str | None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """An error the proxy's routes answer themselves, in OpenAI's shape; OpenAI answers a request it
    cannot take with 400, so a 422 is one."""
    status = 400 if status == 422 else status
    kind = "invalid_request_error" if status < 500 else "server_error"
    return JSONResponse(
        error_body(message, kind, code=code, param=param), status_code=status, headers=headers
    )
