"""The CLI contract, through the real entry point and in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nous.cli.app import app

from .conftest import pg_url


def _env(tmp_path: Path, url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    env["NOUS_HOME"] = str(tmp_path / "home")
    if url:
        env["NOUS_DATABASE_URL"] = url
    return env


def _nous(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nous", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_learn_json_statuses(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """created, duplicate (existing_id), connected (related_ids), superseded (superseded_id)."""
    url = None if backend == "sqlite" else pg_url(request.getfixturevalue("pg_schema"))
    env = _env(tmp_path, url)

    def learn(*args: str) -> dict[str, object]:
        done = _nous(["learn", *args, "--json"], env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    rule = learn("Never trade during low-volume weekends.")
    assert rule["status"] == "created"
    again = learn("Don't place trades on weekends when volume is low.")
    assert again["status"] == "duplicate" and again["existing_id"] == rule["id"]
    assert again["lifecycle"] == "active" and again["similarity"] >= 0.62  # type: ignore[operator]
    related = learn("Weekend trading volume is usually thin on crypto exchanges.")
    assert related["status"] == "connected" and related["related_ids"] == [rule["id"]]
    old = learn("The API rate limit is 100 requests per minute.", "--subject", "api rate limit")
    new = learn("The API rate limit is 1,000 requests per minute.", "--subject", "api rate limit")
    assert new["status"] == "superseded" and new["superseded_id"] == old["id"]


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_learn_and_recall_json_contract(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = None if backend == "sqlite" else pg_url(request.getfixturevalue("pg_schema"))
    env = _env(tmp_path, url)
    learned = _nous(["learn", "Rust's borrow checker prevents data races", "--json"], env)
    assert learned.returncode == 0, learned.stderr
    payload = json.loads(learned.stdout)
    assert payload["status"] == "created" and len(payload["id"]) == 36
    related = json.loads(
        _nous(["learn", "Rust's ownership model makes memory bugs rare", "--json"], env).stdout
    )
    lasagne = json.loads(_nous(["learn", "The cafeteria serves lasagne on Wednesdays", "--json"], env).stdout)
    recalled = _nous(["recall", "memory safety in Rust", "--limit", "2", "--json"], env)
    assert recalled.returncode == 0, recalled.stderr
    hits = json.loads(recalled.stdout)
    assert {h["id"] for h in hits} == {payload["id"], related["id"]}
    assert lasagne["id"] not in {h["id"] for h in hits}
    assert {"id", "type", "content", "score"} <= hits[0].keys() and hits[0]["type"] == "fact"
    assert hits[0]["score"] >= hits[1]["score"] and hits[0]["current"] and hits[0]["occurred_at"]
    strict = _nous(["recall", "memory safety in Rust", "--min-score", "1"], env)
    assert strict.returncode == 0 and "nothing relevant found" in strict.stderr
    if backend == "sqlite":
        assert (tmp_path / "home" / "nous.db").exists()


def test_errors_are_one_line_and_non_zero(tmp_path: Path) -> None:
    env = _env(tmp_path)
    empty = _nous(["learn", "   ", "--json"], env)
    assert empty.returncode == 2
    assert empty.stdout == ""
    assert empty.stderr.strip().count("\n") == 0 and "content is empty" in empty.stderr
    for args, words in (
        (["learn", "x", "--confidence", "abc"], "Invalid value for '--confidence'"),
        (["no-such-command"], "No such command"),
        (["recall"], "Missing argument"),
        (["recall", "x", "--min-score", "2"], "--min-score"),
    ):
        usage = _nous(args, env)  # a usage mistake: one line that says where to look, exit 2
        assert usage.returncode == 2 and usage.stdout == ""
        assert usage.stderr.strip().count("\n") == 0 and words in usage.stderr and "-h`" in usage.stderr
    bad_db = _nous(["stats"], {**env, "NOUS_DATABASE_URL": "mysql://x/y"})
    assert bad_db.returncode == 1 and "unsupported database URL" in bad_db.stderr
    missing = _nous(["history", "00000000-0000-4000-8000-000000000000"], env)
    assert missing.returncode == 2 and "no history" in missing.stderr


def test_listing_history_export_import_in_process(cli: CliRunner, tmp_path: Path) -> None:
    learned = json.loads(
        cli.invoke(
            app, ["learn", "Alice leads payments", "--subject", "Alice", "--category", "person", "--json"]
        ).stdout
    )
    decided = cli.invoke(
        app, ["decide", "Adopt Postgres", "--confidence", "0.8", "-r", "analysis:ACID", "--json"]
    )
    assert decided.exit_code == 0, decided.output
    facts = cli.invoke(app, ["facts"])
    assert facts.exit_code == 0 and "Alice leads payments" in facts.stdout
    decisions = json.loads(cli.invoke(app, ["decisions", "--json"]).stdout)
    assert decisions[0]["content"] == "Adopt Postgres" and decisions[0]["reasons"][0]["type"] == "analysis"
    history = json.loads(cli.invoke(app, ["history", learned["id"][:8], "--json"]).stdout)
    assert [h["action"] for h in history] == ["create"]
    stats = json.loads(cli.invoke(app, ["stats", "--json"]).stdout)
    assert stats["active_by_kind"] == {"fact": 1, "decision": 1}

    out = tmp_path / "dump.jsonl"
    assert cli.invoke(app, ["export", "--out", str(out)]).exit_code == 0
    imported = cli.invoke(app, ["--agent", "copy", "import", str(out), "--json"])
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout) == {"status": "imported", "memories": 2, "already_present": 0}
    copy_stats = json.loads(cli.invoke(app, ["--agent", "copy", "stats", "--json"]).stdout)
    assert copy_stats["active_by_kind"] == {"fact": 1, "decision": 1}

    forgotten = cli.invoke(app, ["forget", learned["id"], "--json"])
    assert forgotten.exit_code == 0, (forgotten.output, forgotten.exception)
    assert json.loads(forgotten.stdout)["status"] == "forgotten"
    assert json.loads(cli.invoke(app, ["facts", "--json"]).stdout) == []

    bad = cli.invoke(app, ["decide", "x", "-r", "no-colon"])
    assert bad.exit_code == 2 and "TYPE:TEXT" in bad.output


def test_doctor_and_demo(cli: CliRunner) -> None:
    doctor = cli.invoke(app, ["doctor", "--json"])
    assert doctor.exit_code == 0, doctor.output
    checks = {c["check"]: c["status"] for c in json.loads(doctor.stdout)}
    assert checks["embedding model"] == "ok" and checks["store"] == "ok"
    demo = cli.invoke(app, ["demo", "--json", "--top", "1"])
    assert demo.exit_code == 0, demo.output
    result = json.loads(demo.stdout)
    assert result["stored"]["facts"] == 8
    assert {a["question"] for a in result["answers"]} == set(DEMO_ANSWERS)


# What answers each of `nous demo`'s questions: the memory recall must rank first.
DEMO_ANSWERS = {
    "When is the offsite?": "April 14 to April 17",
    "Which database are we moving the ledger to?": "PostgreSQL",
    "Does anyone on the team have accessibility needs?": "Priya uses a wheelchair",
    "What should I keep in mind when booking dinners?": "vegetarian",
    "Who is responsible for the backfill?": "Tomás",
    "When should I avoid booking meetings?": "Friday afternoons",
}


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_demo_answers_each_question_with_its_memory_first(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = None if backend == "sqlite" else pg_url(request.getfixturevalue("pg_schema"))
    done = _nous(["demo", "--json", "--top", "3"], _env(tmp_path, url))
    assert done.returncode == 0, done.stderr
    answers = {a["question"]: a["answers"] for a in json.loads(done.stdout)["answers"]}
    assert set(answers) == set(DEMO_ANSWERS), "each demo question needs the memory that answers it"
    for question, expected in DEMO_ANSWERS.items():
        assert answers[question], question
        assert expected in answers[question][0]["content"], (question, answers[question])


def test_help_teaches(cli: CliRunner) -> None:
    result = cli.invoke(app, ["--help"])
    assert result.exit_code == 0
    for word in ("learn", "recall", "export", "doctor", "NOUS_DATABASE_URL"):
        assert word in result.stdout
    assert "Example:" in cli.invoke(app, ["learn", "--help"]).stdout
