"""Root of the ``nous`` CLI: global options and command registration."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

# typer (0.29+) carries its own copy of click: its usage errors are these, not click's.
from typer._click import exceptions as click_errors

from nous import __version__
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
    thread_commands,
)
from nous.cli.output import console, err_console
from nous.cli.runtime import CliState, fail
from nous.config import Settings

app = typer.Typer(
    name="nous",
    help=(
        "Nous — long-term memory for AI agents.\n\n"
        "Stores facts, episodes, procedures, censors and decisions, and recalls them with hybrid "
        "dense + keyword search. Data lives in an SQLite file under ~/.nous unless "
        "NOUS_DATABASE_URL (or --db) points elsewhere, e.g. postgresql://user@host/db.\n\n"
        'Start with:  nous demo   ·   nous learn "..."   ·   nous recall "..."\n\n'
        "Example: nous demo"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        console.print(f"nous {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    db: Annotated[str | None, typer.Option("--db", help="Database URL; overrides NOUS_DATABASE_URL.")] = None,
    home: Annotated[
        Path | None,
        typer.Option(
            "--home", help="Local state directory (the default store's folder); overrides NOUS_HOME."
        ),
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Agent id; overrides NOUS_AGENT_ID.")] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", is_eager=True, callback=_show_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    try:
        settings = Settings()
    except ValidationError as exc:
        err = exc.errors()[0]
        raise fail(f"bad configuration: NOUS_{str(err['loc'][0]).upper()}: {err['msg']}", 2) from None
    if home is not None:
        settings = settings.model_copy(update={"home": home.expanduser()})
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
thread_commands.register(app)
app.command()(demo.demo)
app.add_typer(bench.app, name="bench")


# Help texts are written as wrapped docstrings. The help renderer keeps every line break inside a
# paragraph, so a paragraph would break where the source line ended (mid-sentence) and then again
# at the terminal's width. Lines are therefore joined into paragraphs before rendering; a line
# that starts an example or a list item, or is indented, stays on its own line, and a paragraph
# that starts with "\b" is kept exactly as written (the marker itself is dropped).
_OWN_LINE = ("Example:", "nous ", "$ ", "- ", "* ")


def reflow(text: str) -> str:
    """``text`` with each paragraph's wrapped lines joined (see the rule above)."""
    paragraphs = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        if paragraph.startswith("\b"):
            paragraphs.append(paragraph.removeprefix("\b").strip("\n"))
            continue
        lines: list[str] = []
        for line in paragraph.split("\n"):
            if lines and not line.startswith(_OWN_LINE) and not line[:1].isspace():
                lines[-1] = f"{lines[-1]} {line.strip()}"
            else:
                lines.append(line.rstrip())
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def _reflow_app(typer_app: typer.Typer) -> None:
    """Reflow the help of every command and group of ``typer_app``, recursively."""
    if isinstance(typer_app.info.help, str):
        typer_app.info.help = reflow(typer_app.info.help)
    found = typer_app.registered_callback
    callbacks = [found.callback] if found is not None and callable(found.callback) else []
    for command in typer_app.registered_commands:
        if isinstance(command.help, str):
            command.help = reflow(command.help)
        elif command.callback is not None:
            callbacks.append(command.callback)
    for callback in callbacks:
        if callback.__doc__:
            callback.__doc__ = reflow(callback.__doc__)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _reflow_app(group.typer_instance)


_reflow_app(app)


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
