"""What every request body of the API shares: strict types, no unknown fields, ISO times."""

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from nous.models import ReasonType


def _iso_only(value: Any) -> Any:
    """A time in a request is an ISO 8601 string (a bare number is not taken as a timestamp)."""
    if isinstance(value, bool | int | float):
        raise ValueError("expected an ISO 8601 date-time string")
    return value


IsoDatetime = Annotated[datetime, BeforeValidator(_iso_only), Field(strict=False)]


class StrictBody(BaseModel):
    """A request body: unknown fields and values of the wrong JSON type are refused, not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)


# An enum field of a strict body takes the enum's JSON string value: ``Annotated[Kind, LAX]``.
LAX = Field(strict=False)


class ReasonIn(StrictBody):
    """One typed reason behind a decision."""

    type: Annotated[ReasonType, LAX]
    text: str = Field(min_length=1, max_length=5000)
