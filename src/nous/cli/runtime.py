"""Running async work from CLI commands, with errors turned into one clear line."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import typer

from nous.cli.output import err_console
from nous.config import Settings
from nous.errors import GuardrailError, InvalidInputError, NotFoundError, NousError

if TYPE_CHECKING:
    from nous.api import Nous

T = TypeVar("T")


@dataclass
class CliState:
    """Options given before the command."""

    settings: Settings
    agent_id: str


def state(ctx: typer.Context) -> CliState:
    obj = ctx.find_root().obj
    assert isinstance(obj, CliState)
    return obj


def fail(message: str, code: int = 1) -> typer.Exit:
    err_console.print(f"[bold red]error:[/bold red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def run(coro: Awaitable[T]) -> T:
    """Run a coroutine; NousError becomes one line on stderr and a non-zero exit: 2 for what the
    caller can fix (bad input, an unknown id, a guardrail's refusal), 1 for failures of the store
    or a model."""
    logging.getLogger("nous").setLevel(logging.WARNING)
    try:
        return asyncio.run(coro)  # type: ignore[arg-type]
    except (InvalidInputError, NotFoundError, GuardrailError) as exc:
        raise fail(str(exc), 2) from None
    except NousError as exc:
        raise fail(str(exc), 1) from None
    except KeyboardInterrupt:
        raise fail("interrupted", 130) from None


def with_nous(ctx: typer.Context, action: Callable[[Nous], Awaitable[T]]) -> T:
    """Open Nous with the CLI's settings, run ``action``, close. A one-shot command runs no event
    worker (it would be stopped at exit): events wait for `nous worker` or `nous maintain --events`."""
    from nous.api import Nous

    st = state(ctx)
    settings = st.settings.model_copy(update={"events_worker": "off"})

    async def go() -> T:
        async with Nous(settings, agent_id=st.agent_id) as nous:
            return await action(nous)

    return run(go())


def read_text_arg(text: str) -> str:
    """``-`` reads the text from stdin."""
    if text == "-":
        try:
            return sys.stdin.read()
        except UnicodeDecodeError:
            raise fail("stdin is not valid UTF-8 text", 2) from None
    return text
