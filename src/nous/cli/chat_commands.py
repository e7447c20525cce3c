"""``nous chat``: talk to a model that remembers, through the agent runner."""

from __future__ import annotations

import sys
import uuid
from typing import TYPE_CHECKING, Annotated

import typer

from nous.cli.output import console, err_console
from nous.cli.runtime import run, state

if TYPE_CHECKING:
    from nous.api import Nous
    from nous.llm import LLMProvider


def register(root: typer.Typer) -> None:
    root.command("chat")(chat)


def chat(
    ctx: typer.Context,
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Continue this session (default: a new one).")
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", help="The user you are (scopes what is remembered).")
    ] = None,
) -> None:
    """Chat with the configured language model, with Nous as its memory: each message runs the
    turn loop (frame, context, censors checked before every tool call, memory tools), and the
    session ends (and is summarised) when you leave. Type `exit` or press Ctrl-D to leave.

    Needs NOUS_LLM_PROVIDER=openai (any OpenAI-compatible API, e.g. NOUS_LLM_API_BASE=http://localhost:11434/v1
    for Ollama) or anthropic.

    Example: NOUS_LLM_PROVIDER=openai NOUS_LLM_API_BASE=http://localhost:11434/v1 NOUS_LLM_MODEL=llama3.1 nous chat
    """
    from nous.agent import AgentRunner
    from nous.api import Nous
    from nous.llm import create_llm_provider

    st = state(ctx)
    session_id = session or f"chat-{uuid.uuid4().hex[:8]}"
    interactive = sys.stdin.isatty()

    async def stream(piece: str) -> None:  # the reply as it arrives
        sys.stdout.write(piece)
        sys.stdout.flush()

    async def go() -> None:
        llm = create_llm_provider(st.settings)
        async with Nous(st.settings, agent_id=st.agent_id, llm_provider=llm) as nous:
            runner = AgentRunner(nous, llm, session_id, user_id=user, actor="cli")
            if interactive:
                err_console.print(
                    f"[dim]session {session_id} · frame-aware memory on · `exit` to leave[/dim]"
                )
            try:
                while True:
                    if interactive:
                        err_console.print("[bold]you>[/bold] ", end="")
                    line = sys.stdin.readline()
                    if not line or line.strip() in {"exit", "quit"}:
                        break
                    if not line.strip():
                        continue
                    if interactive:
                        console.print("[bold cyan]nous>[/bold cyan] ", end="")
                    outcome = await runner.turn(line.strip(), on_text=stream)
                    tools = f" [dim]({', '.join(outcome.tools_used)})[/dim]" if outcome.tools_used else ""
                    console.print(tools if interactive else "", highlight=False)
                    if not outcome.reply.strip():
                        err_console.print(_empty_answer(llm), highlight=False, soft_wrap=True)
            finally:  # leaving ends the session, so the pipeline summarises it
                if await _exists(nous, session_id) and not (await nous.session(session_id)).ended:
                    await nous.end_session(session_id, actor="cli")

    run(go())


def _empty_answer(llm: LLMProvider) -> str:
    """What to say when the model's answer had no text."""
    model = f" {llm.model}" if llm.model else ""
    return (
        f"[yellow]warning:[/yellow] the {llm.name} model{model} sent an empty answer: check "
        "NOUS_LLM_MODEL and NOUS_LLM_API_BASE, and the server's log"
    )


async def _exists(nous: Nous, session_id: str) -> bool:
    from nous.errors import NotFoundError

    try:
        await nous.session(session_id)
    except NotFoundError:
        return False
    return True
