"""``nous censors`` (list, add, edit, retire, false-positive) and ``nous check-action``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from nous.cli.output import console, print_json, short, table
from nous.cli.runtime import read_text_arg, with_nous
from nous.models import Censor, WriteResult
from nous.models.heart import censor_actions_text

if TYPE_CHECKING:
    from nous.api import Nous
    from nous.heart import ActionCheck

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
IdArg = Annotated[str, typer.Argument(help="Censor id or 6+ character prefix (see `nous censors`).")]
ACTIONS = censor_actions_text()
# `nous check-action`'s exit code on a block (0 on allow and warn; 1 and 2 are errors, as elsewhere).
BLOCKED_EXIT = 3

app = typer.Typer(
    name="censors",
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def register(root: typer.Typer) -> None:
    """Attach ``nous censors …`` and ``nous check-action`` to the root app."""
    root.add_typer(app, name="censors")
    root.command("check-action")(check_action)


def _row(c: Censor) -> dict[str, Any]:
    return {
        "id": c.id,
        "trigger_pattern": c.trigger_pattern,
        "action": c.action.value,
        "reason": c.reason,
        "activation_count": c.activation_count,
        "false_positive_count": c.false_positive_count,
        "escalation_threshold": c.escalation_threshold,
        "user_id": c.user_id,
        "active": c.active,
    }


def _changes(before: Censor, after: Censor) -> list[str]:
    """What an edit changed, one phrase per field (``action warn → block``)."""
    said: list[str] = []
    for field, label in (
        ("trigger_pattern", "pattern"),
        ("action", "action"),
        ("reason", "reason"),
        ("escalation_threshold", "threshold"),
    ):
        old, new = getattr(before, field), getattr(after, field)
        if old != new:
            shown = [getattr(v, "value", v) for v in (old, new)]
            quoted = [
                f"`{v}`" if field == "trigger_pattern" else repr(v) if field == "reason" else v for v in shown
            ]
            said.append(f"{label} {quoted[0]} → {quoted[1]}")
    return said


def _count_line(before: Censor, after: Censor) -> str:
    if after.activation_count == before.activation_count:
        return f"activations kept: {after.activation_count}"
    return f"activations reset: {before.activation_count} → {after.activation_count}"


@app.callback(invoke_without_command=True)
def censors(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-k", min=1, max=10_000, help="How many to show.")] = 200,
    as_json: JsonOpt = False,
) -> None:
    """Censors: what the agent must not do. Without a subcommand, list those in force.

    A censor fires on an action when its pattern (a case-insensitive regular expression) matches,
    or when the action means what the censor's reason forbids. What it then does: warn (go ahead,
    with a warning; becomes block after --threshold firings), block (stop unless overridden) or
    absolute (always stop, no override). Check an action with `nous check-action "TEXT"`.

    Example: nous censors add "DROP\\s+TABLE" --action block --reason "never drop production tables"

    Example: nous censors --json
    """
    if ctx.invoked_subcommand is not None:
        return

    async def act(nous: Nous) -> list[Censor]:
        return await nous.censors(limit=limit)

    found = with_nous(ctx, act)
    if as_json:
        print_json([_row(c) for c in found])
        return
    table(
        "censors",
        ["id", "pattern", "action", "fired", "false alarms", "for", "reason"],
        [
            (
                c.id[:8],
                escape(short(c.trigger_pattern, 40)),
                c.action.value,
                f"{c.activation_count}/{c.escalation_threshold}",
                c.false_positive_count,
                escape(c.user_id) if c.user_id else "everyone",
                escape(short(c.reason, 60)),
            )
            for c in found
        ],
    )


@app.command()
def add(
    ctx: typer.Context,
    pattern: Annotated[
        str, typer.Argument(help="Case-insensitive regular expression the action must not match.")
    ],
    action: Annotated[
        str, typer.Option("--action", "-a", help=f"What happens when it fires: {ACTIONS}.")
    ] = "warn",
    reason: Annotated[
        str | None, typer.Option("--reason", "-r", help="Why: shown whenever it fires.")
    ] = None,
    domain: Annotated[str | None, typer.Option(help="Area it belongs to, e.g. database, trading.")] = None,
    threshold: Annotated[
        int, typer.Option("--threshold", min=1, help="Firings after which a warn censor becomes block.")
    ] = 3,
    dedup: Annotated[
        bool, typer.Option("--dedup/--no-dedup", help="Skip it if an equivalent censor exists.")
    ] = True,
    user: Annotated[
        str | None,
        typer.Option("--user", help="Bind only this user's actions (default: every user's)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a censor; print its id, its action and what it matches.

    Patterns are checked: an invalid regex, one that matches empty text, nested quantifiers
    such as (a+)+ or repeated alternatives that match the same text such as (a|aa)+ (which can
    take exponential time) are refused. Put -- before a pattern that starts with a dash.

    Example: nous censors add "rm\\s+-rf\\s+/" --action absolute --reason "destroys the host" --json
    """

    async def act(nous: Nous) -> WriteResult:
        return await nous.heart.censors.add(
            pattern,
            action=action,
            reason=reason,
            domain=domain,
            escalation_threshold=threshold,
            dedup=dedup,
            user_id=user,
            actor="cli",
        )

    result = with_nous(ctx, act)
    censor = result.memory
    assert isinstance(censor, Censor)
    if as_json:
        payload = {"status": result.status.value, **_row(censor), "id": result.id}
        if result.existing_id:
            payload["existing_id"] = result.existing_id
        print_json(payload)
        return
    if result.existing_id:
        console.print(f"[yellow]duplicate[/yellow] {result.existing_id}  an equivalent censor exists")
        return
    why = f" — {censor.reason}" if censor.reason else ""
    console.print(
        f"added {result.id}: {censor.action.value} `{censor.trigger_pattern}`{why}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


@app.command()
def edit(
    ctx: typer.Context,
    censor_id: IdArg,
    pattern: Annotated[str | None, typer.Option("--pattern", "-p", help="New trigger pattern.")] = None,
    action: Annotated[str | None, typer.Option("--action", "-a", help=f"New action: {ACTIONS}.")] = None,
    reason: Annotated[str | None, typer.Option("--reason", "-r", help="New reason ('' clears it).")] = None,
    threshold: Annotated[
        int | None, typer.Option("--threshold", min=1, help="New escalation threshold (warn censors).")
    ] = None,
    reset_count: Annotated[
        bool, typer.Option("--reset-count", help="Set the activation count back to 0 (kept otherwise).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Change a censor's pattern, action, reason or threshold; the change is kept in its history.

    Prints what changed. The activation count is kept, whatever changes, unless --reset-count is
    given: a warn censor whose count already reaches its threshold becomes block at its next firing.

    Example: nous censors edit 3f2a9c1b --action warn --reason "allowed in staging" --reset-count
    """

    async def act(nous: Nous) -> tuple[Censor, Censor]:
        before = await nous.heart.censors.get(censor_id)
        after = await nous.heart.censors.edit(
            before.id,
            trigger_pattern=pattern,
            action=action,
            reason=reason,
            escalation_threshold=threshold,
            reset_activations=reset_count,
            actor="cli",
        )
        return before, after

    before, after = with_nous(ctx, act)
    changed = _changes(before, after)
    if as_json:
        print_json({"status": "edited", **_row(after), "changed": changed})
        return
    what = ", ".join(changed) if changed else "nothing changed"
    console.print(
        f"[green]edited[/green] {after.id[:8]}: {escape(what)} ({_count_line(before, after)})",
        highlight=False,
    )


@app.command()
def retire(
    ctx: typer.Context,
    censor_id: IdArg,
    reason: Annotated[str | None, typer.Option("--reason", "-r", help="Why it is retired.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Retire a censor: it never fires again, and its history is kept (`nous history ID`).

    Example: nous censors retire 3f2a9c1b --reason "the legacy database is gone"
    """

    async def act(nous: Nous) -> Censor:
        return await nous.heart.censors.retire(censor_id, reason, actor="cli")

    censor = with_nous(ctx, act)
    if as_json:
        print_json({"status": "retired", **_row(censor)})
        return
    fired = f"fired {censor.activation_count} time{'' if censor.activation_count == 1 else 's'}"
    console.print(
        f"[green]retired[/green] {censor.id[:8]}: `{escape(censor.trigger_pattern)}` no longer fires "
        f"(it was {censor.action.value}, {fired}; `nous history {censor.id[:8]}` keeps its record)",
        highlight=False,
    )


@app.command("false-positive")
def false_positive(
    ctx: typer.Context,
    censor_id: IdArg,
    note: Annotated[str | None, typer.Option("--note", "-n", help="What it wrongly fired on.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Report that a censor fired on an action it should not have; counted and kept in its history.

    Example: nous censors false-positive 3f2a9c1b --note "fired on a read-only query"
    """

    async def act(nous: Nous) -> Censor:
        return await nous.heart.censors.report_false_positive(censor_id, note, actor="cli")

    censor = with_nous(ctx, act)
    if as_json:
        print_json({"status": "reported", **_row(censor)})
        return
    console.print(f"[green]reported[/green] {censor.id}  false positives: {censor.false_positive_count}")


def check_action(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The action about to be taken, or - to read stdin.")],
    session: Annotated[str | None, typer.Option("--session", help="Session id, noted in history.")] = None,
    user: Annotated[
        str | None,
        typer.Option("--user", help="The user acting (default: the session's): their censors apply too."),
    ] = None,
    override: Annotated[
        bool, typer.Option("--override", help="Turn a block into a warning (never an absolute one).")
    ] = False,
    record: Annotated[
        bool, typer.Option("--record/--no-record", help="Count the firings (and escalate).")
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Check an action against the censors: prints allow, warn or block, and why.

    Exit code: 0 on allow or warn, 3 on block (so a script can stop on it), 1 or 2 on an
    error. A censor fires when its pattern matches or when the action means nearly what the
    censor forbids; each firing is counted, and a warn censor becomes block after its threshold.

    Example: nous check-action "DROP TABLE users" --json || echo "blocked"
    """
    from nous.heart import ActionDecision

    action_text = read_text_arg(text)

    async def act(nous: Nous) -> ActionCheck:
        return await nous.check_action(
            action_text, session_id=session, user_id=user, override=override, record=record, actor="cli"
        )

    verdict = with_nous(ctx, act)
    if as_json:
        print_json(
            {
                "decision": verdict.decision.value,
                "overridden": verdict.overridden,
                "reasons": verdict.reasons,
                "warnings": verdict.warnings,
                "matches": [
                    {
                        "censor_id": m.censor.id,
                        "trigger_pattern": m.censor.trigger_pattern,
                        "action": m.action.value,
                        "how": m.how,
                        "similarity": m.similarity,
                        "escalated": m.escalated,
                        "timed_out": m.timed_out,
                        "reason": m.reason,
                    }
                    for m in verdict.matches
                ],
            }
        )
    else:
        colour = {"allow": "green", "warn": "yellow", "block": "bold red"}[verdict.decision.value]
        console.print(f"[{colour}]{verdict.decision.value}[/{colour}]")
        for line in [*verdict.reasons, *verdict.warnings]:
            console.print(f"  {line}", highlight=False, markup=False)
    if verdict.decision is ActionDecision.BLOCK:
        raise typer.Exit(BLOCKED_EXIT)
