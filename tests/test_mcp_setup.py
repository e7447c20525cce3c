"""`nous mcp config` as a user pastes it: each client's block is parsed the way that client reads
it, and its command is started the way an MCP client starts one (an argv list, no shell, the
client's own small environment and another working directory), speaking MCP over stdio to the
store the config named, on both backends."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from nous import Nous, Settings
from nous.cli.app import app
from nous.cli.mcp_commands import McpClient
from tests.test_mcp import TOOLS, _data

# What a client's spawn carries besides its default environment (HOME, PATH, ...): only what
# this machine needs to run Python at all. PYTHONPATH is set when the suite runs a checkout's
# sources with another environment's interpreter; a client of an installed `nous` has none.
MACHINE = ("PYTHONPATH", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def client_env() -> dict[str, str]:
    """The variables, beyond the MCP SDK's default ones, that a client spawn gets here (paths
    made absolute: the client starts the server in another working directory)."""
    env = {k: os.environ[k] for k in MACHINE if k in os.environ}
    if "PYTHONPATH" in env:
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep))
    return env


def as_client_spawns(argv: list[str], cwd: Path) -> StdioServerParameters:
    """How an MCP client starts a stdio server: command and args, no shell, no NOUS_ settings."""
    assert "=" not in argv[0] and Path(argv[0]).is_absolute(), argv
    return StdioServerParameters(command=argv[0], args=argv[1:], env=client_env(), cwd=cwd)


def printed_config(cli: CliRunner, root_options: list[str], client: McpClient) -> str:
    result = cli.invoke(app, [*root_options, "mcp", "config", "--client", client.value])
    assert result.exit_code == 0, result.output
    assert client.value in result.stderr  # where to put it, on stderr: stdout is the block alone
    return result.stdout


def argv_of(client: McpClient, printed: str) -> list[str]:
    """The command a client would run, read from the block the way that client reads it."""
    if client is McpClient.CLAUDE_CODE:
        words = shlex.split(printed)
        assert words[:4] == ["claude", "mcp", "add", "nous"] and words[4] == "--", words
        return words[5:]
    block: dict[str, Any] = json.loads(printed)
    if client is McpClient.VSCODE:
        entry = block["servers"]["nous"]
        assert entry["type"] == "stdio"
    elif client is McpClient.GENERIC:
        entry = block
    else:
        assert list(block) == ["mcpServers"]
        entry = block["mcpServers"]["nous"]
    assert isinstance(entry["command"], str) and all(isinstance(a, str) for a in entry["args"])
    return [entry["command"], *entry["args"]]


async def test_every_clients_config_starts_nous_on_the_named_store(
    cli: CliRunner, tmp_path: Path, database_url: str
) -> None:
    """Each client's block, read as that client reads it, gives one command; started as a client
    starts it (each distinct command once: today all six give the same), it lists the tools and
    stores into the store named by --db."""
    elsewhere = tmp_path / "client-cwd"
    elsewhere.mkdir()
    commands: dict[tuple[str, ...], list[McpClient]] = {}
    for client in McpClient:
        argv = argv_of(client, printed_config(cli, ["--db", database_url, "--agent", "desk"], client))
        assert argv[1:] == ["--db", database_url, "--agent", "desk", "mcp"], argv
        commands.setdefault(tuple(argv), []).append(client)
    for command, clients in commands.items():
        async with Client(as_client_spawns(list(command), elsewhere), read_timeout_seconds=120) as session:
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS, clients
            stored = _data(await session.call_tool("remember", {"content": "Deploys happen on Tuesdays"}))
            assert stored["status"] in ("created", "duplicate"), clients
    settings = Settings(home=tmp_path / "unused", database_url=database_url, events_worker="off")
    async with Nous(settings, agent_id="desk") as nous:
        assert [m.content for m in await nous.memories("fact")] == ["Deploys happen on Tuesdays"]


@pytest.mark.parametrize("given", ["option", "setting"])
async def test_the_home_reaches_the_command_as_an_option(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """--home, or NOUS_HOME in the environment that printed it: the command carries --home with
    an absolute path, so the client needs neither the variable nor the same working directory.
    (The config is printed in-process; the command it prints is started as a client starts it.)"""
    home = tmp_path / "home"
    root = ["--home", str(home)] if given == "option" else []
    if given == "setting":
        monkeypatch.setenv("NOUS_HOME", str(home))
    else:
        monkeypatch.delenv("NOUS_HOME")  # the cli fixture's
    argv = argv_of(McpClient.GENERIC, printed_config(cli, [*root, "--agent", "desk"], McpClient.GENERIC))
    assert argv[1:] == ["--home", str(home), "--agent", "desk", "mcp"]
    async with Client(as_client_spawns(argv, tmp_path), read_timeout_seconds=120) as session:
        stored = _data(await session.call_tool("remember", {"content": "Prefers short answers"}))
        assert stored["status"] == "created"
    async with Nous(Settings(home=home, events_worker="off"), agent_id="desk") as nous:
        assert [m.content for m in await nous.memories("fact")] == ["Prefers short answers"]


def test_json_gives_scripts_the_command_and_each_clients_block(cli: CliRunner, tmp_path: Path) -> None:
    for client in McpClient:
        result = cli.invoke(app, ["--home", str(tmp_path), "mcp", "config", "-c", client.value, "--json"])
        assert result.exit_code == 0, result.output
        found = json.loads(result.stdout)
        argv = [found["command"], *found["args"]]
        assert argv[1:] == ["--home", str(tmp_path), "--agent", "default", "mcp"]
        printed = found["config"] if isinstance(found["config"], str) else json.dumps(found["config"])
        assert argv_of(client, printed) == argv and found["where"]
