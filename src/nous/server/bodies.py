"""What every request body of the API shares: strict types, no unknown fields, ISO times."""

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


def _iso_only(value: Any) -> Any:
    """A time in a request is an ISO 8601 string (a bare number is not taken as a timestamp)."""
    if isinstance(value, bool | int | float):
        raise ValueError("expected an ISO 8601 date-time string")
    return value


IsoDatetime = Annotated[datetime, BeforeValidator(_iso_only), Field(strict=False)]


class StrictBody(BaseModel):
    """A request body: unknown fields and values of the wrong JSON type are refused, not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)
