"""Commands for conversations and time: ingest, recent."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nous.cli.output import Steps, console, plural, print_json, short, table, when
from nous.cli.runtime import fail, with_nous
from nous.cli.server_commands import nous_command
from nous.models import Memory
from nous.models.events import EventStatus

if TYPE_CHECKING:
    from nous.api import Nous
    from nous.ingest import Conversation, IngestReport

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]


def register(app: typer.Typer) -> None:
    app.command()(ingest)
    app.command()(recent)


def ingest(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(
            help='Conversation JSON: Nous native, {"messages": [...]}, a list of messages or chats, LoCoMo.'
        ),
    ],
    fmt: Annotated[str, typer.Option("--format", help="auto, native, messages or locomo.")] = "auto",
    user: Annotated[str | None, typer.Option(help="User id to scope the memories to.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Store a multi-session conversation: one episode per session, one recallable turn per message.

    Native format: {"sessions": [{"id": "s1", "started_at": "2024-05-01T10:00:00Z",
    "messages": [{"role": "user", "name": "Ana", "content": "..."}]}]}

    The whole file is checked first; a bad record is named and nothing is stored. Running the same
    file again skips sessions already stored (an interrupted run resumes). Progress goes to
    stderr: a bar on a terminal, a line every tenth of the turns otherwise.

    Example: nous ingest chat.json --json
    """
    if not file.is_file():
        raise fail(f"{file} does not exist or is not a file", 2)

    async def act(nous: Nous) -> tuple[IngestReport, int]:
        # Turns are reported a batch at a time as they are embedded, within each session too.
        with Steps("ingesting turns") as steps:

            def parsed(conv: Conversation) -> None:
                steps.retotal(sum(len(s.messages) for s in conv.sessions))

            report = await nous.ingest(
                file,
                fmt=fmt,
                user_id=user,
                on_parsed=parsed,
                progress=lambda n: steps.advance(count=n),
                actor="cli",
            )
        # A CLI command runs no event worker, so the summaries and facts of what was just stored
        # wait for one: say so, or the new episodes look finished when they are not.
        return report, (await nous.event_counts()).get(EventStatus.PENDING, 0)

    report, pending = with_nous(ctx, act)
    if as_json:
        print_json(
            {"status": "ingested", **report.model_dump(exclude={"episode_ids"}), "events_pending": pending}
        )
        return
    console.print(
        f"[green]ingested[/green] {plural(report.turns, 'turn')} in {plural(report.sessions, 'session')} "
        f"({report.sessions_skipped} already stored) from {file}"
    )
    if report.episodes_merged:
        console.print(
            f"{plural(report.episodes_merged, 'session')} linked to an earlier episode with the same opening"
        )
    if report.discarded:
        # Their turns are stored and recallable; only the episode is out of recall (restorable).
        console.print(f"discarded {plural(len(report.discarded), 'episode')} (turns kept):")
        for line in report.discarded:
            console.print(f"  {line}", markup=False, highlight=False)
    if pending:
        nous = nous_command()
        events = plural(pending, "event")
        print(
            f"{events} pending (episode summaries, facts) — run `{nous} maintain --events` "
            f"or keep `{nous} serve` running",
            flush=True,
        )


def recent(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-k", min=1, max=1000)] = 10,
    kind: Annotated[list[str] | None, typer.Option("--kind", help="Memory types; default episodes.")] = None,
    hours: Annotated[float | None, typer.Option(help="Only the last N hours.")] = None,
    since: Annotated[datetime | None, typer.Option(help="Only after this time (ISO-8601).")] = None,
    until: Annotated[datetime | None, typer.Option(help="Only before this time (ISO-8601).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """What happened most recently, by time rather than topic (closed episodes included).

    Example: nous recent --hours 48
    """

    async def act(nous: Nous) -> list[Memory]:
        return await nous.recall_recent(
            limit=limit, kinds=kind or ("episode",), hours=hours, since=since, until=until
        )

    found = with_nous(ctx, act)
    if as_json:
        print_json(
            [
                {
                    "id": m.id,
                    "type": m.kind.value,
                    "content": m.content,
                    "occurred_at": m.occurred_at.isoformat(),
                }
                for m in found
            ]
        )
        return
    table(
        "recent",
        ["when", "type", "content", "id"],
        [(when(m.occurred_at), m.kind.value, short(m.content, 80), m.id[:8]) for m in found],
    )
