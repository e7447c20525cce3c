"""What the CLI writes and how it says so: every write signed by the actor `cli`, a guardrail's
refusal in the CLI's own terms with exit 2, an import that changes nothing the second time, and
ingest progress a batch at a time; on both backends."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from nous import Nous, Settings
from nous.cli.app import app
from nous.embeddings.base import EmbeddingProvider
from nous.models import HistoryEntry
from tests.cli_support import data, ok, one_line_error


def _trails(database_url: str, home: Path, provider: EmbeddingProvider) -> dict[str, list[HistoryEntry]]:
    """Every memory of the CLI's agent (forgotten ones too), with its audit rows."""

    async def read() -> dict[str, list[HistoryEntry]]:
        settings = Settings(home=home, events_worker="off")
        async with Nous(settings, database_url=database_url, embedding_provider=provider) as nous:
            found = await nous.memories(limit=1000, include_inactive=True, include_superseded=True)
            return {m.id: await nous.history(m.id) for m in found}

    return asyncio.run(read())


def test_a_guardrails_refusal_says_which_option_to_add(cli: CliRunner, database_url: str) -> None:
    refused = cli.invoke(app, ["--db", database_url, "decide", "Drop the legacy API", "--stakes", "critical"])
    one_line_error(refused, 2, "add --reason TYPE:TEXT")
    assert "critical-needs-reasons" in refused.stderr and "reasons=[" not in refused.stderr
    assert data(cli, "--db", database_url, "decisions") == []  # nothing half-written
    kept = data(
        cli,
        "--db",
        database_url,
        "decide",
        "Drop the legacy API",
        "--stakes",
        "critical",
        "--reason",
        "analysis:no client has called it for a year",
    )
    assert kept["status"] == "created"


def test_every_cli_write_is_signed_cli(
    cli: CliRunner, database_url: str, tmp_path: Path, provider: EmbeddingProvider
) -> None:
    db = ["--db", database_url]
    fact = data(cli, *db, "learn", "The staging cluster runs in eu-west-1", "--subject", "staging")
    data(cli, *db, "learn", "The staging cluster runs in eu-central-1", "--subject", "staging")
    gone = data(cli, *db, "learn", "Deploys happen on Tuesdays")
    ok(cli, *db, "forget", gone["id"])
    decision = data(cli, *db, "decide", "Use Postgres for the ledger", "-r", "analysis:needs ACID")
    ok(cli, *db, "review", decision["id"], "--outcome", "success")
    ok(cli, *db, "censors", "add", r"DROP\s+TABLE", "--action", "block", "--reason", "never drop tables")
    ok(cli, *db, "identity", "set", "character", "A careful engineer.")
    procedure = data(cli, *db, "procedures", "add", "deploy", "Run the tests, tag, push the tag")
    ok(cli, *db, "procedures", "use", procedure["id"], "--success")
    ok(cli, *db, "context", "We are planning the database migration for the ledger", "--session", "s1")
    ok(cli, *db, "reply", "--session", "s1", "Then we move the ledger to Postgres next week.")
    ok(cli, *db, "end-session", "s1", "--reflection", "Migrations need a rollback plan")
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": "My sister Ana moves to Porto in May."},
                    {"role": "assistant", "content": "Noted: Ana moves to Porto in May."},
                ]
            }
        )
    )
    ok(cli, *db, "ingest", str(chat))
    backup = tmp_path / "backup.jsonl"
    ok(cli, *db, "export", "--out", str(backup))
    ok(cli, *db, "--agent", "copy", "import", str(backup))

    trails = _trails(database_url, tmp_path / "home", provider)
    actions = {(e.action.value, e.actor) for rows in trails.values() for e in rows}
    assert {actor for _, actor in actions} == {"cli"}, sorted(actions)
    # the writes above are all there: create, supersede, delete, update (review, use), link
    assert {"create", "delete", "update"} <= {action for action, _ in actions}
    assert fact["id"] in trails and gone["id"] in trails

    async def copied() -> set[str]:
        settings = Settings(home=tmp_path / "home", events_worker="off")
        async with Nous(
            settings, database_url=database_url, embedding_provider=provider, agent_id="copy"
        ) as nous:
            found = await nous.memories(limit=1000, include_inactive=True, include_superseded=True)
            return {e.actor for m in found for e in await nous.history(m.id)}

    assert asyncio.run(copied()) == {"cli"}


def test_importing_the_same_file_again_changes_nothing(
    cli: CliRunner, database_url: str, tmp_path: Path, provider: EmbeddingProvider
) -> None:
    db = ["--db", database_url]
    episode = data(
        cli, *db, "context", "Let us plan the vendor selection for the office move", "--session", "v"
    )
    assert episode["episode_id"], episode
    data(cli, *db, "decide", "Pick vendor A", "-r", "analysis:cheapest")
    data(cli, *db, "learn", "Vendor A quoted 40k", "--subject", "vendor A")
    backup = tmp_path / "backup.jsonl"
    ok(cli, *db, "export", "--out", str(backup))
    memories = sum('"memory"' in line for line in backup.read_text().splitlines())
    first = data(cli, *db, "--agent", "copy", "import", str(backup))
    assert first == {"status": "imported", "memories": memories, "already_present": 0}

    async def snapshot() -> tuple[object, ...]:
        settings = Settings(home=tmp_path / "home", events_worker="off", agent_id="copy")
        async with Nous(settings, database_url=database_url, embedding_provider=provider) as nous:
            found = await nous.memories(limit=1000, include_inactive=True)
            trails = {m.id: await nous.history(m.id) for m in found}
            return await nous.stats(), await nous.store.all_edges("copy"), trails

    before = asyncio.run(snapshot())
    again = ok(cli, *db, "--agent", "copy", "import", str(backup)).stdout
    assert f"imported 0 new, {memories} already present" in " ".join(again.split())
    assert asyncio.run(snapshot()) == before  # no memory, audit row or link added


def test_ingest_shows_progress_within_a_long_session(
    cli: CliRunner, database_url: str, tmp_path: Path
) -> None:
    """A single session of 60 messages moves a batch of turns at a time (stderr, not a terminal:
    plain lines), and --json keeps stdout to the report alone."""
    chat = tmp_path / "long.json"
    said = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Point {i} about the garden plan."}
        for i in range(60)
    ]
    chat.write_text(json.dumps({"messages": said}))
    done = ok(cli, "--db", database_url, "ingest", str(chat), "--json")
    assert json.loads(done.stdout)["turns"] == 60
    counts = [
        int(line.split()[2].split("/")[0]) for line in done.stderr.splitlines() if "ingesting turns" in line
    ]
    assert len(counts) >= 3 and counts == sorted(counts) and counts[0] < 60 and counts[-1] == 60, done.stderr
    assert all(line.endswith("/60") for line in done.stderr.splitlines() if "ingesting turns" in line)
