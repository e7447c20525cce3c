"""``nous events``, ``nous events retry``, ``nous maintain --events`` and ``nous worker --once``
through the CLI, in-process (real SQLite store in a temporary NOUS_HOME, real embedding model)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nous import EventKind, EventWorker, Nous, Settings
from nous.cli.app import app
from tests.cli_support import data, ok


def test_events_are_listed_drained_and_counted(cli: CliRunner) -> None:
    ok(cli, "learn", "The staging cluster lives in eu-west-1")
    ok(cli, "context", "Should billing move to Kafka?", "--session", "s1")
    ok(
        cli,
        "reply",
        "--session",
        "s1",
        "Kafka gives billing a replayable log per account; RabbitMQ does not. " * 4,
    )
    ok(cli, "end-session", "s1")
    pending = data(cli, "events", "--status", "pending")
    kinds = {e["kind"] for e in pending}
    assert {"fact.written", "session.ended", "episode.closed"} <= kinds  # a CLI run leaves them queued
    assert all(e["status"] == "pending" and e["attempts"] == 0 for e in pending)
    stats = data(cli, "stats")
    assert stats["events"]["pending"] == len(pending) and stats["llm_usage"] == []  # offline: no calls
    report = data(cli, "maintain", "--events")
    # Draining runs follow-up events too (the summary writes episode.summarized).
    assert report["events"]["done"] > len(pending) and report["events"]["dead"] == 0
    assert data(cli, "events", "--status", "pending") == []
    after = data(cli, "events")
    assert {e["status"] for e in after} == {"done"} and "episode.summarized" in {e["kind"] for e in after}
    (episode,) = data(cli, "episodes")
    assert episode["summary"] and "Kafka" in episode["summary"]
    table = ok(cli, "events").stdout
    assert "session.ended" in table and "done" in table
    assert "0 events" in ok(cli, "worker", "--once").stdout


async def _fail_every_event(settings: Settings) -> int:
    async def broken(event: object, ctx: object) -> list[Any]:
        raise ValueError("the summariser returned invalid JSON twice")

    async with Nous(settings) as nous:
        worker = EventWorker(
            nous.pipeline_context(), handlers={EventKind.FACT_WRITTEN: [broken]}, max_attempts=1
        )
        return (await worker.drain()).dead


def test_a_dead_event_is_shown_and_revived(cli: CliRunner, tmp_path: Path) -> None:
    ok(cli, "learn", "Releases are cut every second Thursday")
    assert asyncio.run(_fail_every_event(Settings(home=tmp_path / "home", events_worker="off"))) == 1
    (dead,) = data(cli, "events", "--status", "dead")
    assert "invalid JSON twice" in dead["last_error"]
    assert "invalid JSON" in ok(cli, "events", "--status", "dead").stdout
    revived = data(cli, "events", "retry", dead["id"][:8])
    assert revived["id"] == dead["id"] and revived["status"] == "pending" and revived["attempts"] == 0
    assert data(cli, "maintain", "--events")["events"]["done"] == 1
    again = cli.invoke(app, ["events", "retry", dead["id"]])
    assert again.exit_code != 0 and "done" in again.stderr and again.stderr.strip().count("\n") == 0
    unknown = cli.invoke(app, ["events", "retry", "ffffffffffff"])
    assert unknown.exit_code != 0 and unknown.stderr.strip().count("\n") == 0
    bad = cli.invoke(app, ["events", "--status", "finished"])
    assert bad.exit_code == 2 and "status" in bad.stderr


async def _decision_with_a_proposal(settings: Settings) -> str:
    from tests.test_summaries import _decide_then_report

    async with Nous(settings) as nous:
        return await _decide_then_report(
            nous, "The Kafka move for billing events worked great, replays saved us."
        )


def test_proposals_are_listed_and_accepted(cli: CliRunner, tmp_path: Path) -> None:
    decision_id = asyncio.run(
        _decision_with_a_proposal(Settings(home=tmp_path / "home", events_worker="off"))
    )
    (row,) = data(cli, "proposals")
    assert (
        row["id"] == decision_id and row["outcome"] == "pending" and row["proposal"]["outcome"] == "success"
    )
    assert "worked great" in ok(cli, "proposals").stdout
    accepted = data(cli, "proposals", "accept", decision_id[:8])
    assert accepted["outcome"] == "success" and "worked great" in accepted["outcome_note"]
    assert data(cli, "proposals") == []
    again = cli.invoke(app, ["proposals", "reject", decision_id[:8]])
    assert (
        again.exit_code != 0
        and "no outcome proposal" in again.stderr
        and again.stderr.strip().count("\n") == 0
    )
