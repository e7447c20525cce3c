"""Rendering for the CLI: readable tables for people, JSON for scripts."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

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


def day(value: datetime | None) -> str:
    """The date alone, for listings where the width is better spent on the content."""
    return value.strftime("%Y-%m-%d") if value else ""


# A column whose cells are all this short (ids, dates, numbers, states) is never wrapped or cut:
# a date or an id split over two lines reads as two values. Longer, free-text columns share the
# rest of the width, each at least TEXT_MIN_WIDTH wide.
SHORT_CELL = 20
TEXT_MIN_WIDTH = 12
SIDE_MIN_WIDTH = 8


def table(
    title: str | None,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    wrap: bool = False,
    main: str | None = None,
    side: Sequence[str] = (),
) -> None:
    """Print a table; says so plainly when there is nothing to show.

    Short columns keep each value whole on one line; free-text columns share the remaining width
    in proportion to their longest value and end in an ellipsis when a value does not fit (one
    row, one line), or, with ``wrap``, break at spaces (for tables that exist to show values in
    full, such as ``nous show``). The full values are in each command's ``--json``.

    ``main`` names the column that matters most (a fact's content): the ``side`` columns (its
    subject, its category) give up their width first, down to their header or SIDE_MIN_WIDTH,
    before it is cut; the other columns are kept whole as short ones.
    """
    cells = [["" if v is None else str(v) for v in r] for r in rows]
    if any(len(r) != len(columns) for r in cells):  # a figure under another's header misleads
        raise ValueError(f"a row of {title or 'a table'!r} does not have one cell per column {list(columns)}")
    if not cells:
        console.print(f"[dim]{title or 'nothing'}: none[/dim]")
        return
    natural = [
        max([len(name), *(len(Text.from_markup(r[i]).plain) for r in cells if i < len(r))])
        for i, name in enumerate(columns)
    ]
    widths = list(natural)
    if main is not None:
        text_columns = [columns.index(main), *(columns.index(c) for c in side)]
        _main_first(widths, [len(c) for c in columns], text_columns)
    else:
        text_columns = [i for i, n in enumerate(natural) if n > max(SHORT_CELL, len(columns[i]))]
        # each column costs its width plus two spaces of padding and one border line
        room = (
            console.width
            - 1
            - 3 * len(columns)
            - sum(n for i, n in enumerate(natural) if i not in text_columns)
        )
        wanted = sum(natural[i] for i in text_columns)
        if wanted > room:
            for i in text_columns:
                widths[i] = max(TEXT_MIN_WIDTH, room * natural[i] // wanted)
    # still too wide (many columns on a narrow terminal): cut the widest short values, never
    # below their header or 8 characters, so a value is shortened rather than split in two
    excess = sum(widths) + 1 + 3 * len(columns) - console.width
    for i in sorted(set(range(len(columns))) - set(text_columns), key=lambda c: -widths[c]):
        if excess <= 0:
            break
        cut = min(excess, widths[i] - max(len(columns[i]), 8))
        if cut > 0:
            widths[i] -= cut
            excess -= cut
    t = Table(title=title, show_lines=False, header_style="bold")
    for i, name in enumerate(columns):
        if i in text_columns and wrap:
            t.add_column(name, overflow="fold", width=widths[i])
        else:
            t.add_column(name, no_wrap=True, overflow="ellipsis", width=widths[i])
    for r in cells:
        t.add_row(*r)
    console.print(t)


def _main_first(widths: list[int], headers: list[int], text_columns: list[int]) -> None:
    """Share the room left by the short columns: the first of ``text_columns`` (the main one)
    takes what it needs once the others are cut to their floor; what it leaves goes back to them
    in order. ``widths`` holds each column's natural width and is changed in place."""
    main, *sides = text_columns
    room = console.width - 1 - 3 * len(widths)
    room -= sum(w for i, w in enumerate(widths) if i not in text_columns)
    floor = {i: min(widths[i], max(headers[i], SIDE_MIN_WIDTH)) for i in sides}
    widths[main] = max(TEXT_MIN_WIDTH, min(widths[main], room - sum(floor.values())))
    spare = room - widths[main] - sum(floor.values())
    for i in sides:
        grant = max(0, min(widths[i] - floor[i], spare))
        widths[i] = floor[i] + grant
        spare -= grant


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 session``, ``2 sessions`` (``many`` for irregular words: ``plural(n, "memory", "memories")``)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def number(value: float | int | None, digits: int = 2) -> str:
    """A number as people read it: at most ``digits`` decimals, no trailing zeros (36.00001 -> 36)."""
    if value is None:
        return ""
    if isinstance(value, int):  # bool included
        return str(value)
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def joined(parts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(parts) <= 1:
        return "".join(parts)
    return f"{', '.join(parts[:-1])} and {parts[-1]}"


def readable(value: Any) -> str:
    """One stored value as people read it: numbers rounded, times to the minute, lists and
    objects as compact JSON with their numbers rounded too."""
    if value is None:
        return ""
    if isinstance(value, float):
        return number(value)
    if isinstance(value, datetime):
        return when(value)
    if isinstance(value, dict | list):

        def rounded(v: Any) -> Any:
            if isinstance(v, float):
                return round(v, 3)
            if isinstance(v, dict):
                return {k: rounded(x) for k, x in v.items()}
            if isinstance(v, list):
                return [rounded(x) for x in v]
            return v

        return json.dumps(rounded(value), ensure_ascii=False)
    return str(value)


def duration(seconds: float) -> str:
    """Seconds as people read them: 850 ms, 4.2 s, 3 min 5 s, 1 h 2 min."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{number(seconds, 1)} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


class Steps:
    """Progress of long work on stderr, one step per item (an event, a question, a conversation).

    On a terminal it is a live bar; otherwise (a log, a pipe, a test) it prints a line for the
    first item, for each tenth of a known total (for an unknown one at 1-10, 20, 30, ..., 100,
    200, ...) and for the last, so a long run visibly moves without a line per item. Stdout is
    left alone, so ``--json`` output stays clean.
    """

    def __init__(self, label: str, total: int | None = None) -> None:
        self.label = label
        self.total = total or None
        self.done = 0
        self._printed = 0
        self._bar: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> Steps:
        if err_console.is_terminal:
            self._bar = progress_bar()
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif self.done and self._printed != self.done and exc[0] is None:
            self._line(None)

    def retotal(self, total: int | None) -> None:
        """Change the total (work found along the way); None when it is no longer known."""
        self.total = total or None
        if self._bar is not None:
            self._bar.update(self._task, total=self.total)

    def advance(self, note: str | None = None, count: int = 1) -> None:
        """Count ``count`` more items done; ``note`` names the latest (shown with its line)."""
        self.done += count
        if self.total is not None and self.done > self.total:
            self.retotal(None)
        if self._bar is not None:
            description = f"{self.label}: {escape(note)}" if note else self.label
            self._bar.update(self._task, advance=count, description=description)
        elif self._due():
            self._line(note)

    def _due(self) -> bool:
        if self._printed == 0 or self.done == self.total:
            return True
        if self.total is not None:
            step = -(-self.total // 10)  # a tenth, rounded up
            return self.done // step != self._printed // step
        scale = 10 ** max(0, len(str(self.done)) - 1)
        return self.done // scale != self._printed // scale

    def _line(self, note: str | None) -> None:
        self._printed = self.done
        of = f"/{self.total}" if self.total is not None else ""
        tail = f" · {escape(note)}" if note else ""
        err_console.print(f"[dim]{self.label} {self.done}{of}{tail}[/dim]", highlight=False, soft_wrap=True)


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
