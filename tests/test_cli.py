"""The CLI contract, through the real entry point and in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nous.cli.app import app, main


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


def test_learn_json_statuses(cli: CliRunner, database_url: str) -> None:
    """created, duplicate (existing_id), connected (related_ids), superseded (superseded_id).
    In-process: the entry point itself is run as a process by the test below."""

    def learn(*args: str) -> dict[str, object]:
        done = cli.invoke(app, ["--db", database_url, "learn", *args, "--json"])
        assert done.exit_code == 0, (done.output, done.exception)
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


Run = Callable[[list[str]], tuple[int, str, str]]  # arguments -> exit code, stdout, stderr


def _process(env: dict[str, str]) -> Run:
    """`python -m nous` as a process of its own."""

    def run(args: list[str]) -> tuple[int, str, str]:
        done = _nous(args, env)
        return done.returncode, done.stdout, done.stderr

    return run


@pytest.fixture
def in_process(cli: CliRunner, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """The console-script entry point (``main``, as `python -m nous` calls it) run in this process,
    on the ``cli`` fixture's fresh NOUS_HOME: what a process adds (starting up, importing) is
    checked by the tests that run one."""

    def run(args: list[str]) -> tuple[int, str, str]:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["nous", *args])
        with pytest.raises(SystemExit) as stopped:
            main()
        out, err = capsys.readouterr()
        code = stopped.value.code
        return (code if isinstance(code, int) else 1), out, err

    return run


def _learn_and_recall(run: Run) -> None:
    code, out, err = run(["learn", "Rust's borrow checker prevents data races", "--json"])
    assert code == 0, err
    payload = json.loads(out)
    assert payload["status"] == "created" and len(payload["id"]) == 36
    related = json.loads(run(["learn", "Rust's ownership model makes memory bugs rare", "--json"])[1])
    lasagne = json.loads(run(["learn", "The cafeteria serves lasagne on Wednesdays", "--json"])[1])
    code, out, err = run(["recall", "memory safety in Rust", "--limit", "2", "--json"])
    assert code == 0, err
    hits = json.loads(out)
    assert {h["id"] for h in hits} == {payload["id"], related["id"]}
    assert lasagne["id"] not in {h["id"] for h in hits}
    assert {"id", "type", "content", "score"} <= hits[0].keys() and hits[0]["type"] == "fact"
    assert hits[0]["score"] >= hits[1]["score"] and hits[0]["current"] and hits[0]["occurred_at"]
    code, _, err = run(["recall", "memory safety in Rust", "--min-score", "1"])
    assert code == 0 and "nothing relevant found" in err


def test_learn_and_recall_json_contract_through_the_entry_point(tmp_path: Path) -> None:
    """`python -m nous` as a user runs it, on the default store in NOUS_HOME."""
    _learn_and_recall(_process(_env(tmp_path)))
    assert (tmp_path / "home" / "nous.db").exists()


def test_learn_and_recall_json_contract(in_process: Run, database_url: str) -> None:
    """The same contract on each backend (the entry point in-process)."""
    _learn_and_recall(lambda args: in_process(["--db", database_url, *args]))


def test_errors_are_one_line_and_non_zero(
    tmp_path: Path, in_process: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _env(tmp_path)
    # Two through a process of its own (nothing printed at start-up or import adds a line), the
    # rest through the same entry point in-process.
    empty = _nous(["learn", "   ", "--json"], env)
    assert empty.returncode == 2
    assert empty.stdout == ""
    assert empty.stderr.strip().count("\n") == 0 and "content is empty" in empty.stderr
    for n, (args, words) in enumerate(
        (
            (["learn", "x", "--confidence", "abc"], "Invalid value for '--confidence'"),
            (["no-such-command"], "No such command"),
            (["recall"], "Missing argument"),
            (["recall", "x", "--min-score", "2"], "--min-score"),
        )
    ):
        # a usage mistake: one line that says where to look, exit 2
        code, out, err = _process(env)(args) if n == 0 else in_process(args)
        assert code == 2 and out == "", (args, out, err)
        assert err.strip().count("\n") == 0 and words in err and "-h`" in err, (args, err)
    monkeypatch.setenv("NOUS_DATABASE_URL", "mysql://x/y")
    code, _, err = in_process(["stats"])
    assert code == 1 and "unsupported database URL" in err
    monkeypatch.delenv("NOUS_DATABASE_URL")
    code, _, err = in_process(["history", "00000000-0000-4000-8000-000000000000"])
    assert code == 2 and "no history" in err


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


def test_the_demo_answers_each_question_with_its_memory_first(cli: CliRunner, database_url: str) -> None:
    done = cli.invoke(app, ["--db", database_url, "demo", "--json", "--top", "3"])
    assert done.exit_code == 0, (done.output, done.exception)
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
