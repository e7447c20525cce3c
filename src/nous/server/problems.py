"""One problem-details vocabulary (RFC 9457) for every error the REST API answers.

``title`` is the status's standard reason phrase (RFC 9110 wording, one casing), ``code`` the
machine-readable cause, ``detail`` the sentence for a person, and ``field`` the request field at
fault, named as the client sent it (the query parameter or body key, never an engine argument),
and ``request_id`` the id the response carries in ``X-Request-Id`` (the server log's key).
"""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from nous.errors import InvalidInputError
from nous.server import request_ids

PROBLEM = "application/problem+json"

TITLES: dict[int, str] = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    413: "Content Too Large",
    422: "Unprocessable Content",
    502: "Bad Gateway",
    503: "Service Unavailable",
}

_MEANING: dict[int, str] = {
    401: "No valid API key (send `Authorization: Bearer nous_...`)",
    403: "The key may not do this (an admin key, or a user-bound key asking for the agent's data)",
    404: "No such memory, session or job for this key's agent",
    408: "The request body did not arrive in time",
    409: "Conflicts with the current state",
    413: "Request body too large",
    422: "Invalid request: a field (named in `field`) is missing, of the wrong type or out of range, or the body is not JSON",
    503: "The store or a provider failed; nothing was written",
}


class ProblemDetail(BaseModel):
    """RFC 9457 problem details."""

    type: str = "about:blank"
    title: str = Field(description="The status's reason phrase, e.g. 'Unprocessable Content'.")
    status: int
    detail: str
    code: str | None = Field(default=None, description="Machine-readable cause, e.g. invalid_input.")
    field: str | None = Field(default=None, description="The request field at fault, as sent.")
    errors: list[dict[str, Any]] | None = None
    request_id: str | None = Field(
        default=None, description="This request's id, as in the X-Request-Id header and the server log."
    )


def title(status: int) -> str:
    return TITLES.get(status, "Error")


def problem(status: int, detail: str, headers: Mapping[str, str] | None = None, **extra: Any) -> JSONResponse:
    """A problem-details answer, with the request's id; a 401 says how to authenticate."""
    rid = request_ids.current()
    body = {"type": "about:blank", "title": title(status), "status": status, "detail": detail}
    body |= {k: v for k, v in {**extra, "request_id": rid}.items() if v is not None}
    all_headers = dict(headers or {})
    if rid is not None:  # also answered from outside the middleware that stamps it (a 5xx)
        all_headers[request_ids.HEADER] = rid
    if status == 401:
        all_headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=all_headers or None)


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries for the error statuses a route can answer."""
    return {
        status: {"description": _MEANING[status], "model": ProblemDetail, "content": {PROBLEM: {}}}
        for status in statuses
    }


@contextmanager
def sent_as(**names: str) -> Iterator[None]:
    """Inside, an engine InvalidInputError about argument ``engine`` is re-worded for the field the
    client sent (``sent_as(kinds="types")``): its ``field`` and its message name the request's key."""
    try:
        yield
    except InvalidInputError as exc:
        if exc.field in names:
            old, new = exc.field, names[exc.field]
            exc.field = new
            exc.args = (str(exc).replace(old, new),)
        raise


# The statuses a route can answer beside its success, by what it takes: every /v1 route needs a
# key (401), refuses an admin key (403) and answers 503 when the store fails; a route with
# parameters or a body can be invalid (422); a body can stall (408) or be too large (413); an id
# in the path can be missing or another agent's (404).
READ = (401, 403, 422, 503)
READ_ID = (401, 403, 404, 422, 503)
WRITE = (401, 403, 408, 413, 422, 503)
WRITE_ID = (401, 403, 404, 408, 413, 422, 503)
