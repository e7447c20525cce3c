"""``nous proposals`` (list, accept, reject): outcomes the reviewer proposed for pending decisions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from nous.cli.output import console, print_json, short, table
from nous.cli.runtime import with_nous
from nous.models import Decision

if TYPE_CHECKING:
    from nous.api import Nous

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
IdArg = Annotated[str, typer.Argument(help="Decision id or 6+ character prefix (see `nous proposals`).")]

app = typer.Typer(
    name="proposals", no_args_is_help=False, context_settings={"help_option_names": ["-h", "--help"]}
)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="proposals")


def _row(d: Decision) -> dict[str, Any]:
    assert d.proposal is not None
    return {
        "id": d.id,
        "decision": d.content,
        "confidence": d.confidence,
        "outcome": d.outcome.value,
        "proposal": d.proposal.model_dump(mode="json"),
    }


@app.callback(invoke_without_command=True)
def proposals(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Proposed outcomes for pending decisions, from what later conversations said ("the Kafka
    move worked", "we rolled it back"). Nothing is resolved until you accept a proposal.

    Example: nous proposals

    Example: nous proposals accept 3f9c2a1b
    """
    if ctx.invoked_subcommand is not None:
        return
    found = with_nous(ctx, lambda nous: nous.outcome_proposals())
    if as_json:
        print_json([_row(d) for d in found])
        return
    table(
        "outcome proposals",
        ["id", "decision", "proposed", "source", "because"],
        [
            (
                d.id[:8],
                escape(short(d.content, 40)),
                d.proposal.outcome.value if d.proposal else "",
                d.proposal.source if d.proposal else "",
                escape(short(d.proposal.reason if d.proposal else "", 60)),
            )
            for d in found
        ],
    )


@app.command("accept")
def accept(ctx: typer.Context, decision_id: IdArg, as_json: JsonOpt = False) -> None:
    """Resolve the decision with its proposed outcome (the proposal's reason becomes its note).

    Example: nous proposals accept 3f2a9c1b
    """

    async def act(nous: Nous) -> Decision:
        return await nous.accept_proposal(decision_id, actor="cli")

    d = with_nous(ctx, act)
    if as_json:
        print_json({"id": d.id, "outcome": d.outcome.value, "outcome_note": d.outcome_note})
    else:
        console.print(f"[green]{d.outcome.value}[/green] {d.id}: {escape(short(d.content, 80))}")


@app.command("reject")
def reject(ctx: typer.Context, decision_id: IdArg, as_json: JsonOpt = False) -> None:
    """Drop the proposal; the decision stays pending.

    Example: nous proposals reject 3f2a9c1b --json
    """

    async def act(nous: Nous) -> Decision:
        return await nous.reject_proposal(decision_id, actor="cli")

    d = with_nous(ctx, act)
    if as_json:
        print_json({"id": d.id, "outcome": d.outcome.value})
    else:
        console.print(f"[yellow]rejected[/yellow] the proposal for {d.id}; it stays {d.outcome.value}")
