"""The conversation shapes `nous ingest` accepts (``nous.ingest.shapes``), one test per shape,
the one-line refusal of anything else, progress per turn, and the pending-events note."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nous import InvalidInputError, Nous
from nous.cli.app import app
from nous.ingest import parse_conversation
from nous.ingest.ingest import PROGRESS_SLICE
from nous.ingest.shapes import ACCEPTED, detect_shape
from tests.cli_support import ok, one_line_error

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo"
SAMPLE = Path(str(resources.files("nous.data").joinpath("sample_conversation.json")))

CHAT = {
    "messages": [
        {"role": "system", "content": "You are a helpful travel assistant."},
        {"role": "user", "content": [{"type": "text", "text": "I'm flying to Osaka on June 3rd."}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "content": '{"flights": 3}'},
        {"role": "assistant", "content": "Noted: Osaka, June 3rd. Window or aisle?"},
        {"role": "user", "content": "Window, always."},
    ]
}


def _texts(data: Any) -> list[str]:
    conversation = parse_conversation(json.dumps(data))
    return [m.content for s in conversation.sessions for m in s.messages]


def test_native_shape() -> None:
    native = {"sessions": [{"id": "a", "messages": [{"role": "user", "content": "Hello there"}]}]}
    assert detect_shape(native) == "native"
    conversation = parse_conversation(json.dumps(native))
    assert conversation.source_format == "native" and conversation.sessions[0].id == "a"


def test_the_packages_sample_conversation_ingests() -> None:
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    assert detect_shape(data) == "messages"
    conversation = parse_conversation(SAMPLE.read_bytes())
    (session,) = conversation.sessions
    assert len(session.messages) == len(data["messages"])
    assert session.started_at is not None and session.started_at.isoformat() == "2026-03-02T09:15:00+00:00"
    assert conversation.participants == data["participants"]
    assert session.messages[0].name == "Maya"


def test_a_bare_list_of_messages() -> None:
    data = [{"role": "user", "content": "I moved to Porto."}, {"role": "assistant", "content": "Nice!"}]
    assert detect_shape(data) == "messages"
    assert _texts(data) == ["I moved to Porto.", "Nice!"]


def test_an_openai_chat_log_keeps_the_conversation_only() -> None:
    """System prompts, tool calls and tool results are not what was said; content parts are."""
    assert _texts(CHAT) == [
        "I'm flying to Osaka on June 3rd.",
        "Noted: Osaka, June 3rd. Window or aisle?",
        "Window, always.",
    ]


def test_a_list_of_chats_is_one_session_each() -> None:
    second = {"id": "later", "messages": [{"role": "user", "content": "The Osaka trip is cancelled."}]}
    conversation = parse_conversation(json.dumps([CHAT, second]))
    assert [s.id for s in conversation.sessions] == ["s1", "later"]
    assert conversation.source_format == "messages"


def test_locomo_shapes_plain_wrapped_and_listed() -> None:
    plain = json.loads((LOCOMO / "26.json").read_text(encoding="utf-8"))
    wrapped = {"sample_id": "conv-26", "conversation": plain}
    other = {"sample_id": "conv-30", "conversation": json.loads((LOCOMO / "30.json").read_text())}
    assert detect_shape(plain) == detect_shape(wrapped) == detect_shape([wrapped, other]) == "locomo"
    one = parse_conversation(json.dumps(wrapped))
    assert one.id == "conv-26" and one.sessions[0].id == "session_1"
    both = parse_conversation(json.dumps([wrapped, other]))
    assert both.source_format == "locomo"
    assert both.sessions[0].id == "conv-26/session_1" and both.sessions[-1].id.startswith("conv-30/")
    assert sum(len(s.messages) for s in both.sessions) == 419 + 369
    assert set(both.participants) >= {"Caroline", "Melanie"}


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({}, "no sessions, messages or LoCoMo"),
        ({"title": "notes"}, "keys: title"),
        ([], "an empty list"),
        ("just text", "top level is a string"),
        ({"messages": "hello"}, '"messages" is a string'),
        ([{"role": "user", "content": "hi"}, {"sessions": []}], "item [1]"),
        ([1, 2], "first item is not a message"),
    ],
)
def test_an_unknown_shape_is_one_line_naming_the_problem_and_the_shapes(data: Any, problem: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse_conversation(json.dumps(data))
    message = str(refused.value)
    assert "\n" not in message and problem in message and message.endswith(ACCEPTED)


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ([{"role": "user", "content": "hi"}, {"role": "user", "content": "  "}], "messages[1].content"),
        ({"messages": [{"role": "user", "content": 7}]}, "messages[0].content"),
        ({"messages": [{"role": "system", "content": "be brief"}]}, "messages: no user or assistant message"),
        ([CHAT, {"messages": ["hi"]}], "[1].messages[0]"),
    ],
)
def test_a_bad_message_is_named(data: Any, where: str) -> None:
    with pytest.raises(InvalidInputError, match="^" + re.escape(where)):
        parse_conversation(json.dumps(data))


async def test_every_shape_ingests_and_is_recallable(nous: Nous, tmp_path: Path) -> None:
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps([{"role": "user", "name": "Ines", "content": "I keep bees in Sintra."}]))
    chats = tmp_path / "chats.json"
    chats.write_text(json.dumps([CHAT, {"messages": [{"role": "user", "content": "I sold my bicycle."}]}]))
    sample = await nous.ingest(SAMPLE)
    assert sample.turns == 10 and sample.sessions == 1
    assert (await nous.ingest(bare)).turns == 1
    listed = await nous.ingest(chats)
    assert listed.sessions == 2 and listed.turns == 4
    assert (await nous.ingest(chats)).sessions_skipped == 2  # the same file again stores nothing
    for question, word in [("Where is the offsite?", "Lisbon"), ("Where does Ines keep bees?", "Sintra")]:
        hits = await nous.recall(question, kinds="turn", limit=3)
        assert any(word in h.content for h in hits), (question, [h.content for h in hits])


async def test_progress_moves_per_turn_within_a_session(nous: Nous) -> None:
    messages = [{"role": "user", "content": f"Note {i}: the build number is {1000 + i}."} for i in range(40)]
    steps: list[int] = []
    report = await nous.ingest(
        json.dumps({"sessions": [{"id": "long", "messages": messages}]}), progress=steps.append
    )
    assert report.turns == 40 and sum(steps) == 40
    assert len(steps) >= 3 and max(steps) <= PROGRESS_SLICE  # not one step for the whole session


def _cli_on(cli: CliRunner, database_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("NOUS_DATABASE_URL", database_url)
    return cli


def test_cli_ingests_the_sample_and_says_events_are_pending(
    cli: CliRunner, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _cli_on(cli, database_url, monkeypatch)
    first = ok(runner, "ingest", str(SAMPLE))
    assert "ingested 10 turns" in first.stdout
    (note,) = [ln for ln in first.stdout.splitlines() if "pending" in ln]
    assert "maintain --events" in note and "serve" in note and int(note.split()[0]) > 0
    ok(runner, "maintain", "--events")
    again = json.loads(ok(runner, "ingest", str(SAMPLE), "--json").stdout)
    assert again["sessions_skipped"] == 1 and again["events_pending"] == 0
    assert "pending" not in ok(runner, "ingest", str(SAMPLE)).stdout  # nothing waits: no note


def test_cli_refuses_an_unknown_shape_in_one_line(cli: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text(json.dumps({"title": "notes", "text": "hello"}))
    result = cli.invoke(app, ["ingest", str(bad)])
    one_line_error(result, 2, "accepted:")
    assert "keys: title, text" in result.stderr
