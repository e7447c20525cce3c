"""Small helpers the organs share."""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

from nous.errors import InvalidInputError

E = TypeVar("E", bound=StrEnum)


def enum_value(enum: type[E], value: str | E | None, *, field: str) -> E | None:
    """Parse an enum member from its value, with an error that lists the choices."""
    if value is None or isinstance(value, enum):
        return value
    try:
        return enum(str(value).strip().lower())
    except ValueError:
        choices = ", ".join(m.value for m in enum)
        raise InvalidInputError(f"{field} must be one of: {choices} (got {value!r})", field=field) from None
