"""The agent runner (`nous chat`) against a loopback model server speaking each protocol: the
frame's tools offered, censors checked before every tool call, memory written with the turn's
frame, post_turn recorded; and no model configured is a clear error."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from nous import Nous, Settings
from nous.agent import AgentRunner
from nous.cli.app import app
from nous.embeddings.base import EmbeddingProvider
from nous.errors import LLMError
from nous.llm import create_llm_provider
from nous.models import Fact
from tests.llm_servers import ChatServer, Reply


@pytest.fixture(params=["openai", "anthropic"])
def server(request: pytest.FixtureRequest) -> Iterator[ChatServer]:
    s = ChatServer(request.param)
    yield s
    s.close()


async def test_a_turn_runs_tools_through_censors_and_memory(
    server: ChatServer, database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    llm = create_llm_provider(
        Settings(llm_provider=server.protocol, llm_model="agent", llm_api_base=server.url, llm_timeout_s=10)
    )
    async with Nous(
        settings, database_url=database_url, embedding_provider=provider, llm_provider=llm
    ) as nous:
        await nous.learn("The production database is called ledger-prod")
        await nous.add_censor(r"learn_fact.*password", action="block", reason="never store secrets")
        server.script = [
            Reply(
                tool_calls=[
                    ("recall", {"query": "production database"}),
                    ("learn_fact", {"content": "The user's favourite editor is Helix", "subject": "user"}),
                    ("learn_fact", {"content": "The admin password is hunter2"}),
                ]
            ),
            Reply("Your production database is ledger-prod; I noted that you like Helix."),
        ]
        runner = AgentRunner(nous, llm, "chat-1")
        outcome = await runner.turn("What is our production database called? Also, I use Helix as my editor.")
        assert outcome.reply.startswith("Your production database is ledger-prod")
        assert outcome.tools_used == ["recall", "learn_fact"] and outcome.refused == ["learn_fact"]
        first, second = (r["body"] for r in server.requests)
        offered = first["tools"]
        names = {t["function"]["name"] if "function" in t else t["name"] for t in offered}
        assert {"recall", "learn_fact"} <= names
        system = first["messages"][0]["content"] if server.protocol == "openai" else first["system"]
        assert "ledger-prod" in system  # the turn's context is in the prompt
        tool_results = str(second["messages"][-3:])  # after the assistant's tool calls
        assert "ledger-prod" in tool_results  # the recall result went back to the model
        assert "never store secrets" in tool_results  # and so did the refusal, with its reason
        facts = {f.content: f for f in await nous.memories("fact") if isinstance(f, Fact)}
        assert "The admin password is hunter2" not in facts
        helix = facts["The user's favourite editor is Helix"]
        assert helix.session_id == "chat-1" and helix.encoded_frame == outcome.frame  # frame-tagged
        state = await nous.session("chat-1")
        assert state.turn_count == 1 and set(state.tools_used) == {"recall", "learn_fact"}


async def test_no_model_configured_says_how_to_set_one(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    async with Nous(settings, database_url=database_url, embedding_provider=provider) as nous:
        with pytest.raises(LLMError, match="NOUS_LLM_PROVIDER"):
            AgentRunner(nous, create_llm_provider(Settings()), "chat-2")


def test_nous_chat_reads_messages_and_ends_the_session(
    cli: CliRunner, server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOUS_LLM_PROVIDER", server.protocol)
    monkeypatch.setenv("NOUS_LLM_API_BASE", server.url)
    server.script = [Reply("Hello! I will remember that you like tea."), Reply("You like tea.")]
    done = cli.invoke(app, ["chat", "--session", "c1"], input="I like tea.\nWhat do I like?\nexit\n")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == ["Hello! I will remember that you like tea.", "You like tea."]
    sessions = json.loads(cli.invoke(app, ["sessions", "--json"]).stdout)
    assert [(s["session_id"], s["turn_count"], s["ended_at"] is not None) for s in sessions] == [
        ("c1", 2, True)
    ]


def test_nous_chat_without_a_model_is_one_clear_line(cli: CliRunner) -> None:
    done = cli.invoke(app, ["chat"], input="hello\n")
    assert done.exit_code != 0 and "NOUS_LLM_PROVIDER" in done.stderr
    assert done.stderr.strip().count("\n") == 0


def test_nous_chat_shows_a_whole_answer_and_says_when_one_is_empty(
    cli: CliRunner, server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upstream that ignores `stream: true` answers with one JSON document: its text is
    printed all the same. An answer with no text is said to be empty (stderr), not silence."""
    monkeypatch.setenv("NOUS_LLM_PROVIDER", server.protocol)
    monkeypatch.setenv("NOUS_LLM_API_BASE", server.url)
    monkeypatch.setenv("NOUS_LLM_MODEL", "loopback-model")
    server.ignore_stream = True
    server.script = [Reply("You told me you like tea."), Reply("")]
    done = cli.invoke(app, ["chat", "--session", "c2"], input="What do I like?\nAnd what else?\nexit\n")
    assert done.exit_code == 0, done.output
    assert all(r["body"]["stream"] is True for r in server.requests)  # asked for, and ignored
    assert done.stdout.splitlines() == ["You told me you like tea.", ""]
    (warning,) = done.stderr.strip().splitlines()
    assert "loopback-model sent an empty answer" in warning and "NOUS_LLM_MODEL" in warning
