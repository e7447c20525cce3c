"""Commands that show topic threads: the memories of one topic across sessions, in time order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from nous.cli.output import console, day, plural, print_json, short, table, when
from nous.cli.runtime import fail, with_nous
from nous.errors import NotFoundError
from nous.models.threads import Thread

if TYPE_CHECKING:
    from nous.api import Nous

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
PREFIX_SCAN = 1000  # threads looked through to resolve an id prefix


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.command()(threads)
    app.command()(thread)


def threads(
    ctx: typer.Context,
    user: Annotated[
        str | None, typer.Option("--user", help="Only this user's threads (and the agent's shared ones).")
    ] = None,
    query: Annotated[
        str | None, typer.Option("--query", "-q", help="A topic or question: best matching threads first.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-k", min=1, max=1000, help="How many to show.")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """List topic threads, newest activity first: each groups the turns, facts, decisions and
    episodes of one topic across sessions. Threads are built as events are processed (`nous
    worker`, `nous maintain --events`) and by `nous maintain`.

    Example: nous threads
    Example: nous threads --user ana --query "marathon training"
    Example: nous threads --json
    """
    found = with_nous(ctx, lambda nous: nous.threads(user_id=user, limit=limit, query=query))
    if as_json:
        print_json([t.model_dump(mode="json") for t in found])
        return
    users = any(t.user_id for t in found)  # a user column only where some thread has a user
    columns = [
        "id",
        "label",
        *(["user"] if users else []),
        "size",
        "first",
        "last",
        *(["score"] if query else []),
    ]
    rows = [
        (
            t.id[:8],
            short(t.label, 60),
            *([t.user_id or "(shared)"] if users else []),
            t.size,
            day(t.first_at),
            day(t.last_at),
            *([f"{t.score:.2f}"] if query and t.score is not None else []),
        )
        for t in found
    ]
    table("threads", columns, rows, main="label")


async def _resolve(nous: Nous, thread_id: str) -> Thread:
    """The thread with this id, or the one (of the newest PREFIX_SCAN) whose id starts with it."""
    wanted = thread_id.strip()
    try:
        return await nous.thread(wanted)
    except NotFoundError:
        pass
    matches = [t for t in await nous.threads(limit=PREFIX_SCAN) if t.id.startswith(wanted)] if wanted else []
    if len(matches) != 1:
        raise fail(
            f"no thread with id {thread_id!r}" if not matches else f"{thread_id!r} names several threads", 2
        )
    return await nous.thread(matches[0].id)


def thread(
    ctx: typer.Context,
    thread_id: Annotated[
        str, typer.Argument(help="The thread's id or a prefix of it (from `nous threads`).")
    ],
    as_json: JsonOpt = False,
) -> None:
    """Show one topic thread: its members in time order, one dated line each.

    Example: nous thread 3f2a9c1b
    Example: nous thread 3f2a9c1b --json
    """
    found = with_nous(ctx, lambda nous: _resolve(nous, thread_id))
    if as_json:
        print_json(found.model_dump(mode="json"))
        return
    console.print(
        f"[bold]{found.label}[/bold]  ({plural(found.size, 'memory', 'memories')}, "
        f"{day(found.first_at)} to {day(found.last_at)})"
    )
    table(
        None,
        ["when", "kind", "id", "content"],
        [
            (
                when(m.occurred_at),
                m.kind.value,
                m.memory_id[:8],
                short(f"{m.speaker}: {m.content}" if m.speaker else m.content, 200),
            )
            for m in found.members or []
        ],
        main="content",
    )
