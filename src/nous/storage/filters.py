"""The WHERE clause of a MemoryQuery, for backends that speak SQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from nous.storage.base import MemoryQuery


def where_clause(
    query: MemoryQuery,
    placeholder: str,
    *,
    time_param: Callable[[datetime], Any] = lambda t: t,
    prefix: str = "",
) -> tuple[str, list[Any]]:
    """SQL conditions (joined by AND) and their parameters.

    ``placeholder`` is ``?`` for SQLite and ``%s`` for psycopg; ``prefix`` qualifies
    column names (e.g. ``"m."``).
    """
    p = prefix
    conds = [f"{p}agent_id = {placeholder}"]
    params: list[Any] = [query.agent_id]
    if query.kinds:
        conds.append(f"{p}kind IN ({', '.join([placeholder] * len(query.kinds))})")
        params.extend(k.value for k in query.kinds)
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
    if query.lifecycle:
        conds.append(f"{p}lifecycle IN ({', '.join([placeholder] * len(query.lifecycle))})")
        params.extend(state.value for state in query.lifecycle)
    for column in ("session_id", "subject", "category"):
        value = getattr(query, column)
        if value is not None:
            conds.append(f"{p}{column} = {placeholder}")
            params.append(value)
    if query.since is not None:
        conds.append(f"{p}occurred_at >= {placeholder}")
        params.append(time_param(query.since))
    if query.until is not None:
        conds.append(f"{p}occurred_at < {placeholder}")
        params.append(time_param(query.until))
    if query.as_of is not None:
        conds.append(f"{p}occurred_at <= {placeholder}")
        params.append(time_param(query.as_of))
    if query.ids is not None:
        if not query.ids:
            conds.append("1 = 0")
        else:
            conds.append(f"{p}id IN ({', '.join([placeholder] * len(query.ids))})")
            params.extend(query.ids)
    return " AND ".join(conds), params
