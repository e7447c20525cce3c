"""A memory's metadata (a caller's own JSON object) and the filter language that selects on it.

Limits of a metadata object (docs/rest.md, "Metadata"): at most ``MAX_METADATA_BYTES`` as compact
UTF-8 JSON, ``MAX_TOP_KEYS`` keys at the top level, nesting at most ``MAX_DEPTH`` containers deep
(the object itself is level 1), every key a non-empty string of at most ``MAX_KEY_CHARS``
characters, numbers finite.

A filter (``where``) maps top-level keys to a condition; all must hold:

- ``{"project": "x"}``: equal to a string, number or boolean;
- ``{"project": {"in": ["x", "y"]}}``: equal to one of them;
- ``{"reviewed": {"exists": true}}``: the key is present (``false``: absent);
- ``{"priority": {"gte": 2, "lt": 5}}``: a number in range (``gt``, ``gte``, ``lt``, ``lte``);
- ``{"project": {"eq": "x"}}``: equality spelled as an operator.

Operators in one object all hold. A range or ``in`` never matches a value of another JSON type
(the string ``"3"`` is not the number 3, ``true`` is not 1).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nous.errors import InvalidInputError

MAX_METADATA_BYTES = 64 * 1024
MAX_TOP_KEYS = 64
MAX_DEPTH = 6
MAX_KEY_CHARS = 100
MAX_FILTER_KEYS = 20
MAX_IN_VALUES = 100

Scalar = str | int | float | bool
Op = Literal["eq", "in", "exists", "gt", "gte", "lt", "lte"]
RANGE_OPS: tuple[Op, ...] = ("gt", "gte", "lt", "lte")
OPS: tuple[Op, ...] = ("eq", "in", "exists", *RANGE_OPS)


def _check_key(key: object, path: str) -> None:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
        raise ValueError(f"keys must be non-empty strings of at most {MAX_KEY_CHARS} characters (at {path})")


def _check_value(value: object, path: str, depth: int) -> None:
    if isinstance(value, dict | list):
        if depth > MAX_DEPTH:
            raise ValueError(f"nested deeper than {MAX_DEPTH} levels (at {path})")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            if isinstance(value, dict):
                _check_key(k, path)
            _check_value(v, f"{path}.{k}" if isinstance(value, dict) else f"{path}[{k}]", depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"numbers must be finite (at {path})")
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise ValueError(f"{type(value).__name__} is not a JSON value (at {path})")


def check_metadata(value: object) -> dict[str, Any]:
    """The metadata object if it keeps the limits (ValueError naming what is wrong otherwise)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("metadata must be a JSON object")
    if len(value) > MAX_TOP_KEYS:
        raise ValueError(f"metadata has {len(value)} keys; at most {MAX_TOP_KEYS} are allowed")
    _check_value(value, "metadata", 1)
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is {size} bytes as JSON; at most {MAX_METADATA_BYTES} are allowed")
    return value


def validate_metadata(value: object, *, field: str = "metadata") -> dict[str, Any]:
    """``check_metadata`` raising InvalidInputError (for callers outside a pydantic model)."""
    try:
        return check_metadata(value)
    except ValueError as exc:
        raise InvalidInputError(str(exc), field=field) from None


@dataclass(frozen=True, slots=True)
class MetaCondition:
    """One condition on a top-level key: ``op`` and its operand (a scalar, a tuple of scalars for
    ``in``, a bool for ``exists``, a number for a range)."""

    key: str
    op: Op
    value: Any


@dataclass(frozen=True, slots=True)
class MetaFilter:
    """Conditions on a memory's metadata; a memory matches when all hold."""

    conditions: tuple[MetaCondition, ...]


def _is_number(value: object) -> bool:
    """A finite number (ints within 64 bits, as the stores compare them), not a boolean."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return isinstance(value, float) and math.isfinite(value)


def _is_scalar(value: object) -> bool:
    return isinstance(value, str | bool) or _is_number(value)


def _condition(key: str, op: str, operand: object, field: str) -> MetaCondition:
    if op == "eq":
        if not _is_scalar(operand):
            raise InvalidInputError("eq takes a string, number or boolean", field=field)
        return MetaCondition(key, "eq", operand)
    if op == "in":
        if not isinstance(operand, list | tuple) or not 1 <= len(operand) <= MAX_IN_VALUES:
            raise InvalidInputError(f"in takes a list of 1 to {MAX_IN_VALUES} values", field=field)
        if not all(_is_scalar(v) for v in operand):
            raise InvalidInputError("in takes strings, numbers or booleans", field=field)
        return MetaCondition(key, "in", tuple(operand))
    if op == "exists":
        if not isinstance(operand, bool):
            raise InvalidInputError("exists takes true or false", field=field)
        return MetaCondition(key, "exists", operand)
    if op in RANGE_OPS:
        if not _is_number(operand):
            raise InvalidInputError(f"{op} takes a finite number", field=field)
        return MetaCondition(key, next(o for o in RANGE_OPS if o == op), operand)
    raise InvalidInputError(f"unknown operator {op!r}; use one of {', '.join(OPS)}", field=field)


def decode_where(text: str | None, *, field: str = "where") -> dict[str, Any] | None:
    """A filter sent as JSON text (a query parameter), checked; None for no text."""
    if text is None or not text.strip():
        return None
    try:
        where = json.loads(text)
    except ValueError:
        raise InvalidInputError("where must be a JSON object", field=field) from None
    if not isinstance(where, dict):
        raise InvalidInputError("where must be a JSON object", field=field)
    parse_where(where, field=field)
    return where


def parse_where(where: object, *, field: str = "where") -> MetaFilter | None:
    """A filter from its JSON form (or an already parsed one); None or ``{}`` filters nothing.
    A malformed filter is an InvalidInputError naming ``field`` and the key at fault."""
    if where is None or isinstance(where, MetaFilter):
        return where if where is None or where.conditions else None
    if isinstance(where, str):
        where = decode_where(where, field=field)
    if not isinstance(where, Mapping):
        raise InvalidInputError("where must be an object of metadata keys to conditions", field=field)
    if len(where) > MAX_FILTER_KEYS:
        raise InvalidInputError(f"where names at most {MAX_FILTER_KEYS} keys", field=field)
    conditions: list[MetaCondition] = []
    for key, test in where.items():
        at = f"{field}.{key}"
        if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
            raise InvalidInputError(
                f"keys must be non-empty strings of at most {MAX_KEY_CHARS} characters", field=field
            )
        if isinstance(test, Mapping):
            if not test:
                raise InvalidInputError("an operator object needs at least one operator", field=at)
            conditions += (_condition(key, str(op), operand, at) for op, operand in test.items())
        else:
            conditions.append(_condition(key, "eq", test, at))
    return MetaFilter(tuple(conditions)) if conditions else None


def _same(a: object, b: object) -> bool:
    """JSON equality: booleans equal only booleans, numbers compare by value."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return a == b
    return type(a) is type(b) and a == b


def matches(metadata: Mapping[str, Any], where: MetaFilter | None) -> bool:
    """Whether ``metadata`` passes ``where`` (the stores apply the same rules in SQL)."""
    if where is None:
        return True
    for c in where.conditions:
        present = c.key in metadata
        value = metadata.get(c.key)
        if c.op == "exists":
            ok = present == c.value
        elif c.op == "eq":
            ok = present and _same(value, c.value)
        elif c.op == "in":
            ok = present and any(_same(value, v) for v in c.value)
        else:
            ok = (
                _is_number(value)
                and {
                    "gt": value > c.value,
                    "gte": value >= c.value,
                    "lt": value < c.value,
                    "lte": value <= c.value,
                }[c.op]
            )
        if not ok:
            return False
    return True


_SCALAR_SCHEMA: dict[str, Any] = {"type": ["string", "number", "boolean"]}
_KEY_SCHEMA: dict[str, Any] = {"minLength": 1, "maxLength": MAX_KEY_CHARS}

# JSON Schemas of a metadata object and of a filter, for the REST and MCP schemas (what a schema
# cannot say, the byte size and the depth, the validators above check).
METADATA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "maxProperties": MAX_TOP_KEYS,
    "propertyNames": _KEY_SCHEMA,
}
METADATA_DOC = (
    f"Your own JSON object, returned as given and filtered on with `where`: at most {MAX_TOP_KEYS} "
    f"keys at the top level, {MAX_DEPTH} levels deep, {MAX_METADATA_BYTES // 1024} KB as JSON, keys "
    f"of 1 to {MAX_KEY_CHARS} characters."
)
WHERE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "maxProperties": MAX_FILTER_KEYS,
    "propertyNames": _KEY_SCHEMA,
    "additionalProperties": {
        "anyOf": [
            _SCALAR_SCHEMA,
            {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": False,
                "properties": {
                    "eq": _SCALAR_SCHEMA,
                    "in": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": MAX_IN_VALUES,
                        "items": _SCALAR_SCHEMA,
                    },
                    "exists": {"type": "boolean"},
                    **{op: {"type": "number"} for op in RANGE_OPS},
                },
            },
        ]
    },
}
WHERE_DOC = (
    'Only memories whose metadata passes every condition: {"project": "x"} (equal), '
    '{"project": {"in": ["x", "y"]}}, {"reviewed": {"exists": true}}, {"priority": {"gte": 2, "lt": 5}} '
    "(also gt, lte)."
)
