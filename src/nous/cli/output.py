"""Rendering for the CLI: readable tables for people, JSON for scripts."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

console = Console()
err_console = Console(stderr=True)


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def print_json(value: Any) -> None:
    """Plain JSON on stdout (no colour codes), one document."""
    sys.stdout.write(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def short(text: str | None, width: int = 80) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else ""


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Print a table; says so plainly when there is nothing to show."""
    rows = list(rows)
    if not rows:
        console.print(f"[dim]{title or 'nothing'}: none[/dim]")
        return
    t = Table(title=title, show_lines=False, header_style="bold")
    for c in columns:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*("" if v is None else str(v) for v in r))
    console.print(t)


def progress_bar() -> Progress:
    """A progress bar on stderr, shown only on a terminal (scripts and pipes get clean output)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        disable=not err_console.is_terminal,
    )
