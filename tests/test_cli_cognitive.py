"""The turn loop, identity, working memory, procedures and calibration through the CLI, in-process
(real store in a temporary NOUS_HOME, real embedding model)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from nous.cli.app import app
from nous.cognitive import FRAMES
from tests.cli_support import data, ok, one_line_error


def test_a_session_across_invocations(cli: CliRunner) -> None:
    fact = data(cli, "learn", "We picked Postgres for the ledger because it needs ACID transactions")
    question = "Why did we pick Postgres for the ledger?"

    first = data(cli, "context", question, "--session", "s1")
    assert {"frame", "frame_confidence", "context", "tokens", "budget", "episode_action", "episode_id"} <= (
        first.keys()
    )
    assert first["frame"] in FRAMES and 0 <= first["frame_confidence"] <= 1
    assert 0 < first["tokens"] <= first["budget"]
    assert first["turn"] == 1 and first["episode_action"] == "created" and first["episode_id"]
    for section in first["sections"]:
        assert {"name", "tokens", "budget", "items", "dropped"} <= section.keys()
        for item in section["items"]:
            assert {"id", "kind", "tokens", "score", "text"} <= item.keys()
            assert item["text"] in first["context"]
    facts = next(s for s in first["sections"] if s["name"] == "facts")
    assert fact["id"] in [i["id"] for i in facts["items"]]

    state = data(
        cli, "reply", "--session", "s1", "Because the ledger needs ACID guarantees.", "--tool", "recall"
    )
    assert state["turn_count"] == 1 and state["tools_used"] == ["recall"] and not state["ended"]

    second = data(cli, "context", "And how do we back the ledger up?", "--session", "s1")
    assert second["turn"] == 2 and second["episode_action"] == "already_open"
    assert second["episode_id"] == first["episode_id"]

    ended = data(cli, "end-session", "s1", "--reflection", "Check ACID needs before choosing a datastore")
    assert ended["status"] == "ended" and ended["episode_action"] == "closed"
    assert ended["episode_id"] == first["episode_id"]
    assert [f["status"] for f in ended["facts"]] == ["created"]

    small = data(cli, "context", "What does the ledger store?", "--session", "s2", "--budget", "2250")
    assert small["budget"] == 2250 and small["tokens"] <= 2250
    readable = ok(cli, "context", "Tell me about the ledger backups", "--session", "s2").stdout
    assert "## Frame" in readable and "working_memory" in readable and "turn 1" in readable  # no reply yet

    listed = {s["session_id"]: s for s in data(cli, "sessions")}
    assert listed["s1"]["ended"] and listed["s1"]["ended_at"] and not listed["s2"]["ended"]
    assert [s["session_id"] for s in data(cli, "sessions", "--ended")] == ["s1"]
    assert [s["session_id"] for s in data(cli, "sessions", "--live")] == ["s2"]
    assert "s1" in ok(cli, "sessions").stdout

    episodes = data(cli, "episodes")
    assert all({"id", "title", "summary", "started_at", "ended_at"} <= e.keys() for e in episodes)
    closed = next(e for e in episodes if e["id"] == first["episode_id"])
    assert closed["ended_at"] is not None

    one_line_error(cli.invoke(app, ["end-session", "no-such-session"]), 2, "no session")
    one_line_error(cli.invoke(app, ["context", "hello again", "--session", "s1"]), 1, "has ended")
    one_line_error(cli.invoke(app, ["reply", "--session", "no-such-session", "hi"]), 2, "no session")
    one_line_error(
        cli.invoke(app, ["context", "hi", "--session", "s3", "--frame", "nope"]), 2, "unknown frame"
    )


def test_identity_working_memory_and_procedures(cli: CliRunner) -> None:
    ok(cli, "identity", "set", "character", "A careful engineer who explains trade-offs.")
    saved = data(cli, "identity", "set", "character", "A careful, terse engineer.")
    assert saved["version"] == 2
    assert data(cli, "identity") == [
        {
            "section": "character",
            "version": 2,
            "updated_at": saved["updated_at"],
            "content": "A careful, terse engineer.",
        }
    ]
    history = data(cli, "identity", "history", "character")
    assert [h["action"] for h in history] == ["create", "update"]
    assert history[1]["old_value"]["content"] == "A careful engineer who explains trade-offs."
    assert "terse" in ok(cli, "identity", "history", "character").stdout
    one_line_error(cli.invoke(app, ["identity", "set", "mood", "calm"]), 2, "unknown identity section")

    wm = data(
        cli,
        "working-memory",
        "w1",
        "--task",
        "migrate the ledger",
        "--focus",
        "keep ACID",
        "--relevance",
        "0.9",
    )
    assert wm["current_task"] == "migrate the ledger"
    assert [(i["content"], i["relevance"]) for i in wm["items"]] == [("keep ACID", 0.9)]
    turn = data(cli, "context", "What should I do next?", "--session", "w1", "--frame", "task")
    assert turn["frame"] == "task" and "Current task: migrate the ledger" in turn["context"]
    assert "keep ACID" in ok(cli, "working-memory", "w1").stdout

    added = data(cli, "procedures", "add", "deploy", "Run the tests, tag the release, push the tag")
    assert added["status"] == "created"
    listed = data(cli, "procedures")
    assert [(p["name"], p["description"], p["success_count"]) for p in listed] == [
        ("deploy", "Run the tests, tag the release, push the tag", 0)
    ]
    used = data(cli, "procedures", "use", added["id"][:8], "--success")
    assert (used["activation_count"], used["success_count"], used["failure_count"]) == (1, 1, 0)
    assert "deploy" in ok(cli, "procedures").stdout


def test_review_feeds_calibration(cli: CliRunner) -> None:
    decision = data(cli, "decide", "Use Postgres for the ledger", "--confidence", "0.8")
    before = data(cli, "calibration")
    assert before["pending"] == 1 and before["overall"]["resolved"] == 0
    reviewed = data(cli, "review", decision["id"][:8], "--outcome", "success", "--note", "no data loss")
    assert reviewed["outcome"] == "success" and reviewed["outcome_note"] == "no data loss"
    after = data(cli, "calibration")
    assert after["pending"] == 0 and after["overall"]["resolved"] == 1
    assert after["overall"]["brier_score"] == pytest.approx(0.04)
    assert "brier" in ok(cli, "calibration").stdout
    bad = cli.invoke(app, ["review", decision["id"], "--outcome", "great"])
    one_line_error(bad, 2, "outcome must be one of")


def test_help_teaches(cli: CliRunner) -> None:
    commands = [
        ["context"],
        ["reply"],
        ["end-session"],
        ["sessions"],
        ["working-memory"],
        ["identity"],
        ["identity", "set"],
        ["identity", "history"],
        ["procedures"],
        ["procedures", "add"],
        ["calibration"],
        ["review"],
    ]
    for command in commands:
        assert "Example:" in ok(cli, *command, "--help").stdout, command
