"""The benchmarks run end to end on small inputs and report the documented shape."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nous import Nous, Settings
from nous.bench.cold_start import run_cold_start
from nous.bench.context import run_context
from nous.bench.extraction import run_extraction
from nous.bench.junk import (
    family_not_said,
    from_assistant,
    has_code,
    has_url,
    is_fragment,
    is_request,
    near_duplicate,
    several_subjects,
    unresolved_date,
    verb_uses,
)
from nous.bench.locomo import load_any_dir, run_locomo
from nous.bench.scale import run_fill, run_scale
from nous.cli.app import app
from nous.embeddings.base import EmbeddingProvider

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo"


def _small_locomo(tmp_path: Path, sessions: int = 3) -> Path:
    data = json.loads((LOCOMO / "30.json").read_text())
    keep = {f"session_{i}" for i in range(1, sessions + 1)}
    for key in [k for k in data if k.startswith("session_") and k.split("_")[1].isdigit()]:
        if f"session_{key.split('_')[1]}" not in keep:
            data.pop(key)
    turns = {t["dia_id"] for k in keep for t in data.get(k, [])}
    data["qa"] = [q for q in data["qa"] if q.get("evidence") and set(q["evidence"]) <= turns]
    out = tmp_path / "small"
    out.mkdir()
    (out / "30-small.json").write_text(json.dumps(data))
    return out


async def test_locomo_benchmark_shape(tmp_path: Path, provider: EmbeddingProvider) -> None:
    directory = _small_locomo(tmp_path)
    result = await run_locomo(directory, ks=(5, 10), settings=Settings(home=tmp_path), provider=provider)
    assert result["questions"] > 5
    for system in ("nous", "bm25", "dense"):
        figures = result["systems"][system]
        for key in ("recall_all@10", "recall_any@10", "recall_all@5"):
            assert 0.0 <= figures[key] <= 1.0
        assert figures["recall_any@10"] >= figures["groups@10"] >= figures["recall_all@10"]
        assert set(figures["per_category"]) <= {"1", "2", "3", "4"}
    assert result["systems"]["bm25"]["variant"] in ("bm25s", "bm25_fts5")
    assert set(result["keyword_baselines"]) == {"bm25s", "bm25_fts5"}
    best = max(result["systems"][s]["recall_all@10"] for s in ("bm25", "dense"))
    assert result["ratio_vs_best_baseline@10"] == round(result["systems"]["nous"]["recall_all@10"] / best, 3)
    assert result["systems"]["nous"]["recall_all@10"] >= result["systems"]["bm25"]["recall_all@10"]
    assert result["latency_ms"]["p95"] >= result["latency_ms"]["p50"] > 0
    assert result["ingest_per_s"] > 0


async def test_extraction_benchmark_checks_locomo_files_and_chats(
    tmp_path: Path, provider: EmbeddingProvider
) -> None:
    directory = _small_locomo(tmp_path)
    code = "Here it is:\n```python\nimport os\nprint(os.getcwd())\n```"
    chat = {
        "id": "chat",
        "sessions": [
            {
                "id": "s1",
                "started_at": "2026-03-01T09:00:00+00:00",
                "messages": [
                    {
                        "id": "m0",
                        "role": "user",
                        "content": "I'm moving our billing service from Heroku to Fly.io.",
                    },
                    {"id": "m1", "role": "assistant", "content": "I love Fly.io; you should pin the region."},
                    {"id": "m2", "role": "user", "content": code},
                    {"id": "m3", "role": "user", "content": "Can you help me write the migration checklist?"},
                ],
            }
        ],
        "questions": [],
    }
    (directory / "chat.json").write_text(json.dumps(chat))
    result = await run_extraction(directory, settings=Settings(home=tmp_path), provider=provider)
    assert result["kinds"] == ["chat", "locomo"] and result["files"] == 2
    junk = result["junk"]
    assert junk["facts"] == result["facts"] > 0
    for check in ("from_assistant", "code_or_url", "over_300", "request_or_question"):
        assert junk[check] == 0, junk["examples"]
    assert result["sessions"] == 3 and 0.0 <= result["event_coverage"] <= 1.0  # the LoCoMo sessions
    assert result["summary_fragments"] == 0
    (chat_row,) = [f for f in result["per_file"] if f["kind"] == "chat"]
    assert chat_row["facts"] == 1


def test_junk_checks_read_facts_as_a_reader_would() -> None:
    roles = {"m0": "user", "m1": "assistant"}
    said = {"m0": "I moved to Lisbon.", "m1": "Lisbon has great pastries and a mild winter climate."}
    assert from_assistant("The user moved to Lisbon.", "the user", ["m1"], roles, said)  # by provenance
    assert from_assistant("Lisbon has great pastries and a mild winter.", "the user", ["m0"], roles, said)
    assert not from_assistant("The user moved to Lisbon.", "the user", ["m0"], roles, said)
    assert has_code("The user has app = Flask(__name__) set up.") and has_url("See https://x.io/a")
    assert not has_code("The user uses Flask 2.3.1 and Python 3.11 on Render.com.")
    for text in [
        "How can the user apply these new skills to their job search?",
        "The user needs help completing the password hashing logic.",
        "..., can the user applies these skills",
        "The user is not sure how to proceed.",
    ]:
        assert is_request(text), text
    assert not is_request("The user learned how to paint and is helping her kids with homework.")
    vegetarian = "Maya is vegetarian, as are two other team members; dinners need real vegetarian options."
    assert near_duplicate("Maya is vegetarian and so are two others.", vegetarian, 0.85, "Maya")
    assert not near_duplicate(
        "Maya went camping in June.", "Maya went to a pottery class in June.", 0.7, "Maya"
    )


def test_the_reader_checks_of_facts_and_summaries() -> None:
    """Sentence fragments, "and family" nobody said, relative dates left as said, and one person
    under several subjects."""
    uses = verb_uses(["Why did we pick Postgres?", "I'll call the vet.", "The call went well."])
    for fragment in [
        "They asked about pick Postgres.",
        "rust.",
        "The user's favourite language",
        "Postgres and Kafka.",
    ]:
        assert is_fragment(fragment, uses), fragment
    for sentence in [
        "The user lives in Lyon.",
        "They asked about the call schedule.",
        "The assistant went through password hashing and user authentication.",
        "Caroline went to a support group on 7 May 2023.",
    ]:
        assert not is_fragment(sentence, uses), sentence
    assert family_not_said("Maya and family switched their CI to GitHub Actions.", ["We switched our CI."])
    assert not family_not_said("Maya and family went camping.", ["We took the kids camping."])
    for text in ["Ben started at Spotify on Monday.", "Ana moved two weeks ago.", "They met last Friday."]:
        assert unresolved_date(text), text
    for text in ["Ben started at Spotify on 2 March 2026.", "Maya never deploys on Fridays."]:
        assert not unresolved_date(text), text
    groups = several_subjects([("alice", "alice"), ("alice", "Alice"), ("alice", "the user"), (None, "Ben")])
    assert groups == [["Alice", "alice", "the user"]]
    assert several_subjects([(None, "Caroline"), (None, "Melanie")], ["Caroline", "Melanie"]) == []
    # a chat whose user is unnamed: "Craig" beside "the user" is the same person twice
    assert several_subjects([(None, "the user"), (None, "Craig")], ["the user"]) == [["Craig", "the user"]]


async def test_scale_benchmark_shape(tmp_path: Path, provider: EmbeddingProvider) -> None:
    result = await run_scale(100, queries=10, settings=Settings(home=tmp_path), provider=provider)
    assert result["n"] == 100 and result["backend"] == "sqlite"
    assert result["ingest_per_s"] > 0 and result["storage_overhead_ratio"] > 0
    assert result["recall_latency_ms"]["p95"] >= result["recall_latency_ms"]["p50"] > 0
    assert result["pre_turn_latency_ms"]["p95"] >= result["pre_turn_latency_ms"]["p50"] > 0


async def test_bench_cold_start_against_a_real_server(tmp_path: Path) -> None:
    """`nous bench cold-start` on a small store: the index opened from its file answers as the
    rebuild did; each start of the server is timed in order (socket, then ready, then a recall)."""
    result = await run_cold_start(300, workers=1, db=tmp_path / "cold.db")
    index = result["index"]
    assert index["same_results"] and index["file_mb"] > 0
    assert index["from_file"]["from_file"] and not index["rebuilt"]["from_file"]
    for start in result["serve"].values():
        assert 0 < start["socket_s"] <= start["health_ok_s"]
        assert start["first_recall_s"] >= start["socket_s"]
    assert result["memories"] == 300


async def test_bench_fill_adds_memories_with_vectors_to_the_configured_store(
    tmp_path: Path, provider: EmbeddingProvider
) -> None:
    """`nous bench fill`: N memories in the configured store, every one with its vector, added to
    what is there (a second fill doubles the store)."""
    settings = Settings(home=tmp_path)
    for _ in range(2):
        result = await run_fill(120, settings, agent_id="filled", provider=provider)
    assert result["added"] == 120 and result["memories_per_s"] > 0
    async with Nous(settings, agent_id="filled", embedding_provider=provider) as nous:
        stats = await nous.stats()
    assert stats.active_by_kind == {"fact": 192, "procedure": 24}  # a tenth inactive, a tenth procedures
    assert stats.inactive == 24 and stats.missing_embeddings == 0


async def test_scale_benchmark_on_postgres_drops_its_scratch_schema(
    tmp_path: Path, provider: EmbeddingProvider, pg_schema: str
) -> None:
    import psycopg

    from .conftest import PG_URL, pg_url

    result = await run_scale(
        100,
        pg_url(pg_schema),
        queries=10,
        settings=Settings(home=tmp_path),
        provider=provider,
        drop_after=True,
    )
    assert result["backend"] == "postgres" and result["n"] == 100
    with psycopg.connect(PG_URL) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (pg_schema,)).fetchone()
    assert found is None


async def test_context_benchmark_finds_evidence_in_what_the_agent_sees(
    tmp_path: Path, provider: EmbeddingProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frame's own budget (the single-budget report's keys, at the top level) and 1,000 tokens,
    from one ingest: each context and each packed baseline within its budget."""
    conversations = load_any_dir(_small_locomo(tmp_path))
    result = await run_context(
        {"small": conversations}, budgets=(None, 1000), settings=Settings(home=tmp_path), provider=provider
    )
    assert result["questions"] == sum(len(c.questions) for c in conversations) > 5
    assert 0.5 <= result["context_recall_all"] <= result["context_recall_any"] <= 1.0  # a 3-session chat
    assert set(result["per_category"]) <= {"1", "2", "3", "4"}
    tokens = result["tokens"]
    assert tokens["over_budget"] == 0 and tokens["p50"] <= tokens["p95"] <= tokens["max"] <= 12000
    assert sum(result["frames"].values()) == result["questions"]
    assert result["latency_ms"]["p95"] >= result["latency_ms"]["p50"] > 0
    assert result["budgets"] == ["frame", "1000"] and result["datasets"] == {"small": result["questions"]}
    frame, small = result["by_budget"]["frame"], result["by_budget"]["1000"]
    assert frame["nous"]["all"] == result["context_recall_all"] and frame["nous"]["tokens"] == tokens
    for figures in (frame, small):
        for system in ("nous", "baseline"):
            f = figures[system]
            assert f["tokens"]["over_budget"] == 0
            assert 0 <= f["all"] <= f["groups"] <= f["any"] <= 1 and f["questions"] == result["questions"]
            assert set(f["per_dataset"]) == {"small"} and set(f["per_category"]) == set(
                result["per_category"]
            )
        assert figures["baseline"]["variant"] in ("bm25s", "bm25_fts5")
        assert figures["ratio_groups"] == round(figures["nous"]["groups"] / figures["baseline"]["groups"], 3)
        at_used = figures["baseline_at_tokens_used"]  # the baseline in no more tokens than nous used
        assert at_used["tokens"]["over_budget"] == 0 and at_used["variant"] == figures["baseline"]["variant"]
        assert at_used["tokens"]["max"] <= figures["nous"]["tokens"]["max"]
    assert small["nous"]["tokens"]["max"] <= 1000
    for row in (small["nous"]["per_dataset"]["small"], *small["nous"]["per_category"].values()):
        assert 0 < row["tokens_p50"] <= row["tokens_p95"] <= 1000  # tokens used per dataset and category
    # three sessions hold more than 1,000 tokens of messages: the baseline fills the budget
    assert 900 <= small["baseline"]["tokens"]["p50"] <= small["baseline"]["tokens"]["max"] <= 1000
    # the printed tables, 80 columns wide: each header over its own figure, none cut
    from nous.cli.bench import print_context
    from nous.cli.output import console

    monkeypatch.setattr(console, "_width", 80)
    with console.capture() as printed:
        print_context(result)
    lines = printed.get().splitlines()
    header = next(line for line in lines if "category" in line and "groups" in line)
    names = ["category", "n", "groups", "all", "base", "ratio", "tokens", "base tok"]
    assert [cell.strip() for cell in header.split("┃")[1:-1]] == names
    n, b = small["nous"], small["baseline"]
    start = next(i for i, line in enumerate(lines) if "budget 1000" in line)
    total = next(line for line in lines[start:] if line.startswith("│ all "))
    cells = [c.strip() for c in total.split("│")[1:-1]]
    assert cells == [
        "all",
        str(n["questions"]),
        f"{n['groups']:.3f}",
        f"{n['all']:.3f}",
        f"{b['groups']:.3f}",
        f"{n['groups'] / b['groups']:.2f}",
        str(n["tokens_p50"]),
        str(b["tokens_p50"]),
    ]
    assert "…" not in printed.get() and max(len(line) for line in lines) <= 80


def test_packed_baseline_fills_the_budget_in_rank_order_and_scores_what_it_quotes() -> None:
    from nous._tokens import count_tokens
    from nous.bench.context import interleave, pack, packed_present
    from nous.bench.labelled import LabelledQuestion
    from nous.cognitive.context import ITEM_MAX_TOKENS

    assert interleave(["a", "b", "c"], ["b", "d"]) == ["a", "b", "d", "c"]  # BM25 first, then dense
    long = " ".join(f"word{i}" for i in range(600))
    contents = {
        "m1": long,
        "m2": "April 6th. My goal is under two hours.",
        "m3": "two hours",
        "m4": "Lisbon.",
    }
    lines = {mid: f"Ana: {text}" for mid, text in contents.items()}
    small = pack(["m1", "m2", "m4"], lines, 60)  # the long message (clipped to 200 tokens) does not fit
    assert (
        small.ids == ["m2", "m4"]
        and small.text == "Ana: April 6th. My goal is under two hours.\nAna: Lisbon."
    )
    assert small.tokens == count_tokens(small.text) <= 60
    large = pack(["m1", "m2", "m4"], lines, 1000)
    assert large.ids == ["m1", "m2", "m4"] and large.tokens <= 1000
    assert count_tokens(large.text.split("\n")[0]) == ITEM_MAX_TOKENS  # clipped to the per-item ceiling
    question = LabelledQuestion(id="q", question="goal?", evidence=[["m1"], ["m2"], ["m3"], ["m3", "m4"]])
    # m3's text is inside m2's, but m3 was not packed: a group counts only for a packed message
    assert packed_present(question, small, contents) == [False, True, False, True]
    assert packed_present(question, large, contents) == [True, True, False, True]  # m1 quoted by its start


async def test_bench_load_against_a_real_server() -> None:
    """A short load on a real `nous serve` process: every request answered, figures in shape."""
    from nous.bench.load import run_load

    result = await run_load(clients=3, seconds=3, seed_facts=50)
    assert result["error_count"] == 0 and result["requests"] > 0
    # Which operations the random mix drew in 3 s depends on the machine's speed; recall alone is
    # always measured (single_client_recall_ms).
    assert set(result["operations"]) <= {"write", "recall", "context"}
    assert result["single_client_recall_ms"]["p95"] > 0 and result["recall_p95_ratio_loaded_to_single"] > 0
    assert result["workers"] == 1 and result["server_cpu_ms_per_request"] > 0


async def test_bench_censor_stall_against_a_real_server() -> None:
    """`nous bench censor-stall`: the slow censors are accepted by the API's validator, every
    check runs them out of time (fail closed), and the probes are answered alone and under load."""
    from nous.bench.censor_stall import CENSORS, run_censor_stall

    result = await run_censor_stall(checkers=2, rounds=5)
    assert result["censors"] == CENSORS == len(result["patterns"])
    assert result["check_action_ms"]["count"] >= 1
    assert result["patterns_timed_out"] == CENSORS * result["check_action_ms"]["count"]
    for when in ("alone", "during_checks"):
        for figure in ("health_ms", "other_recall_ms"):
            assert 0 < result[when][figure]["p50"] <= result[when][figure]["p95"]


async def test_bench_load_series_on_two_workers_compares_client_counts() -> None:
    """`nous bench load --clients 1,3 --workers 2`: a run per count, each on a fresh store served
    by two processes, and the second's requests/s and recall p95 as ratios of the first's."""
    from nous.bench.load import run_load_series

    series = await run_load_series([1, 3], seconds=2, seed_facts=30, workers=2)
    runs = series["runs"]
    assert [r["clients"] for r in runs] == [1, 3] and all(r["workers"] == 2 for r in runs)
    assert all(r["error_count"] == 0 and r["requests"] > 0 for r in runs)
    (row,) = series["against_fewest_clients"]
    expected = round(runs[1]["requests_per_s"] / runs[0]["requests_per_s"], 2)
    assert row["clients"] == 3 and row["requests_per_s"] == expected


def test_bench_load_refuses_bad_client_counts(cli: CliRunner) -> None:
    for bad in ("0", "1,x", "", "1,600"):
        result = cli.invoke(app, ["bench", "load", "--clients", bad, "--seconds", "1"])
        assert result.exit_code == 2 and "--clients" in result.output, (bad, result.output)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_bench_crash_loses_nothing(backend: str) -> None:
    """A few SIGKILLs of a real writer process: every acknowledged write survives."""
    from nous.bench.crash import run_crash
    from tests.conftest import PG_URL

    url = (
        f"{PG_URL}{'&' if '?' in PG_URL else '?'}nous_schema=crash_{uuid.uuid4().hex[:8]}"
        if backend == "postgres"
        else None
    )
    result = await run_crash(kills=3, database_url=url)
    assert result["lost"] == 0 and result["problems"] == [], result["problems"]
    assert result["kills"] == 3 and result["writes_acknowledged"] > 0
    assert result["writes_verified"] == result["writes_acknowledged"]


def test_groups_at_k_is_the_share_of_evidence_groups_found() -> None:
    from nous.bench.labelled import LabelledQuestion, Scores

    scores = Scores(ks=(2,))
    question = LabelledQuestion(
        id="q1", question="in what order?", category="order", evidence=[["m1"], ["m2"], ["m3", "m4"], ["m5"]]
    )
    scores.add(question, [["m1"], ["m4"], ["m2"]])  # the top 2 hold groups 1 and 3 of 4
    figures = scores.summary()
    assert figures["groups@2"] == 0.5
    assert figures["recall_all@2"] == 0.0 and figures["recall_any@2"] == 1.0
