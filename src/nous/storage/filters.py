"""The WHERE clause of a MemoryQuery, for backends that speak SQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from nous.storage.base import MemoryQuery
from nous.storage.sql.plan import Dialect


def where_clause(
    query: MemoryQuery,
    placeholder: str,
    *,
    dialect: Dialect,
    time_param: Callable[[datetime], Any] = lambda t: t,
    prefix: str = "",
) -> tuple[str, list[Any]]:
    """SQL conditions (joined by AND) and their parameters.

    ``placeholder`` is ``?`` for SQLite and ``%s`` for psycopg; ``prefix`` qualifies
    column names (e.g. ``"m."``); ``dialect`` writes the metadata conditions.
    """
    p = prefix
    conds = [f"{p}agent_id = {placeholder}"]
    params: list[Any] = [query.agent_id]

    def among(column: str, values: list[Any]) -> str:
        params.extend(values)
        return f"{p}{column} IN ({', '.join([placeholder] * len(values))})" if values else "1 = 0"

    if query.kinds:
        conds.append(among("kind", [k.value for k in query.kinds]))
    if not query.include_inactive:
        conds.append(f"{p}active = {placeholder}")
        params.append(True)
    if query.superseded_only:
        conds.append(f"{p}superseded_by IS NOT NULL")
    elif not query.include_superseded:
        if query.as_of is None:
            conds.append(f"{p}superseded_by IS NULL")
        else:  # superseded only after as_of: current then
            conds.append(f"({p}superseded_by IS NULL OR {p}valid_to > {placeholder})")
            params.append(time_param(query.as_of))
    if query.user_id is not None:
        conds.append(
            f"({p}user_id = {placeholder} OR {p}user_id IS NULL)"
            if query.shared
            else f"{p}user_id = {placeholder}"
        )
        params.append(query.user_id)
    elif query.shared_only:
        conds.append(f"{p}user_id IS NULL")
    if query.lifecycle:
        conds.append(among("lifecycle", [state.value for state in query.lifecycle]))
    for column in ("session_id", "subject", "category"):
        value = getattr(query, column)
        if value is not None:
            conds.append(f"{p}{column} = {placeholder}")
            params.append(value)
    for op, bound in ((">=", query.since), ("<", query.until), ("<=", query.as_of)):
        if bound is not None:
            conds.append(f"{p}occurred_at {op} {placeholder}")
            params.append(time_param(bound))
    for condition in query.where.conditions if query.where else ():
        sql, values = dialect.meta_condition(f"{p}metadata", condition, placeholder)
        conds.append(sql)
        params.extend(values)
    if query.ids is not None:  # none: matches nothing
        conds.append(among("id", list(query.ids)))
    return " AND ".join(conds), params
