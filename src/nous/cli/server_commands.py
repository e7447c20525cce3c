"""``nous serve`` and ``nous keys`` (create, list, revoke)."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from nous.api import Nous
from nous.cli.output import console, print_json, table
from nous.cli.runtime import fail, state, with_nous
from nous.models.keys import ApiKey
from nous.server.keys import create_key, revoke_key

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]

keys_app = typer.Typer(
    name="keys", no_args_is_help=False, context_settings={"help_option_names": ["-h", "--help"]}
)


def register(root: typer.Typer) -> None:
    root.command("serve")(serve)
    root.command("mcp")(mcp)
    root.add_typer(keys_app, name="keys")


def mcp(ctx: typer.Context) -> None:
    """Serve the agent's memory to an MCP client over stdio (the agent: --agent or NOUS_AGENT_ID).

    Tools: remember, recall, recall_recent, record_decision, check_similar, check_action, context,
    forget. In an MCP client's configuration:

      {"mcpServers": {"nous": {"command": "nous", "args": ["--agent", "my-agent", "mcp"]}}}

    Example: nous --agent my-agent mcp
    """
    from nous.server.mcp import create_mcp_server

    st = state(ctx)
    settings = st.settings
    create_mcp_server(lambda: Nous(settings, agent_id=st.agent_id)).run("stdio")


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
) -> None:
    """Serve the REST API (OpenAPI at /openapi.json, docs at /docs) over the configured store.

    Every route but /health needs `Authorization: Bearer KEY` with a key from `nous keys create`;
    a key reads and writes only its own agent's memory.

    Example: nous keys create --agent support-bot && nous serve --port 8765
    """
    import uvicorn

    from nous.server import create_app
    from nous.server.guards import guarded_protocol

    if no_auth and not _is_loopback(host):
        raise fail("--no-auth only binds a loopback address (127.0.0.1 or ::1)", 2)
    settings = state(ctx).settings.model_copy(update={"agent_id": state(ctx).agent_id})
    token = _prepare_demo(ctx) if demo else None
    app = create_app(settings, auth=not no_auth)
    base = f"http://{host}:{port}"
    console.print(
        f"[green]serving[/green] {base}  ·  API docs {base}/docs  ·  OpenAPI {base}/openapi.json  ·  "
        f"health {base}/health" + ("  ·  [yellow]no auth[/yellow]" if no_auth else ""),
        highlight=False,
    )
    auth = "" if no_auth else f' -H "Authorization: Bearer {token or "$KEY"}"'
    console.print(
        f'try:  curl -s {base}/v1/recall{auth} -d \'{{"query": "what did we decide?", "limit": 3}}\'\n'
        f"MCP:  nous --agent {settings.agent_id} mcp   (stdio; see the README for the client config)",
        highlight=False,
        markup=False,
    )
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=30,
        http=guarded_protocol(settings.request_timeout_s),  # slow clients are cut off
    )


def _prepare_demo(ctx: typer.Context) -> str | None:
    """Sample data into an empty store, and a key for the agent if the store has none (printed
    once); returns that key, or None if keys existed already."""
    from nous.cli.demo import load_sample, store_sample

    async def act(nous: Nous) -> str | None:
        if not sum((await nous.stats()).active_by_kind.values()):
            await store_sample(nous, load_sample())
            console.print("[dim]stored the sample conversation (empty store)[/dim]")
        if await nous.store.api_keys():
            console.print("[dim]API keys exist: use yours, or `nous keys create --agent NAME`[/dim]")
            return None
        _, token = await create_key(nous.store, agent_id=nous.agent_id, name="quick start")
        console.print(f"[green]created an API key for agent {nous.agent_id}[/green] (shown once): {token}")
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
    wanted = key_id.split("_")[1] if key_id.startswith("nous_") and key_id.count("_") >= 2 else key_id

    async def act(nous: Nous) -> bool:
        return await revoke_key(nous.store, wanted)

    changed = with_nous(ctx, act)
    console.print(f"[green]revoked[/green] {wanted}" if changed else f"{wanted} was already revoked")
