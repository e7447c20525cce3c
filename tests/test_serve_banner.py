"""`nous serve` as a user meets it: a real process on a free loopback port over an SQLite store in
a temporary NOUS_HOME. Its banner's commands run as printed, a busy port is one line and exit 2,
the access log is optional, and SIGTERM ends it even with a stalled request open."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client

from nous import Nous
from nous.events.context import PipelineContext
from nous.events.worker import EventWorker
from nous.models.events import Event, EventKind, EventStatus
from nous.storage import WriteOp
from tests.llm_servers import ChatServer
from tests.test_mcp import TOOLS, _data
from tests.test_mcp_setup import as_client_spawns

NOUS = str(Path(sys.executable).parent / "nous")
CURL = "/usr/bin/curl"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    # A narrow terminal: a renderer that wraps would split the key and the curl lines.
    return {**env, "NOUS_HOME": str(home), "COLUMNS": "40", **extra}


class Serve:
    """A `nous serve` subprocess; ``banner`` is what it printed before serving."""

    def __init__(self, home: Path, *args: str, **env: str) -> None:
        self.home = home
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [NOUS, "serve", "--port", str(self.port), *args],
            env=_env(home, **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.proc.stdout is not None
        self.banner = ""
        while "\nMCP:" not in self.banner:
            line = self.proc.stdout.readline()
            assert line, self.banner
            self.banner += line
        deadline = time.monotonic() + 120  # readiness, not a timing assertion
        while True:
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None and time.monotonic() < deadline, self.banner
            time.sleep(0.1)

    def line(self, prefix: str) -> str:
        (found,) = [ln for ln in self.banner.splitlines() if ln.startswith(prefix)]
        return found[len(prefix) :].strip()

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> str:
        """Signal it (SIGTERM by default), wait for the exit (a generous hang guard), and the rest
        of the output."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rest, _ = self.proc.communicate(timeout=60)
        return rest


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """One `nous serve --demo` on a first run, shared by the tests that run what its banner
    printed (each adds at most a memory, and asserts only on what it added or the sample data)."""
    served = Serve(tmp_path_factory.mktemp("demo") / "home", "--demo")
    yield served
    served.stop()


def _shell(command: str) -> str:
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, (command, done.stdout, done.stderr)
    return done.stdout


def test_curl_is_installed() -> None:
    assert Path(CURL).is_file(), "the banner tests run the printed curl lines"


def test_the_banners_curl_lines_work_verbatim(demo: Serve) -> None:
    store, recall = demo.line("store:"), demo.line("recall:")
    assert store.startswith("curl ") and "Content-Type: application/json" in store
    stored = json.loads(_shell(store))
    assert stored.get("id") and stored.get("status") != 422, stored  # 201: a memory came back
    found = json.loads(_shell(recall))
    assert any("eu-west-1" in hit["content"] for hit in found["results"]), found


def test_the_key_and_commands_are_each_on_one_line(demo: Serve) -> None:
    (key_line,) = [ln for ln in demo.banner.splitlines() if "shown once" in ln]
    key = key_line.rsplit(" ", 1)[1]
    assert key.startswith("nous_") and len(key) > 40  # wider than the 40-column terminal
    assert f"Bearer {key}" in demo.line("store:") and f"Bearer {key}" in demo.line("recall:")


def test_the_mcp_command_runs_as_printed(demo: Serve) -> None:
    """The stdio MCP line names a `nous` that exists and the served store: the same command
    with `stats --json` instead of `mcp` sees the sample data the server stored."""
    command = demo.line("MCP:")
    assert command.endswith(" mcp")
    stats = json.loads(_shell(command.removesuffix(" mcp") + " stats --json"))
    assert sum(stats["active_by_kind"].values()) > 0, stats


async def test_the_mcp_command_starts_as_a_client_starts_it(demo: Serve, tmp_path: Path) -> None:
    """The MCP line is an argv with no `VAR=value` prefix: started as an MCP client starts a
    server (no shell, the client's own environment, another working directory) it lists the
    tools and recalls the sample data the server stored; the config line prints the same argv."""
    argv = shlex.split(demo.line("MCP:"))
    async with Client(as_client_spawns(argv, tmp_path), read_timeout_seconds=120) as session:
        assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        hits = _data(await session.call_tool("recall", {"query": "Where is the offsite?", "limit": 5}))
        assert any("Lisbon" in hit["content"] for hit in hits), hits
    config = json.loads(
        _shell(demo.line("MCP client config (Claude Desktop, Cursor, VS Code, Claude Code, Windsurf):"))
    )
    assert [config["mcpServers"]["nous"]["command"], *config["mcpServers"]["nous"]["args"]] == argv


def test_without_a_new_key_the_banner_says_how_to_make_one(demo: Serve) -> None:
    """Another `nous serve --demo` on the home where the first run made a key."""
    assert "shown once" in demo.banner
    again = Serve(demo.home, "--demo")
    try:
        assert "shown once" not in again.banner
        make = again.line("a key:")
        assert make.startswith("KEY=$(") and '"Authorization: Bearer $KEY"' in again.line("recall:")
        recalled = json.loads(_shell(f"{make} && {again.line('recall:')}"))
        assert "results" in recalled, recalled
    finally:
        again.stop()


def test_a_busy_port_is_one_line_and_exit_2_before_anything_else(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run(
            [NOUS, "serve", "--demo", "--port", str(port)],
            env=_env(tmp_path / "home"),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 2, done
    assert done.stdout == ""  # no banner, no key, no sample data stored
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert str(port) in done.stderr and "--port" in done.stderr and "in use" in done.stderr


def test_the_access_log_is_on_with_the_setting(tmp_path: Path) -> None:
    """NOUS_ACCESS_LOG=true logs requests as ``--access-log`` does (the flag, and the default
    without either, are in the test below)."""
    logged = Serve(tmp_path / "home", "--no-auth", NOUS_ACCESS_LOG="true")
    assert httpx.get(f"{logged.url}/health?probe=1").status_code == 200
    assert "GET /health?probe=1" in logged.stop()


def test_the_access_log_and_calls_to_the_model_are_logged_only_with_the_flag(tmp_path: Path) -> None:
    """The access log is optional (off by default, on with ``--access-log``). With a language
    model configured, each call to its API is an httpx request: a line per call only when the
    access log is on."""
    upstream = ChatServer("openai")
    try:
        model = {"NOUS_LLM_PROVIDER": "openai", "NOUS_LLM_API_BASE": upstream.url, "COLUMNS": "200"}
        for probe, (args, shown) in enumerate((([], False), (["--access-log"], True))):
            served = Serve(tmp_path / "home", "--no-auth", *args, **model)
            assert httpx.get(f"{served.url}/health?probe={probe}").status_code == 200
            assert httpx.get(f"{served.url}/v1/models").status_code == 200
            out = served.stop()
            assert (f"GET /health?probe={probe}" in out) is shown, out
            assert ("HTTP Request:" in out) is shown, out
        assert [r["path"] for r in upstream.requests] == ["/v1/models", "/v1/models"]
    finally:
        upstream.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_server_with_a_stalled_request_open(tmp_path: Path, sig: signal.Signals) -> None:
    """SIGTERM and SIGINT (Ctrl+C) end it: a client that sent half a body would hold the server for NOUS_REQUEST_TIMEOUT_S (here 600)
    if shutdown waited for it; the in-process event worker has the sample data's events."""
    served = Serve(tmp_path / "home", "--demo", NOUS_REQUEST_TIMEOUT_S="600")
    with socket.create_connection(("127.0.0.1", served.port)) as stalled:
        stalled.sendall(
            b"POST /v1/recall HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"qu'
        )
        rest = served.stop(sig)  # proc.communicate(timeout=60): a hang fails here
    assert served.proc.returncode in (0, -sig, 128 + sig), rest
    assert "Traceback" not in rest, rest


def test_the_readmes_curl_examples_work(demo: Serve) -> None:
    """The README's REST examples, on this server's port with the demo's key as $KEY."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Server (REST API)")[1].split("```bash")[1].split("```")[0]
    commands = [c.strip() for c in block.replace("\\\n", " ").splitlines() if c.strip().startswith("curl")]
    assert len(commands) == 2, block
    key = demo.banner.split("shown once): ")[1].split()[0]
    prefix = f"KEY={key} && "
    port = f"127.0.0.1:{demo.port}"
    stored = json.loads(_shell(prefix + commands[0].replace("localhost:8765", port)))
    assert stored.get("id"), stored
    found = json.loads(_shell(prefix + commands[1].replace("localhost:8765", port)))
    assert any("eu-west-1" in hit["content"] for hit in found["results"]), found


async def test_a_stopping_worker_takes_no_event_after_the_one_in_hand(nous: Nous) -> None:
    """Shutdown does not wait for the rest of a claimed batch: once stop is set, the event in
    hand finishes and the others are left for their lease to run out (as after a crash)."""
    sessions = [
        {"id": f"s{i}", "messages": [{"role": "user", "content": f"I planted {i} olive trees today."}]}
        for i in range(3)
    ]
    await nous.ingest(json.dumps({"sessions": sessions}))
    stop = asyncio.Event()
    handled: list[str] = []

    async def stopping(event: Event, context: PipelineContext) -> list[WriteOp]:
        handled.append(event.id)
        stop.set()  # as SIGTERM would, while this event is being handled
        return []

    worker = EventWorker(nous.pipeline_context(), handlers=dict.fromkeys(EventKind, (stopping,)))
    report = await worker.run_once(stop=stop)
    assert len(handled) == 1 and report.handled == 1
    leased = (await nous.event_counts()).get(EventStatus.RUNNING, 0)
    assert leased >= 2  # still leased to the stopped worker, not done
