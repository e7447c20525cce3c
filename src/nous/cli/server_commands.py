"""``nous serve`` and ``nous keys`` (create, list, revoke)."""

from __future__ import annotations

import errno
import ipaddress
import os
import shlex
import shutil
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nous.cli.mcp_commands import mcp_app, mcp_argv, store_options
from nous.cli.output import console, print_json, table
from nous.cli.runtime import fail, state, with_nous
from nous.config import Settings

if TYPE_CHECKING:
    from nous.api import Nous
    from nous.models.keys import ApiKey

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]

keys_app = typer.Typer(
    name="keys", no_args_is_help=False, context_settings={"help_option_names": ["-h", "--help"]}
)


def register(root: typer.Typer) -> None:
    root.command("serve")(serve)
    root.add_typer(mcp_app, name="mcp")
    root.add_typer(keys_app, name="keys")


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="TCP port.")] = 8765,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="Serve the default agent without API keys (loopback only).")
    ] = False,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="First run: store the sample data if the store is empty and create a key if there is none.",
        ),
    ] = False,
    access_log: Annotated[
        bool, typer.Option("--access-log", help="Log each request on stdout (or NOUS_ACCESS_LOG=true).")
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            max=64,
            help="Processes serving the same store, each on its own core (SQLite file or PostgreSQL).",
        ),
    ] = 1,
) -> None:
    """Serve the REST API (OpenAPI at /openapi.json, docs at /docs) over the configured store.

    Every route but /health needs `Authorization: Bearer KEY` with a key from `nous keys create`;
    a key reads and writes only its own agent's memory. With --workers N, N processes share the
    port and the store: a write through one is seen by the others' next read.

    Example: nous keys create --agent support-bot && nous serve --port 8765 --workers 2
    """
    from nous.server.run import serve_here, serve_workers, spread_connections

    if no_auth and not _is_loopback(host):
        raise fail("--no-auth only binds a loopback address (127.0.0.1 or ::1)", 2)
    settings = state(ctx).settings.model_copy(update={"agent_id": state(ctx).agent_id})
    # The port is taken before anything is printed or stored: a busy port is one line and exit 2,
    # not a banner followed by uvicorn's own bind error among log lines.
    sock = _bind(host, port, shared_port=workers > 1 and spread_connections())
    token = _prepare_demo(ctx) if demo else None
    for line in banner(host, port, settings=settings, token=token, no_auth=no_auth):
        print(line, flush=True)  # plain print: a terminal renderer would wrap the key and commands
    logged = access_log or settings.access_log
    if workers == 1:
        serve_here(sock, settings, auth=not no_auth, access_log=logged)
        return
    status = serve_workers(sock, settings, workers=workers, auth=not no_auth, access_log=logged)
    if status:
        raise typer.Exit(status)


def _bind(host: str, port: int, *, shared_port: bool = False) -> socket.socket:
    """A listening-ready socket on ``host:port``; a busy or forbidden port exits 2 with one line.
    ``shared_port``: the workers will bind sockets of their own to the same port (SO_REUSEPORT)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise fail(
            f"cannot listen on {host}: {exc.strerror}; pass --host with an address of this machine", 2
        ) from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: restart at once
    if shared_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise fail(
                f"port {port} on {host} is already in use: pass --port with a free port, "
                "or stop the process that holds it",
                2,
            ) from None
        raise fail(f"cannot listen on {host}:{port}: {exc.strerror}; pass --port or --host", 2) from None
    return sock


def nous_command() -> str:
    """How to run this same `nous` from a shell: `nous` when that is what PATH finds, else the
    absolute path of the running executable (e.g. .venv/bin/nous), or `python -m nous`."""
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).name in ("nous", "nous.exe") and Path(argv0).is_file():
        here = Path(os.path.abspath(argv0))
        found = shutil.which("nous")
        if found and Path(found).is_file() and os.path.samefile(found, here):
            return "nous"
        return shlex.quote(str(here))
    return f"{shlex.quote(sys.executable)} -m nous"


def banner(host: str, port: int, *, settings: Settings, token: str | None, no_auth: bool) -> list[str]:
    """What `nous serve` prints before serving: where things are, a `curl` to store and one to
    recall (runnable as printed; `$KEY` when no new key was made), and how to attach MCP: the
    stdio command as an MCP client runs it (an argv, no shell, no `VAR=value` prefix)."""
    agent_id, llm = settings.agent_id, settings.llm_provider
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    headers = "-H 'Content-Type: application/json'"
    if not no_auth:
        headers += f' -H "Authorization: Bearer {token or "$KEY"}"'
    remember = '{"type": "fact", "content": "The staging cluster runs in eu-west-1"}'
    recall = '{"query": "where does staging run?", "limit": 3}'
    nous = " ".join([nous_command(), *map(shlex.quote, store_options(settings))])
    agent = shlex.quote(agent_id)
    lines = [
        f"serving {base}  ·  API docs {base}/docs  ·  OpenAPI {base}/openapi.json  ·  health {base}/health"
        + ("  ·  no auth" if no_auth else ""),
        f"inspector: {base}/ui/",
        f"store:  curl -s {base}/v1/memories {headers} -d '{remember}'",
        f"recall: curl -s {base}/v1/recall {headers} -d '{recall}'",
        f"OpenAI-compatible chat with memory: base_url {base}/v1, the Nous key as api_key "
        + (
            f"(model: NOUS_LLM_PROVIDER={llm})"
            if llm != "offline"
            else "(set NOUS_LLM_PROVIDER and NOUS_LLM_API_BASE to enable; see docs/integrations.md)"
        ),
        f"MCP over HTTP: {base}/mcp/ "
        + (
            "(no key needed)"
            if no_auth
            else "with the header Authorization: Bearer KEY (see docs/integrations.md, MCP)"
        ),
        f"MCP client config (Claude Desktop, Cursor, VS Code, Claude Code, Windsurf): "
        f"{nous} --agent {agent} mcp config --client claude-desktop",
        f"MCP:  {shlex.join(mcp_argv(settings, agent_id))}",  # last: the stdio command, as printed
    ]
    if not token and not no_auth:
        lines.insert(1, f"a key: KEY=$({nous} keys create --agent {agent} | tail -1)")
    return lines


def _prepare_demo(ctx: typer.Context) -> str | None:
    """Sample data into an empty store, and a key for the agent if the store has none (printed
    once); returns that key, or None if keys existed already."""
    from nous.cli.demo import load_sample, store_sample
    from nous.server.keys import create_key

    async def act(nous: Nous) -> str | None:
        if not sum((await nous.stats()).active_by_kind.values()):
            await store_sample(nous, load_sample())
            console.print("[dim]stored the sample conversation (empty store)[/dim]")
        if await nous.store.api_keys():
            console.print("[dim]API keys exist: use yours, or make one as the `a key:` line shows[/dim]")
            return None
        _, token = await create_key(nous.store, agent_id=nous.agent_id, name="quick start")
        print(f"created an API key for agent {nous.agent_id} (shown once): {token}", flush=True)
        return token

    return with_nous(ctx, act)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _row(k: ApiKey) -> dict[str, object]:
    return k.model_dump(mode="json")


@keys_app.callback(invoke_without_command=True)
def keys(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """API keys of `nous serve`. Without a subcommand, list them (never their secrets).

    Example: nous keys create --agent support-bot --name "prod bot"
    """
    if ctx.invoked_subcommand is not None:
        return
    found = with_nous(ctx, lambda nous: nous.store.api_keys())
    if as_json:
        print_json([_row(k) for k in found])
        return
    table(
        "API keys",
        ["id", "agent", "user", "name", "admin", "created", "revoked"],
        [
            (
                k.id,
                k.agent_id or "",
                k.user_id or "",
                k.name,
                "yes" if k.admin else "",
                k.created_at.strftime("%Y-%m-%d %H:%M"),
                k.revoked_at.strftime("%Y-%m-%d %H:%M") if k.revoked_at else "",
            )
            for k in found
        ],
    )


@keys_app.command("create")
def keys_create(
    ctx: typer.Context,
    agent: Annotated[
        str | None, typer.Option("--agent", help="The agent whose memory the key opens.")
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", help="Narrow the key to one user of the agent.")
    ] = None,
    name: Annotated[str, typer.Option("--name", help="A label to recognise the key by.")] = "",
    admin: Annotated[
        bool, typer.Option("--admin", help="A key that manages keys, bound to no agent.")
    ] = False,
) -> None:
    """Create a key and print it once, alone on the last line (only its hash is stored).

    Example: KEY=$(nous keys create --agent support-bot | tail -1)
    """
    from nous.server.keys import create_key

    async def act(nous: Nous) -> tuple[ApiKey, str]:
        return await create_key(nous.store, agent_id=agent, user_id=user, name=name, admin=admin)

    key, token = with_nous(ctx, act)
    who = "admin" if key.admin else f"agent {key.agent_id}" + (f", user {key.user_id}" if key.user_id else "")
    console.print(f"[green]created[/green] key {key.id} for {who}; it is shown only now:", highlight=False)
    print(token)


@keys_app.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(help="The key's id (see `nous keys`), or the whole key.")],
) -> None:
    """Revoke a key: it stops working at once.

    Example: nous keys revoke 5e1f0c2a9b7d
    """
    from nous.server.keys import revoke_key

    wanted = key_id.split("_")[1] if key_id.startswith("nous_") and key_id.count("_") >= 2 else key_id

    async def act(nous: Nous) -> bool:
        return await revoke_key(nous.store, wanted)

    changed = with_nous(ctx, act)
    console.print(f"[green]revoked[/green] {wanted}" if changed else f"{wanted} was already revoked")
