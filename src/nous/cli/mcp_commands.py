"""``nous mcp`` (the stdio MCP server) and ``nous mcp config`` (an MCP client's configuration).

An MCP client starts its server from a ``command`` and an ``args`` list, with no shell and with
its own environment and working directory. So the command printed here names the store by
options (``--home`` or ``--db``), never by a ``NOUS_HOME=...`` prefix, and names ``nous`` by its
absolute path (a desktop app does not read the shell's ``PATH``)."""

from __future__ import annotations

import json
import os
import shlex
import sys
import sysconfig
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from nous.cli.output import err_console, print_json
from nous.cli.runtime import state
from nous.config import Settings

mcp_app = typer.Typer(
    name="mcp", no_args_is_help=False, context_settings={"help_option_names": ["-h", "--help"]}
)


class McpClient(StrEnum):
    """The clients whose configuration `nous mcp config` prints."""

    CLAUDE_DESKTOP = "claude-desktop"
    CURSOR = "cursor"
    VSCODE = "vscode"
    CLAUDE_CODE = "claude-code"
    WINDSURF = "windsurf"
    GENERIC = "generic"


# Where each client reads its configuration (said on stderr, so stdout is the block alone).
WHERE = {
    McpClient.CLAUDE_DESKTOP: "merge into claude_desktop_config.json (Claude Desktop: Settings → Developer → "
    "Edit Config), then restart the app",
    McpClient.CURSOR: "merge into ~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project)",
    McpClient.VSCODE: "merge into .vscode/mcp.json (one workspace) or the user mcp.json (MCP: Open User "
    "Configuration)",
    McpClient.CLAUDE_CODE: "run it in a shell (add --scope user before the name for every project)",
    McpClient.WINDSURF: "merge into ~/.codeium/windsurf/mcp_config.json",
    McpClient.GENERIC: "the server entry any stdio MCP client takes: command, args",
}


def nous_executable() -> list[str]:
    """The running ``nous`` as an absolute argv prefix: the console script that was run, else the
    one installed beside this Python (e.g. .venv/bin/nous), else ``python -m nous``."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name in ("nous", "nous.exe") and argv0.is_file():
        return [os.path.abspath(argv0)]
    name = "nous.exe" if os.name == "nt" else "nous"
    script = Path(sysconfig.get_path("scripts")) / name
    if script.is_file():
        return [str(script)]
    return [os.path.abspath(sys.executable), "-m", "nous"]


def store_options(settings: Settings) -> list[str]:
    """The root options that open the store ``settings`` name, from any working directory:
    ``--db URL`` (a relative SQLite path made absolute) or ``--home DIR``."""
    url = settings.database_url
    if not url:
        return ["--home", os.path.abspath(settings.home.expanduser())]
    if url.startswith("sqlite://"):
        raw = url[len("sqlite://") :]
        raw = raw[1:] if raw.startswith("/") else raw  # sqlite:///rel.db is relative, ////abs.db absolute
        if raw:
            url = f"sqlite:///{os.path.abspath(Path(raw).expanduser())}"
    return ["--db", url]


def mcp_argv(settings: Settings, agent_id: str) -> list[str]:
    """The argv an MCP client runs for this store and agent (argv[0] is an absolute path)."""
    return [*nous_executable(), *store_options(settings), "--agent", agent_id, "mcp"]


def client_config(client: McpClient, argv: list[str], name: str = "nous") -> str:
    """What ``client`` takes to start ``argv`` as the MCP server ``name``: a JSON block, or for
    Claude Code the `claude mcp add` command line."""
    command, args = argv[0], argv[1:]
    if client is McpClient.CLAUDE_CODE:
        return shlex.join(["claude", "mcp", "add", name, "--", command, *args])
    block: dict[str, Any]
    if client is McpClient.VSCODE:
        block = {"servers": {name: {"type": "stdio", "command": command, "args": args}}}
    elif client is McpClient.GENERIC:
        block = {"type": "stdio", "command": command, "args": args}
    else:  # Claude Desktop, Cursor and Windsurf read the same shape
        block = {"mcpServers": {name: {"command": command, "args": args}}}
    return json.dumps(block, indent=2, ensure_ascii=False)


@mcp_app.callback(invoke_without_command=True)
def mcp(ctx: typer.Context) -> None:
    """Serve the agent's memory to an MCP client over stdio (the agent: --agent or NOUS_AGENT_ID;
    the store: --home, --db or their NOUS_ settings).

    Tools: context, reply and end_session (the turn loop), remember, recall, recall_recent,
    record_decision, check_similar, check_action, create_censor, forget; resources: identity,
    recent episodes, censors. `nous mcp config --client NAME` prints what to paste into a client
    (Claude Desktop, Cursor, VS Code, Claude Code, Windsurf).

    Example: nous --home ~/.nous --agent my-agent mcp
    """
    if ctx.invoked_subcommand is not None:
        return
    from nous.api import Nous
    from nous.server.mcp import create_mcp_server

    st = state(ctx)
    settings = st.settings
    create_mcp_server(lambda: Nous(settings, agent_id=st.agent_id)).run("stdio")


@mcp_app.command("config")
def config(
    ctx: typer.Context,
    client: Annotated[
        McpClient, typer.Option("--client", "-c", help="The MCP client to configure.")
    ] = McpClient.CLAUDE_DESKTOP,
    name: Annotated[str, typer.Option("--name", help="The server's name in the client.")] = "nous",
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON object for scripts: command, args, config, where."),
    ] = False,
) -> None:
    """Print an MCP client's configuration for `nous mcp` on this store and agent: JSON for
    Claude Desktop, Cursor, VS Code and Windsurf, a `claude mcp add` line for Claude Code. The
    command is this `nous` by its absolute path, with the store as --home or --db (from the root
    options or NOUS_HOME / NOUS_DATABASE_URL) and the agent as --agent. Where to put it is said on
    stderr. Other NOUS_ settings (an embedding provider, say) go in the client's "env" block.

    Example: nous --agent my-agent mcp config --client cursor
    """
    st = state(ctx)
    argv = mcp_argv(st.settings, st.agent_id)
    printed = client_config(client, argv, name)
    if as_json:
        config = printed if client is McpClient.CLAUDE_CODE else json.loads(printed)
        print_json(
            {
                "client": client.value,
                "command": argv[0],
                "args": argv[1:],
                "config": config,
                "where": WHERE[client],
            }
        )
        return
    print(printed)
    err_console.print(f"[dim]{client.value}: {WHERE[client]}[/dim]", highlight=False, soft_wrap=True)
