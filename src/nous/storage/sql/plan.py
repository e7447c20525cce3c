"""Statements, their results, plans that yield them, and the dialect that encodes values."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

import numpy as np

from nous.models.metadata import RANGE_OPS, MetaCondition
from nous.storage.base import StoreInfo

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Stmt:
    """One statement with ``?`` placeholders; with ``many``, ``params`` is a list of rows."""

    sql: str
    params: Sequence[Any] = ()
    many: bool = False


@dataclass(frozen=True, slots=True)
class Rows:
    """Many rows for one table, written in one step: PostgreSQL streams them with COPY (into a
    staging table first when ``conflict`` is given), other backends run ``insert()`` for each row
    in one batch. Either way the rows land as ``insert()`` would write them, in the given order;
    the result's rowcount is how many rows it inserted or changed.

    ``conflict`` is the INSERT's ``ON CONFLICT`` clause (rows that conflict with ``excluded``)."""

    table: str
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    conflict: str = ""

    def insert(self) -> str:
        """One row's INSERT."""
        marks = ", ".join("?" * len(self.columns))
        return f"INSERT INTO {self.table} ({', '.join(self.columns)}) VALUES ({marks}) {self.conflict}"


@dataclass(slots=True)
class Result:
    """What a statement returned: its rows (tuples), their column names and the rows it changed."""

    rowcount: int
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]

    def scalar(self) -> Any:
        return self.rows[0][0] if self.rows else None


# A plan yields statements (or bulk rows), is sent each one's result, and returns its value.
Plan = Generator[Stmt | Rows, Result, T]


class Dialect:
    """How values travel to and from a driver that adapts Python types itself (psycopg, with
    TIMESTAMPTZ, JSONB, BOOLEAN and pgvector columns). SQLite overrides what it stores as text
    or bytes."""

    for_update = " FOR UPDATE"  # row locks where the backend has them (SQLite's writer is alone)
    chunk_agent = True  # memory_chunks carries agent_id (PostgreSQL's chunk search filters on it)

    def time(self, value: datetime | None) -> Any:
        return value

    def read_time(self, value: Any) -> Any:  # a datetime, or None for NULL
        return value

    def json(self, value: Any) -> Any:
        from psycopg.types.json import Jsonb

        return None if value is None else Jsonb(value)

    def read_json(self, value: Any) -> Any:
        return value

    def json_text(self, column: str, key: str) -> str:
        """The SQL for the text at ``key`` of a JSON object column (NULL if absent); ``key`` is
        the code's own, never a client's."""
        return f"{column} ->> '{key}'"

    def meta_condition(self, column: str, c: MetaCondition, mark: str) -> tuple[str, list[Any]]:
        """SQL (with ``mark`` placeholders) for one metadata condition on the JSON ``column``.
        PostgreSQL: equality and ``in`` as containment (``@>``), which the GIN index serves."""
        key = c.key
        if c.op in ("eq", "in"):
            values = [c.value] if c.op == "eq" else list(c.value)
            sql = " OR ".join([f"{column} @> {mark}"] * len(values))
            return f"({sql})", [self.json({key: v}) for v in values]
        if c.op == "exists":
            return f"({column} -> {mark}) IS {'NOT ' if c.value else ''}NULL", [key]
        number = (
            f"(CASE WHEN jsonb_typeof({column} -> {mark}) = 'number' THEN ({column} ->> {mark})::numeric END)"
        )
        return f"{number} {RANGE_SQL[c.op]} {mark}", [key, key, Decimal(str(c.value))]

    def vector(self, value: np.ndarray) -> Any:
        return np.asarray(value, np.float32)

    def read_vector(self, value: Any) -> np.ndarray:
        if hasattr(value, "to_numpy"):  # pgvector returns arrays or Vector objects by version
            value = value.to_numpy()
        return np.asarray(value, dtype=np.float32)

    def batches(self, values: Iterable[str]) -> list[list[str]]:
        """Distinct ``values`` in as many lists as one statement's ``in_`` takes."""
        return [list(dict.fromkeys(values))]

    def in_(self, column: str, values: list[str]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(?)", [values]

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return f"{column} LIKE ?", [like]

    def pin(self, column: str) -> str:
        """``column`` in a condition that should not pick the index (SQLite: ``+column``)."""
        return column


RANGE_SQL = dict(zip(RANGE_OPS, (">", ">=", "<", "<="), strict=True))


def to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def one(stmt: Stmt) -> Plan[Result]:
    """A plan of one statement."""
    return (yield stmt)


class SQLRunner(ABC):
    """What the shared SQL needs of a backend: its dialect and a way to run a plan."""

    dialect: Dialect
    info: StoreInfo

    @abstractmethod
    async def _read(self, plan: Plan[T]) -> T:
        """Run a plan on a reading connection."""

    @abstractmethod
    async def _write(self, plan: Plan[T]) -> T:
        """Run a plan in one write transaction."""

    async def _select(self, sql: str, params: Sequence[Any] = ()) -> Result:
        return await self._read(one(Stmt(sql, params)))

    async def _select_in(
        self, sql: str, column: str, values: list[str], params: Sequence[Any] = ()
    ) -> Result:
        """The rows of ``sql`` whose ``{among}`` is the condition "``column`` is one of ``values``",
        over as many statements as the dialect needs (``params`` come before the values)."""
        out = Result(0)
        for batch in self.dialect.batches(values) if values else []:
            among, ids = self.dialect.in_(column, batch)
            found = await self._select(sql.format(among=among), [*params, *ids])
            out.rows += found.rows
            out.columns = found.columns
        return out
