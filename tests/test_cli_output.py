"""What the CLI prints for people: tables that fit the terminal, plurals, rounded numbers, the
demo's summary, history after a hard forget, and progress of long work on stderr."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nous.cli.app import app
from nous.cli.output import duration, joined, number, plural, readable
from tests.cli_support import data, ok

AGENT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "agent"
LONG = (
    "Priya keeps the quarterly infrastructure budget spreadsheet in the shared finance folder and "
    "reviews every line item with the platform team before the planning meeting"
)


def run(cli: CliRunner, db: str, *args: str) -> tuple[str, str]:
    result = ok(cli, "--db", db, *args)
    return result.stdout, result.stderr


def table_rows(stdout: str) -> list[str]:
    """The body lines of a rich table (between the header rule and the bottom border)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("┡"))
    end = next(i for i, line in enumerate(lines) if line.startswith("└"))
    return lines[start + 1 : end]


def test_words_for_people() -> None:
    assert [plural(n, "session") for n in (0, 1, 2)] == ["0 sessions", "1 session", "2 sessions"]
    assert plural(1, "memory", "memories") == "1 memory" and plural(3, "memory", "memories") == "3 memories"
    assert number(36.00001064906704) == "36" and number(0.123456) == "0.12" and number(2.5) == "2.5"
    assert number(-0.0001) == "0" and number(7) == "7" and number(None) == ""
    assert [duration(s) for s in (0.25, 4.24, 185, 3720)] == ["250 ms", "4.2 s", "3 min 5 s", "1 h 2 min"]
    assert joined(["a"]) == "a" and joined(["a", "b", "c"]) == "a, b and c"
    assert readable({"stability": 36.00001064906704, "tags": ["x"]}) == '{"stability": 36.0, "tags": ["x"]}'


def test_tables_fit_80_columns_one_row_per_line(
    cli: CliRunner, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(cli, database_url, "learn", LONG, "--subject", "Priya", "--category", "person")
    run(cli, database_url, "learn", "Deploys happen on Tuesdays", "--category", "rule")
    monkeypatch.setenv("COLUMNS", "80")
    out, _ = run(cli, database_url, "facts")
    assert max(len(line) for line in out.splitlines()) <= 80
    rows = table_rows(out)
    assert len(rows) == 2  # one line per fact: nothing wrapped onto a second line
    priya = next(r for r in rows if "Priya" in r)
    cells = [c.strip() for c in priya.strip("│").split("│")]
    assert re.fullmatch(r"[0-9a-f]{8}", cells[0])  # the id whole
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", cells[-1])  # the date whole
    assert cells[1].endswith("…") and LONG.startswith(cells[1][:-1].rstrip())
    assert "Deploys happen" in out
    # scripts get every word
    assert any(f["content"] == LONG for f in data(cli, "--db", database_url, "facts"))
    monkeypatch.setenv("COLUMNS", "200")
    wide = table_rows(run(cli, database_url, "facts")[0])
    assert len(wide) == 2 and LONG[:60] in "".join(wide)
    # a table that exists to show one memory wraps at spaces instead of cutting
    monkeypatch.setenv("COLUMNS", "80")
    fact_id = next(f["id"] for f in data(cli, "--db", database_url, "facts") if f["subject"] == "Priya")
    shown, _ = run(cli, database_url, "show", fact_id[:8])
    assert max(len(line) for line in shown.splitlines()) <= 80
    content: list[str] = []
    for line in table_rows(shown):
        field, value = (c.strip() for c in line.strip("│").split("│"))
        if field and content:
            break
        if field == "content" or content:
            content.append(value)
    assert " ".join(content) == LONG  # whole, broken only at spaces


def test_show_rounds_numbers_and_json_keeps_them(cli: CliRunner, database_url: str) -> None:
    fact_id = data(cli, "--db", database_url, "learn", "The staging cluster runs in eu-west-1")["id"]
    run(cli, database_url, "recall", "where does staging run?")  # a review: stability changes
    exact = data(cli, "--db", database_url, "show", fact_id)
    shown, _ = run(cli, database_url, "show", fact_id[:8])
    assert not re.search(r"\d\.\d{3,}", shown), shown  # no 36.00001064906704
    stability = next(line for line in shown.splitlines() if "stability" in line)
    assert number(exact["stability"]) in stability
    assert isinstance(exact["stability"], float)


def test_plurals_in_messages(cli: CliRunner, database_url: str) -> None:
    run(cli, database_url, "context", "Why did we pick Postgres?", "--session", "s1")
    run(cli, database_url, "reply", "--session", "s1", "For ACID guarantees.")
    out, _ = run(cli, database_url, "end-session", "s1")
    assert re.search(r"after 1 turn\s", out)
    fact_id = data(cli, "--db", database_url, "learn", "Deploys happen on Tuesdays")["id"]
    assert re.search(r"· 1 change\s", run(cli, database_url, "history", fact_id)[0])
    run(cli, database_url, "forget", fact_id)
    assert re.search(r"· 2 changes\s", run(cli, database_url, "history", fact_id)[0])


def test_demo_prints_a_summary_not_a_dict(cli: CliRunner) -> None:
    out = ok(cli, "demo", "--top", "1").stdout
    assert "{" not in out and "'turns'" not in out
    assert re.search(r"Stored \d+ conversation turns, \d+ facts, 1 decision and 1 episode in ", out)
    assert re.search(r"asked \d+ questions", out)
    scores = re.findall(r"│ (\d\.\d+) +│", out)
    assert scores and all(len(s.split(".")[1]) <= 2 for s in scores)


def test_history_reads_as_changes(cli: CliRunner, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A history row says what changed: a creation by what the memory said (not its every field),
    ids by their first 8 characters, times to the minute, empty fields left out."""
    monkeypatch.setenv("COLUMNS", "250")  # every cell on one line
    old = data(cli, "--db", database_url, "learn", "The standup is at 9:30", "--subject", "standup")["id"]
    new = data(cli, "--db", database_url, "learn", "The standup is now at 10:00", "--subject", "standup")[
        "id"
    ]
    out = run(cli, database_url, "history", old)[0]
    assert "content=The standup is at 9:30, subject=standup" in out
    assert "agent_id=" not in out and "user_id=," not in out
    assert f"superseded_by={new[:8]}," in out and new not in out
    assert not re.search(r"\d{2}:\d{2}:\d{2}", out)  # times to the minute


def test_history_by_prefix_after_a_hard_forget(cli: CliRunner, database_url: str) -> None:
    fact_id = data(cli, "--db", database_url, "learn", "The office wifi password rotates monthly")["id"]
    ok(cli, "--db", database_url, "forget", fact_id[:8], "--hard")
    assert cli.invoke(app, ["--db", database_url, "show", fact_id[:8]]).exit_code == 2  # the memory is gone
    entries = data(cli, "--db", database_url, "history", fact_id[:8])
    assert {e["memory_id"] for e in entries} == {fact_id}
    assert [e["action"] for e in entries][-1] == "purge"
    assert "purge" in run(cli, database_url, "history", fact_id[:10])[0]
    # another agent's purged memory stays invisible, by prefix as by id
    other = cli.invoke(app, ["--db", database_url, "--agent", "someone-else", "history", fact_id[:8]])
    assert other.exit_code == 2 and "no history" in other.stderr


def test_maintain_events_shows_progress_per_event(cli: CliRunner, database_url: str) -> None:
    for text in ("Alice prefers morning meetings", "The ledger moves to PostgreSQL", "Bob is on call"):
        run(cli, database_url, "learn", text)
    pending = data(cli, "--db", database_url, "stats")["events"]["pending"]
    assert pending >= 3
    result = ok(cli, "--db", database_url, "maintain", "--events", "--json")
    report = json.loads(result.stdout)  # stdout stays clean JSON
    handled = report["events"]["done"] + report["events"]["retried"] + report["events"]["dead"]
    assert handled >= pending
    steps = [int(n) for n in re.findall(r"^events (\d+)", result.stderr, re.MULTILINE)]
    assert steps[0] == 1 and steps[-1] == handled and steps == sorted(steps)
    assert data(cli, "--db", database_url, "stats")["events"]["pending"] == 0


def _labelled(directory: Path) -> Path:
    directory.mkdir()
    conversation = {
        "id": "tiny",
        "sessions": [
            {
                "id": "s1",
                "started_at": "2025-03-01T09:00:00Z",
                "messages": [
                    {"role": "user", "name": "Ana", "content": "I'm training for the Lisbon half marathon."},
                    {"role": "assistant", "content": "Great! When is the race?"},
                    {"role": "user", "name": "Ana", "content": "April 6th. My goal is under two hours."},
                ],
            }
        ],
        "questions": [
            {"id": "q1", "question": "Which race is Ana training for?", "evidence": [["s1:0"]]},
            {"id": "q2", "question": "What is Ana's goal time?", "evidence": [["s1:2"]]},
            {"id": "q3", "question": "When is the race?", "evidence": [["s1:2"]]},
        ],
    }
    (directory / "tiny.json").write_text(json.dumps(conversation))
    return directory


@pytest.mark.parametrize("command", ["retrieval", "context"])
def test_bench_shows_progress_per_question(cli: CliRunner, tmp_path: Path, command: str) -> None:
    directory = _labelled(tmp_path / "labelled")
    result = ok(cli, "bench", command, str(directory), "--json", str(tmp_path / "out.json"))
    assert re.findall(r"^questions (\d+)/3", result.stderr, re.MULTILINE) == ["1", "2", "3"]
    assert "tiny.json: ingesting 3 messages" in result.stderr
    assert "3 questions" in result.stdout
    assert json.loads((tmp_path / "out.json").read_text())["questions"] == 3


def test_bench_context_at_several_budgets_prints_a_table_per_budget_and_writes_json(
    cli: CliRunner, tmp_path: Path
) -> None:
    directory = _labelled(tmp_path / "labelled")
    out = tmp_path / "out.json"
    result = ok(cli, "bench", "context", str(directory), "--budget", "300,1000", "--json", str(out))
    assert re.findall(r"^questions (\d+)/3", result.stderr, re.MULTILINE) == ["1", "2", "3"]  # once each
    text = " ".join(result.stdout.split())
    assert "evidence in context · budget 300 · 3 questions" in text and "budget 1000" in text
    assert "3 questions · labelled · base: BM25" in text  # one dataset: named in the title
    rows = [line for line in result.stdout.splitlines() if line.startswith("│ all ")]
    assert len(rows) == 2  # one category, one row per budget
    figures = json.loads(out.read_text())
    assert figures["budgets"] == ["300", "1000"] and figures["questions"] == 3
    for budget in (300, 1000):
        run = figures["by_budget"][str(budget)]
        assert run["nous"]["tokens"]["max"] <= budget and run["baseline"]["tokens"]["max"] <= budget
        assert run["baseline"]["groups"] == 1.0  # three short messages: all of them fit
    assert figures["context_recall_all"] == figures["by_budget"]["300"]["nous"]["all"]
    refused = cli.invoke(app, ["bench", "context", str(directory), "--budget", "100"])
    assert refused.exit_code == 2 and "at least 200 tokens" in refused.stderr


def test_bench_agent_shows_progress_per_question(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    scenario = sorted(AGENT_DATA.glob("*.json"))[0]
    directory = tmp_path / "agent"
    directory.mkdir()
    shutil.copy(scenario, directory)
    questions = len(json.loads(scenario.read_text())["questions"])
    result = ok(cli, "bench", "agent", str(directory))
    steps = [int(n) for n in re.findall(rf"^questions (\d+)/{questions}", result.stderr, re.MULTILINE)]
    assert steps[0] == 1 and steps[-1] == questions and len(steps) <= 12  # a line per tenth, not per item
    assert f"{questions} questions · 1 scenario" in result.stdout
    headers = [line for line in result.stdout.splitlines() if line.startswith("┃")]
    assert len(headers) == 2 and not any("…" in h or len(h) > 80 for h in headers)


def test_bench_agent_with_distractors_compares_the_store_as_written_and_grown(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_agent_recall import SCENARIO

    monkeypatch.setenv("COLUMNS", "80")
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "tiny.json").write_text(json.dumps(SCENARIO))
    (tmp_path / "chats").mkdir()
    chat = [
        {"role": "user", "content": t}
        for t in ("We watched a film about whales.", "The bakery opens at six.")
    ]
    (tmp_path / "chats" / "other.json").write_text(json.dumps({"sessions": [{"id": "s", "messages": chat}]}))
    out = tmp_path / "out.json"
    result = ok(
        cli,
        "bench",
        "agent",
        str(tmp_path / "agent"),
        "--distractors",
        str(tmp_path / "chats"),
        "--json",
        str(out),
    )
    assert "without and with distractors (2 conversation turns over 1 store: tiny 2)" in " ".join(
        result.stdout.split()
    )
    rows = [line for line in result.stdout.splitlines() if line.startswith(("│ written", "│ grown"))]
    assert len(rows) == 2
    headers = [line for line in result.stdout.splitlines() if line.startswith("┃")]
    assert not any("…" in h or len(h) > 80 for h in headers)
    figures = json.loads(out.read_text())
    assert figures["distractor_turns"] == {"tiny": 2}
    assert figures["without_distractors"]["distractor_turns"] == {}
    for run in (figures, figures["without_distractors"]):
        nous = run["systems"]["nous"]
        assert nous["answered_at_default"] >= nous["right_first_at_default"]


def test_bench_dedup_says_what_it_is_doing(cli: CliRunner, tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "\n".join(
            json.dumps(p)
            for p in (
                {"a": "Alice prefers tea", "b": "Alice likes tea", "label": "duplicate"},
                {"a": "The build uses Bazel", "b": "Lunch is at noon", "label": "unrelated"},
            )
        )
    )
    result = ok(cli, "bench", "dedup", "--data", str(pairs))
    assert "embedding the 2 labelled pairs (4 texts)" in result.stderr
    assert "2 pairs" in result.stdout


def test_every_listing_fits_80_columns_with_whole_headers(
    cli: CliRunner, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = ("--db", database_url)
    fact_id = data(cli, *db, "learn", LONG, "--subject", "Priya", "--category", "person")["id"]
    ok(
        cli,
        *db,
        "decide",
        "Use Postgres for the ledger because we need strict ACID",
        "-r",
        "analysis:needs ACID",
    )
    ok(
        cli,
        *db,
        "censors",
        "add",
        r"DROP\s+TABLE",
        "--action",
        "block",
        "--reason",
        "never drop production tables",
    )
    ok(cli, *db, "procedures", "add", "deploy", "Run the tests, tag the release, then push the tag to origin")
    ok(cli, *db, "context", "Why did we pick Postgres for the ledger?", "--session", "a-long-session-name")
    ok(cli, *db, "reply", "--session", "a-long-session-name", "Because of ACID.", "--tool", "recall")
    ok(cli, *db, "end-session", "a-long-session-name")
    monkeypatch.setenv("COLUMNS", "80")
    listings = [
        ["facts"],
        ["decisions"],
        ["episodes"],
        ["sessions"],
        ["censors"],
        ["procedures"],
        ["events"],
        ["calibration"],
        ["stats"],
        ["recall", "Postgres ledger"],
        ["check-similar", "Priya keeps the budget spreadsheet"],
        ["history", fact_id[:8]],
        ["show", fact_id[:8]],
        ["recent"],
        ["working-memory", "a-long-session-name", "--focus", "keep ACID"],
    ]
    for args in listings:
        out = ok(cli, *db, *args).stdout
        lines = out.splitlines()
        assert max(len(line) for line in lines) <= 80, (args, out)
        headers = [line for line in lines if line.startswith("┃")]
        assert headers and not any("…" in h for h in headers), (args, out)
        assert not any(
            line.startswith("│ ") and re.search(r"\d{4}-\d{2}-\d{2} \d{2}:…", line) for line in lines
        )


def test_facts_give_the_content_the_width_and_filter_like_rest(
    cli: CliRunner, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long subjects and categories are cut before the content: at 80 columns the content is the
    widest column; at 200 every column is whole. --user, --subject and --category narrow the
    list as GET /v1/memories's parameters do."""
    subject = "quarterly infrastructure budget review"
    run(cli, database_url, "learn", LONG, "--subject", subject, "--category", "technical")
    run(
        cli, database_url, "learn", "Deploys happen on Tuesdays", "--subject", "deploys", "--category", "rule"
    )
    run(cli, database_url, "learn", "Ana prefers tea to coffee", "--user", "ana", "--category", "preference")
    for columns in (80, 200):
        monkeypatch.setenv("COLUMNS", str(columns))
        out, _ = run(cli, database_url, "facts", "--user", "ana")
        assert max(len(line) for line in out.splitlines()) <= columns
        rows = table_rows(out)
        assert len(rows) == 3  # one line per fact
        priya = next(r for r in rows if "Priya" in r).strip("│").split("│")
        cells, widths = [c.strip() for c in priya], [len(c) for c in priya]
        content = cells[1]
        if columns == 80:
            assert widths[1] >= 30 and widths[1] > widths[2] + widths[3], widths
            assert cells[2].endswith("…") and subject.startswith(cells[2][:-1])
            assert content.endswith("…") and LONG.startswith(content[:-1].rstrip())
        else:
            assert cells[2] == subject and cells[3] == "technical"
            assert LONG.startswith(content.removesuffix("…")) and len(content) >= 60
    everything = {f["content"] for f in data(cli, "--db", database_url, "facts")}
    assert everything == {LONG, "Deploys happen on Tuesdays", "Ana prefers tea to coffee"}
    shared = {f["content"] for f in data(cli, "--db", database_url, "facts", "--user", "bob")}
    assert shared == {LONG, "Deploys happen on Tuesdays"}  # ana's own fact is not bob's
    assert [f["content"] for f in data(cli, "--db", database_url, "facts", "--subject", "deploys")] == [
        "Deploys happen on Tuesdays"
    ]
    assert [
        f["content"]
        for f in data(cli, "--db", database_url, "facts", "--user", "ana", "--category", "preference")
    ] == ["Ana prefers tea to coffee"]


def test_a_listing_says_when_it_stopped_at_its_limit(cli: CliRunner, database_url: str) -> None:
    """Three facts, two shown: the table says there are more and how to see them; JSON holds two."""
    for text in ("The office opens at 8", "The printer is on floor 2", "Parking is free after 6 pm"):
        ok(cli, "--db", database_url, "learn", text)
    out = run(cli, database_url, "facts", "--limit", "2")[0]
    assert "the newest 2 facts shown; there are more: --limit N" in " ".join(out.split())
    assert len(data(cli, "--db", database_url, "facts", "--limit", "2")) == 2
    assert "there are more" not in run(cli, database_url, "facts", "--limit", "3")[0]


def test_a_table_refuses_a_row_that_does_not_fill_its_columns() -> None:
    """A figure under another figure's header misleads: a row with a cell too few is a bug."""
    from nous.cli.output import table

    with pytest.raises(ValueError, match="one cell per column"):
        table("figures", ["name", "groups", "all"], [["a", "0.5", "0.4"], ["b", "0.5"]])
