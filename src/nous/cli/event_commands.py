"""``nous events`` (list, retry) and ``nous worker``: the durable outbox of follow-up work."""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from nous.cli.output import console, plural, print_json, short, table
from nous.cli.runtime import fail, run, state, with_nous
from nous.models.events import Event, EventStatus

if TYPE_CHECKING:
    from nous.api import Nous

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
STATUSES = ", ".join(s.value for s in EventStatus)

app = typer.Typer(
    name="events", no_args_is_help=False, context_settings={"help_option_names": ["-h", "--help"]}
)


def register(root: typer.Typer) -> None:
    """Attach ``nous events …`` and ``nous worker`` to the root app."""
    root.add_typer(app, name="events")
    root.command("worker")(worker)


def _row(e: Event) -> dict[str, Any]:
    return e.model_dump(mode="json")


@app.callback(invoke_without_command=True)
def events(
    ctx: typer.Context,
    status: Annotated[
        str | None, typer.Option("--status", "-s", help=f"Only events in this status: {STATUSES}.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-k", min=1, max=1000, help="How many to show.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """The outbox: follow-up work written with each change (a session ended, an episode closed, a
    decision recorded, a fact written). Without a subcommand, list the newest events.

    A worker claims due events with a lease and commits each handler's effect together with the
    event's 'done' mark; a failure is retried with backoff and, after NOUS_EVENT_MAX_ATTEMPTS,
    kept as 'dead' with its error until `nous events retry ID`. Run them with `nous worker`
    (continuously) or `nous maintain --events` (until the queue is empty).

    Example: nous events --status dead

    Example: nous events retry 3f9c2a1b
    """
    if ctx.invoked_subcommand is not None:
        return

    async def act(nous: Nous) -> tuple[list[Event], dict[EventStatus, int]]:
        return await nous.events(status=status, limit=limit), await nous.event_counts()

    found, counts = with_nous(ctx, act)
    if as_json:
        print_json([_row(e) for e in found])
        return
    summary = " · ".join(f"{counts.get(s, 0)} {s.value}" for s in EventStatus)
    # what each event concerns (subject_id) and exact times are in --json; the table keeps what
    # tells events apart and what went wrong
    table(
        f"events ({summary})",
        ["id", "kind", "status", "created", "last error"],
        [
            (
                e.id[:8],
                e.kind.value,
                e.status.value + (f" ×{e.attempts}" if e.attempts > 1 else ""),
                e.created_at.strftime("%m-%d %H:%M"),
                escape(short(e.last_error, 200)),
            )
            for e in found
        ],
    )


@app.command("retry")
def retry(
    ctx: typer.Context,
    event_id: Annotated[str, typer.Argument(help="Event id or 6+ character prefix (see `nous events`).")],
    as_json: JsonOpt = False,
) -> None:
    """Revive a dead event: pending again, due now, its attempts reset.

    Example: nous events retry 3f9c2a1b
    """

    async def act(nous: Nous) -> Event:
        wanted = event_id.strip()
        if len(wanted) < 32:
            if len(wanted) < 6:
                raise fail("give the event id or at least its first 6 characters", 2)
            candidates = [e.id for e in await nous.events(limit=1000) if e.id.startswith(wanted)]
            if len(candidates) > 1:
                raise fail(f"prefix {wanted!r} matches several events; give more characters", 2)
            wanted = candidates[0] if candidates else wanted
        return await nous.retry_event(wanted)

    event = with_nous(ctx, act)
    if as_json:
        print_json(_row(event))
    else:
        console.print(f"[green]{event.status.value}[/green] {event.id} ({event.kind.value}) is due again")


def worker(
    ctx: typer.Context,
    once: Annotated[bool, typer.Option("--once", help="Run the due events, then exit.")] = False,
    batch: Annotated[int, typer.Option("--batch", min=1, max=1000, help="Events claimed at a time.")] = 10,
) -> None:
    """Run outbox events continuously for the agent until interrupted (Ctrl-C or SIGTERM), and
    end sessions idle for NOUS_SESSION_TIMEOUT_MINUTES (so they are summarised).

    Several workers may run at once, on this machine or others sharing a PostgreSQL store: each
    claims events with a lease, so none is run twice; a worker that dies mid-event leaves nothing
    half-written, and its event is claimed again when the lease (NOUS_EVENT_LEASE_SECONDS) runs out.

    Example: nous --agent support-bot worker
    """
    from nous.api import Nous

    st = state(ctx)
    settings = st.settings.model_copy(update={"events_worker": "off"})

    async def go() -> int:
        async with Nous(settings, agent_id=st.agent_id) as nous:
            w = nous.event_worker(batch=batch)
            if once:
                await nous.end_idle_sessions()
                report = await w.drain()
                return report.done
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            console.print(f"[dim]worker {w.worker_id} for agent {st.agent_id}: waiting for events[/dim]")
            await nous.run_pipeline(stop, worker=w)
            return 0

    done = run(go())
    if once:
        console.print(f"[green]done[/green] {plural(done, 'event')}")
