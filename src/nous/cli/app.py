"""Root of the ``nous`` CLI: global options and command registration."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import ValidationError

from nous.cli import (
    admin_commands,
    bench,
    censor_commands,
    cognitive_commands,
    conversation_commands,
    demo,
    event_commands,
    memory_commands,
    proposal_commands,
)
from nous.cli.runtime import CliState, fail
from nous.config import Settings

app = typer.Typer(
    name="nous",
    help=(
        "Nous — long-term memory for AI agents.\n\n"
        "Stores facts, episodes, procedures, censors and decisions, and recalls them with hybrid "
        "dense + keyword search. Data lives in an SQLite file under ~/.nous unless "
        "NOUS_DATABASE_URL (or --db) points elsewhere, e.g. postgresql://user@host/db.\n\n"
        'Start with:  nous demo   ·   nous learn "..."   ·   nous recall "..."'
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def main_options(
    ctx: typer.Context,
    db: Annotated[str | None, typer.Option("--db", help="Database URL; overrides NOUS_DATABASE_URL.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Agent id; overrides NOUS_AGENT_ID.")] = None,
) -> None:
    try:
        settings = Settings()
    except ValidationError as exc:
        err = exc.errors()[0]
        raise fail(f"bad configuration: NOUS_{str(err['loc'][0]).upper()}: {err['msg']}", 2) from None
    if db:
        settings = settings.model_copy(update={"database_url": db})
    ctx.obj = CliState(settings=settings, agent_id=agent or settings.agent_id)


memory_commands.register(app)
censor_commands.register(app)
conversation_commands.register(app)
cognitive_commands.register(app)
admin_commands.register(app)
event_commands.register(app)
proposal_commands.register(app)
app.command()(demo.demo)
app.add_typer(bench.app, name="bench")


def main() -> None:
    """Console-script entry point."""
    app()
