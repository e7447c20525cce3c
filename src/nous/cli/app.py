"""Root of the ``nous`` CLI: global options and command registration."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from pydantic import ValidationError

# typer (0.29+) carries its own copy of click: its usage errors are these, not click's.
from typer._click import exceptions as click_errors

from nous.cli import (
    admin_commands,
    bench,
    censor_commands,
    chat_commands,
    cognitive_commands,
    conversation_commands,
    demo,
    event_commands,
    memory_commands,
    proposal_commands,
    server_commands,
)
from nous.cli.output import err_console
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
server_commands.register(app)
chat_commands.register(app)
app.command()(demo.demo)
app.add_typer(bench.app, name="bench")


def main() -> None:
    """Console-script entry point. A usage mistake (an unknown command or option, a bad option
    value, a missing argument) is one line on stderr that says where to look, exit code 2."""
    command = typer.main.get_command(app)
    try:
        code = command.main(args=sys.argv[1:], prog_name="nous", standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:
        print(exc.ctx.get_help() if exc.ctx else "")
        sys.exit(0)
    except click_errors.UsageError as exc:
        where = f" (see `{exc.ctx.command_path} -h`)" if exc.ctx else ""
        err_console.print(
            f"[bold red]error:[/bold red] {exc.format_message()}{where}", highlight=False, soft_wrap=True
        )
        sys.exit(2)
    except typer.Abort:
        err_console.print("[bold red]error:[/bold red] interrupted", highlight=False)
        sys.exit(130)
    except click_errors.ClickException as exc:
        err_console.print(
            f"[bold red]error:[/bold red] {exc.format_message()}", highlight=False, soft_wrap=True
        )
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
