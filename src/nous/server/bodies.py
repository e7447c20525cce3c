"""What every request body of the API shares: strict types, no unknown fields, ISO times."""

import re
from datetime import datetime
from enum import Enum
from typing import Annotated, Any

from fastapi import Path, Query
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from nous.models import ReasonType
from nous.models.metadata import (
    METADATA_DOC,
    METADATA_SCHEMA,
    WHERE_DOC,
    WHERE_SCHEMA,
    check_metadata,
    parse_where,
)
from nous.server.scope import MemoryRef, SessionRef, UserRef

ISO_DATE = re.compile(r"\s*\d{4}-\d{2}-\d{2}")


def _iso_only(value: Any) -> Any:
    """A time in a request is an ISO 8601 string: a bare number, or a string of digits (which
    pydantic would read as a Unix timestamp, "0" as 1970), is refused."""
    if isinstance(value, bool | int | float) or (isinstance(value, str) and not ISO_DATE.match(value)):
        raise ValueError("expected an ISO 8601 date-time string, e.g. 2026-03-02T09:15:00Z")
    return value


IsoDatetime = Annotated[datetime, BeforeValidator(_iso_only), Field(strict=False)]


def _integral(value: Any) -> Any:
    """JSON Schema's integer includes 1.0: a float with no fraction is that integer."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class StrictBody(BaseModel):
    """A request body: unknown fields and values of the wrong JSON type are refused, not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)

    def arguments(self, **renamed: str) -> dict[str, Any]:
        """The body as keyword arguments of the ``Nous`` method it calls: each field under its
        own name, or the parameter ``renamed`` gives it (``arguments(types="kinds")``), an enum
        as its value. A field added to the body reaches the method with no change to its route."""
        return {
            renamed.get(name, name): value.value if isinstance(value, Enum) else value
            for name, value in ((name, getattr(self, name)) for name in type(self).model_fields)
        }


# What a turn's or a preview's ``budget`` does, said once for every route that takes one.
BUDGET_DOC = (
    "Total token budget: the sections with something to show share all of it (default: the frame's "
    "own, each section within its ceiling)."
)
# An enum field of a strict body takes the enum's JSON string value: ``Annotated[Kind, LAX]``.
LAX = Field(strict=False)


# Text the engine stores holds no control characters but tab, newline and carriage return (it
# answers 422 otherwise): the schema says so, so a client or a fuzzer knows before sending.
CLEAN = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*$"
# ... and text that must say something has a character that is not white space.
SOLID = (
    r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*$"
)
Clean = Annotated[str, Field(pattern=CLEAN)]
Solid = Annotated[str, Field(pattern=SOLID)]
# A path id: something not blank.
PathId = Annotated[str, Path(pattern=SOLID, max_length=1000)]
# A session id (the engine keeps up to 200 characters), in a path or a body.
SessionPath = Annotated[str, Path(pattern=SOLID, max_length=200)]
SessionId = Annotated[str, Field(pattern=SOLID, max_length=200)]
# A body's user and session fields, with their scope (``nous.server.scope.apply_scope`` resolves
# the acting user and builds the caller's stored session id before a handler sees them).
ActingUser = Annotated[Clean | None, UserRef()]
OwnSession = Annotated[SessionId | None, SessionRef()]
# A path's memory id, with its scope: one the caller sees, or one it may change (404 for another
# agent's or user's, 403 for a user-bound key and the agent's shared memory), checked before the
# handler runs; and a path's session id, which becomes the caller's stored one.
VisibleId = Annotated[PathId, MemoryRef("visible")]
OwnedId = Annotated[PathId, MemoryRef("owned")]
OwnSessionPath = Annotated[SessionPath, SessionRef()]
# A user id in a path (the engine keeps up to 200 characters).
UserPath = Annotated[str, Path(pattern=SOLID, max_length=200)]


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    try:
        return check_metadata(value)
    except ValueError as exc:
        raise PydanticCustomError("invalid_metadata", str(exc)) from None


def _where(value: dict[str, Any]) -> dict[str, Any]:
    try:
        parse_where(value)
    except ValueError as exc:  # InvalidInputError: its field names the key at fault
        field = getattr(exc, "field", None) or "where"
        raise PydanticCustomError("invalid_where", f"{field}: {exc}") from None
    return value


# A memory's metadata, and a filter on it (``nous.models.metadata``): the checked values (an MCP
# tool describes them in its own words), and the body fields.
MetadataObject = Annotated[
    dict[str, Any], AfterValidator(_metadata), Field(json_schema_extra=METADATA_SCHEMA)
]
WhereObject = Annotated[dict[str, Any], AfterValidator(_where), Field(json_schema_extra=WHERE_SCHEMA)]
Metadata = Annotated[MetadataObject, Field(description=METADATA_DOC)]
Where = Annotated[WhereObject, Field(description=WHERE_DOC)]
# A page cursor, as ``next_cursor`` gave it.
Cursor = Annotated[
    str | None, Query(pattern=r"^[0-9]{1,9}$", description="`next_cursor` of the page before.")
]


class ReasonIn(StrictBody):
    """One typed reason behind a decision."""

    type: Annotated[ReasonType, LAX]
    text: str = Field(min_length=1, max_length=5000, pattern=SOLID)
