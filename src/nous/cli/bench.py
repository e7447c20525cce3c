"""``nous bench``: benchmarks that print figures."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape

from nous.cli.output import Steps, console, duration, err_console, plural, print_json, table
from nous.cli.runtime import fail, run, state
from nous.errors import NousError

if TYPE_CHECKING:
    from nous.bench.labelled import LabelledConversation

T = TypeVar("T")
app = typer.Typer(
    help="Benchmarks: figures printed, never pass/fail. Each shows its progress on stderr.\n\n"
    "Example: nous bench dedup --json dedup.json",
    no_args_is_help=True,
)


def _ints(raw: str, name: str) -> list[int]:
    try:
        values = [int(x) for x in raw.split(",") if x.strip()]
    except ValueError:
        raise fail(f"{name} must be comma-separated integers, got {raw!r}", 2) from None
    if not values or any(v <= 0 for v in values):
        raise fail(f"{name} must list positive integers", 2)
    return values


def _progress(message: str) -> None:
    """A line about the run (a conversation started or finished) on stderr, beside the steps."""
    err_console.print(f"[dim]{escape(message)}[/dim]", highlight=False)


def _dataset(directory: Path) -> None:
    """A dataset folder that is not there: one line saying what to pass, exit 2."""
    if not directory.is_dir():
        raise fail(
            f"{directory} is not a directory: pass the folder of a dataset (this repository's "
            "examples use ../shared/datasets/NAME, beside the clone; give the path where yours is)",
            2,
        )


def _load(directory: Path, loader: Callable[[], T]) -> T:
    """What ``loader`` reads from ``directory``; a missing folder or a bad file is one line, exit 2."""
    _dataset(directory)
    try:
        return loader()
    except (NousError, FileNotFoundError) as exc:
        raise fail(str(exc), 2) from None


@app.command()
def scale(
    ctx: typer.Context,
    n: Annotated[str, typer.Option("--n", help="Store sizes, comma-separated, e.g. 10000,100000.")] = "10000",
    queries: Annotated[int, typer.Option(min=10, help="Recall queries timed per size.")] = 200,
    postgres: Annotated[
        str | None, typer.Option(help="Also run on this PostgreSQL URL (a fresh schema is used).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--json", help="Also write the figures to this JSON file.")
    ] = None,
    precomputed: Annotated[
        bool,
        typer.Option(
            "--precomputed-vectors",
            help="Build the store from vectors mixed out of a sample's real embeddings instead of "
            "embedding every text (queries still embed theirs); for sizes too large to embed.",
        ),
    ] = False,
    sqlite: Annotated[
        bool, typer.Option("--sqlite/--no-sqlite", help="Run on SQLite too (--no-sqlite: PostgreSQL only).")
    ] = True,
) -> None:
    """Ingest rate (memories/s, and its ratio to the raw embedding rate), recall and pre_turn p50/p95
    at N memories, recall p95 with a metadata filter (a tenth of the store) against without, the vector search's recall@10 against an exact scan (facts, active only), the
    process's resident memory and the store's size on disk.

    Each size runs on a fresh temporary SQLite store, and on PostgreSQL when --postgres is given
    (in a scratch schema, dropped afterwards).

    Example: nous bench scale --n 10000,100000 --json scale.json
    """
    from nous.bench.scale import run_scale

    settings = state(ctx).settings
    sizes = _ints(n, "--n")
    results: list[dict[str, Any]] = []
    with ExitStack() as stages:
        current: dict[str, Steps] = {}
        label = ""

        def report(stage: str, done: int, total: int) -> None:
            """Steps per stage (ingest, recall, pre_turn) of each run: a new stage closes the last."""
            key = f"{label} {stage}"
            if key not in current:
                stages.close()
                current.clear()
                current[key] = stages.enter_context(Steps(key, total))
            steps = current[key]
            if done > steps.done:
                steps.advance(count=done - steps.done)

        for size in sizes:
            targets: list[str | None] = [None] if sqlite else []
            if postgres:
                sep = "&" if "?" in postgres else "?"
                targets.append(f"{postgres}{sep}nous_schema=bench_{size}_{uuid.uuid4().hex[:8]}")
            for url in targets:
                label = f"{'postgres' if url else 'sqlite'} n={size}"
                results.append(
                    run(
                        run_scale(
                            size,
                            url,
                            queries=queries,
                            settings=settings,
                            progress=report,
                            drop_after=url is not None,
                            precomputed=precomputed,
                        )
                    )
                )
    # one column per run and one row per figure: nine figures side by side do not fit a terminal
    figures: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
        ("ingest memories/s", lambda r: r["ingest_per_s"]),
        ("raw embeddings/s", lambda r: r["raw_embedding_per_s"]),
        ("overhead ×", lambda r: r["storage_overhead_ratio"]),
        ("recall p50 ms", lambda r: r["recall_latency_ms"]["p50"]),
        ("recall p95 ms", lambda r: r["recall_latency_ms"]["p95"]),
        ("recall p95 ms, metadata filter", lambda r: r["recall_where_latency_ms"]["p95"]),
        ("  filtered / unfiltered p95", lambda r: r["recall_where_p95_ratio"]),
        ("pre_turn p50 ms", lambda r: r["pre_turn_latency_ms"]["p50"]),
        ("pre_turn p95 ms", lambda r: r["pre_turn_latency_ms"]["p95"]),
        ("ANN recall@10 vs exact", lambda r: r["ann_recall_at_10"]),
        ("hnsw.ef_search", lambda r: r["ef_search"] or "-"),
        ("RSS MB (peak)", lambda r: f"{r['rss_mb']['now']} ({r['rss_mb']['peak']})"),
        ("store MB on disk", lambda r: r["store_mb"]),
    ]
    table(
        "nous bench scale",
        ["figure", *(f"{r['backend']} n={r['n']}" for r in results)],
        [[name, *(get(r) for r in results)] for name, get in figures],
    )
    if out:
        out.write_text(json.dumps({"results": results}, indent=2))
        console.print(f"wrote {out}")
    elif not console.is_terminal:
        print_json({"results": results})


def _retrieval_report(title: str, result: dict[str, Any], ks: tuple[int, ...], out: Path | None) -> None:
    """Print the retrieval tables (overall, per category) and the latency line; write the JSON."""
    columns = ["system"] + [f"{m}@{x}" for x in ks for m in ("any", "all")]
    rows = [
        [name if name != "bm25" else f"bm25 ({s['variant']})"]
        + [f"{s[f'recall_{m}@{x}']:.3f}" for x in ks for m in ("any", "all")]
        for name, s in result["systems"].items()
    ]
    table(f"{title} · {plural(result['questions'], 'question')}", columns, rows)
    cats = sorted(result["systems"]["nous"]["per_category"])
    kk = 10 if 10 in ks else max(ks)
    systems = list(result["systems"])
    for metric in (f"recall_all@{kk}", f"groups@{kk}"):
        table(  # one row per category: category names can be long
            f"{metric} per category",
            ["category", "questions", *systems],
            [
                [c, result["systems"]["nous"]["per_category"][c]["questions"]]
                + [f"{result['systems'][name]['per_category'][c].get(metric, 0.0):.3f}" for name in systems]
                for c in cats
            ],
        )
    lat = result["latency_ms"]
    ratio = result.get(f"ratio_vs_best_baseline@{kk}")
    console.print(
        f"nous / best baseline (recall_all@{kk}) {ratio} · recall latency p50 {lat.get('p50')} ms · "
        f"p95 {lat.get('p95')} ms · ingest {result['ingest_per_s']} turns/s"
    )
    if out:
        out.write_text(json.dumps(result, indent=2))
        console.print(f"wrote {out}")


_K_OPTION = typer.Option("--k", help="Cut-offs, comma-separated.")
_JSON_OPTION = typer.Option("--json", help="Also write the figures to this JSON file.")
_FILES_OPTION = typer.Option(min=1, help="Only the first N files (for smoke runs).")
_PRESETS_OPTION = typer.Option(
    "--presets", help="Also score these recall presets, comma-separated (e.g. dense-only,no-boosts)."
)
_EXTRACT_OPTION = typer.Option(
    "--extract",
    help="Then run the event pipeline (summaries, extracted facts) and ask again: nous+extract, "
    "side by side. A fact counts for the turns it came from.",
)


def _run_retrieval_command(
    ctx: typer.Context,
    title: str,
    loader: Callable[[], list[LabelledConversation]],
    k: str,
    out: Path | None,
    presets: str,
    extract: bool = False,
) -> None:
    from nous.bench.retrieval import run_retrieval
    from nous.retrieval.weights import PRESETS

    ks = tuple(_ints(k, "--k"))
    wanted = [p.strip() for p in presets.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in PRESETS]
    if unknown:
        raise fail(f"unknown preset {unknown[0]!r}: choose from {', '.join(PRESETS)}", 2)
    conversations = loader()
    asked = sum(len(c.questions) for c in conversations) * (2 if extract else 1)
    with Steps("questions", asked) as steps:
        result = run(
            run_retrieval(
                conversations,
                ks=ks,
                settings=state(ctx).settings,
                presets=wanted,
                extract=extract,
                progress=_progress,
                step=steps.advance,
            )
        )
    _retrieval_report(title, result, ks, out)


@app.command()
def retrieval(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Folder of labelled conversation *.json files.")],
    k: Annotated[str, _K_OPTION] = "5,10,20",
    out: Annotated[Path | None, _JSON_OPTION] = None,
    files: Annotated[int | None, _FILES_OPTION] = None,
    presets: Annotated[str, _PRESETS_OPTION] = "",
    extract: Annotated[bool, _EXTRACT_OPTION] = False,
) -> None:
    """Retrieval on labelled conversations: Nous against BM25 and dense baselines.

    A labelled conversation is the native ingest format plus a `questions` list, each with
    `id`, `question`, `category`, `asked_at` and `evidence` (groups of message ids; a group is
    found when any one of its ids is retrieved). Each file gets a fresh store; each question is
    recalled with now = asked_at. Prints recall_any@k / recall_all@k overall and per category,
    the ratio to the better baseline, recall latency and ingest rate.

    Example: nous bench retrieval ../shared/datasets/beam --json beam.json
    """
    from nous.bench.locomo import load_labelled_dir

    _run_retrieval_command(
        ctx,
        "retrieval",
        lambda: _load(directory, lambda: load_labelled_dir(directory, files)),
        k,
        out,
        presets,
        extract,
    )


@app.command()
def locomo(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Folder of LoCoMo-format conversation *.json files.")],
    k: Annotated[str, _K_OPTION] = "5,10,20",
    out: Annotated[Path | None, _JSON_OPTION] = None,
    files: Annotated[int | None, _FILES_OPTION] = None,
    presets: Annotated[str, _PRESETS_OPTION] = "",
    extract: Annotated[bool, _EXTRACT_OPTION] = False,
) -> None:
    """Retrieval on LoCoMo (categories 1-4): the `bench retrieval` scorer over LoCoMo files.

    Example: nous bench locomo ../shared/datasets/locomo --json locomo.json
    """
    from nous.bench.locomo import load_locomo_dir

    _run_retrieval_command(
        ctx,
        "LoCoMo retrieval",
        lambda: _load(directory, lambda: load_locomo_dir(directory, files)),
        k,
        out,
        presets,
        extract,
    )


@app.command()
def agent(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Folder of agent-memory scenario *.json files.")],
    out: Annotated[Path | None, _JSON_OPTION] = None,
    files: Annotated[int | None, _FILES_OPTION] = None,
    distractors: Annotated[
        Path | None,
        typer.Option(
            help="Folder of conversations (any shape nous ingest reads: LoCoMo, chat logs, native) "
            "ingested into each scenario's store before it is written; the run is then made "
            "without and with them.",
        ),
    ] = None,
    per_scenario: Annotated[
        int, typer.Option(min=1, help="Distractor conversations per scenario, taken in turn.")
    ] = 1,
) -> None:
    """Agent-memory scenarios: recall across facts, decisions, procedures, censors, episodes and
    turns, and the context built for each question.

    Each scenario gets a fresh store written through the public API (each memory at its time);
    each question is recalled at its time by Nous and by the dense-only and keyword-only presets
    on the same store, and built into a context by a preview of pre_turn (nothing written).
    Prints hit@1, hit@5, stale@1 (an outdated fact first), abstention AUROC (the top score of
    answerable against unanswerable questions), context_include (the context holds what it must),
    overall and per question kind, and recall / preview latency.

    With --distractors, every scenario is run twice: as written, and in a store that first
    ingested other conversations (a store that grew); both runs' figures are printed side by side.

    Example: nous bench agent ../shared/datasets/agent --distractors ../shared/datasets/locomo
    """
    from nous.bench.agent import BASELINES, load_conversations, load_scenarios, run_agent

    scenarios = _load(directory, lambda: load_scenarios(directory, files))
    others = _load(distractors, lambda: load_conversations(distractors)) if distractors else []
    runs = 2 if others else 1
    with Steps("questions", runs * sum(len(s.questions) for s in scenarios)) as steps:
        plain = run(
            run_agent(scenarios, settings=state(ctx).settings, progress=_progress, step=steps.advance)
        )
        result = plain
        if others:
            result = run(
                run_agent(
                    scenarios,
                    settings=state(ctx).settings,
                    progress=_progress,
                    step=steps.advance,
                    distractors=others,
                    distractors_per_scenario=per_scenario,
                )
            )
            result["without_distractors"] = plain

    def fmt(value: float | None) -> str:
        return "–" if value is None else f"{value:.3f}"

    metrics = ("hit@1", "hit@5", "stale@1", "auroc")
    table(
        f"nous bench agent · {plural(len(result['questions']), 'question')} · "
        f"{plural(len(result['scenarios']), 'scenario')}",
        ["system", *metrics, "ctx"],
        [
            [name, *(fmt(s[m]) for m in metrics), fmt(result["context_include"]) if name == "nous" else "–"]
            for name, s in result["systems"].items()
        ],
    )
    baselines = result["per_kind_baselines"]
    short_names = {"dense-only": "dense", "keyword-only": "keyword"}  # their hit@1, as the title says
    table(
        "per kind (nous; the baselines' hit@1 beside it; ctx = context_include)",
        ["kind", "n", *metrics, "ctx", *(short_names[b] for b in BASELINES if b in baselines)],
        [
            [
                kind,
                m["questions"],
                *(fmt(m[x]) for x in metrics),
                fmt(m.get("context_include")),
                *(fmt(baselines[b][kind]["hit@1"]) for b in BASELINES if b in baselines),
            ]
            for kind, m in result["per_kind"].items()
        ],
    )
    if others:
        grown = result["distractor_turns"]
        # (column, figure): "answered", "right 1st" and "abstain" are at the default minimum score;
        # "written" is each store as written, "grown" the same after the distractors.
        compared = (
            ("hit@1", "hit@1"),
            ("hit@5", "hit@5"),
            ("stale@1", "stale@1"),
            ("auroc", "auroc"),
            ("answered", "answered_at_default"),
            ("right 1st", "right_first_at_default"),
            ("abstain", "abstained_at_default"),
        )
        table(
            f"nous without and with distractors ({plural(sum(grown.values()), 'conversation turn')} "
            f"over {plural(len(grown), 'store')}: {', '.join(f'{k} {v}' for k, v in grown.items())})",
            ["store", *(c for c, _ in compared)],
            [
                [label, *(fmt(r["systems"]["nous"].get(m)) for _, m in compared)]
                for label, r in (("written", plain), ("grown", result))
            ],
        )
    lat, nous_figures = result["latency_ms"], result["systems"]["nous"]
    console.print(
        f"at the default minimum score {state(ctx).settings.recall_min_score}: answerable questions "
        f"given a result {fmt(nous_figures.get('answered_at_default'))}, their right answer first "
        f"{fmt(nous_figures.get('right_first_at_default'))}; unanswerable ones given nothing "
        f"{fmt(nous_figures.get('abstained_at_default'))}"
    )
    console.print(
        f"recall p50 {lat['recall']['p50']} ms · p95 {lat['recall']['p95']} ms · pre_turn preview "
        f"p50 {lat['pre_turn_preview']['p50']} ms · p95 {lat['pre_turn_preview']['p95']} ms"
    )
    if out:
        out.write_text(json.dumps(result, indent=2))
        console.print(f"wrote {out}")


def _budgets(raw: str | None) -> list[int | None]:
    """``--budget``: comma-separated totals of at least ``MIN_BUDGET`` tokens; none given, the
    frame's own total (None)."""
    from nous.cognitive.layer import MIN_BUDGET

    if raw is None:
        return [None]
    values = _ints(raw, "--budget")
    if any(v < MIN_BUDGET for v in values):
        raise fail(f"--budget: each total must be at least {MIN_BUDGET} tokens, got {raw!r}", 2)
    return list(values)


def _dataset_names(directories: list[Path]) -> list[str]:
    """A name per folder: its own name, or its path when two folders share a name."""
    names = [d.name or str(d) for d in directories]
    return [str(d) if names.count(n) > 1 else n for d, n in zip(directories, names, strict=True)]


def _times(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}"


def _context_rows(figures: dict[str, Any]) -> list[list[Any]]:
    """Per dataset and category, then per dataset and overall: the share of evidence groups in
    nous's context and of questions with all of theirs, the packed baseline's share of groups,
    the ratio of the two shares of groups and the tokens each used (p50; any and p95 are in the
    JSON)."""
    nous, base = figures["nous"], figures["baseline"]
    rows: list[list[Any]] = []

    def row(dataset: str, category: str, n: dict[str, Any], b: dict[str, Any]) -> list[Any]:
        ratio = f"{n['groups'] / b['groups']:.2f}" if b["groups"] else "-"
        return [
            dataset,
            category,
            n["questions"],
            f"{n['groups']:.3f}",
            f"{n['all']:.3f}",
            f"{b['groups']:.3f}",
            ratio,
            n["tokens_p50"],
            b["tokens_p50"],
        ]

    several = len(nous["per_dataset"]) > 1
    for name, n in nous["per_dataset"].items():
        b = base["per_dataset"][name]
        categories = n["per_category"]
        for category, m in categories.items():
            rows.append(row(name, category, m, b["per_category"][category]))
        if len(categories) > 1:
            rows.append(row(name, "all", n, b))
    if several:
        rows.append(row("all", "all", nous, base))
    return rows


def print_context(result: dict[str, Any]) -> None:
    """The context benchmark's tables: per budget, per dataset and category; then per budget."""
    one = len(result["datasets"]) == 1
    columns = [
        *([] if one else ["dataset"]),
        "category",
        "n",
        "groups",
        "all",
        "base",
        "ratio",
        "tokens",
        "base tok",
    ]
    summary: list[list[Any]] = []
    for key, figures in result["by_budget"].items():
        label = "frame's own budget" if key == "frame" else f"budget {key}"
        base = figures["baseline"]
        rows = _context_rows(figures)
        table(
            f"evidence in context · {label} · {plural(result['questions'], 'question')} · "
            + (f"{next(iter(result['datasets']))} · " if one else "")
            + f"base: BM25 ({base['variant']}) + dense, packed into the same budget",
            columns,
            [r[1:] for r in rows] if one else rows,
        )
        n_tok, b_tok = figures["nous"]["tokens"], base["tokens"]
        at_used = figures["baseline_at_tokens_used"]
        summary.append(
            [
                key,
                f"{figures['nous']['groups']:.3f}",
                f"{base['groups']:.3f}",
                _times(figures["ratio_groups"]),
                str(n_tok["p50"]),
                str(b_tok["p50"]),
                f"{at_used['groups']:.3f}",
                _times(figures["ratio_groups_at_tokens_used"]),
            ]
        )
    table(
        "evidence groups in context: nous against the packed baseline, per budget (tokens: p50 "
        "used; @tok: the baseline packed into the tokens nous used; any and p95 in --json)",
        ["budget", "nous", "baseline", "ratio", "tokens", "base tok", "base@tok", "ratio@tok"],
        summary,
    )
    t, lat = result["tokens"], result["latency_ms"]
    frames = ", ".join(f"{f} {n}" for f, n in result["frames"].items())
    console.print(
        f"frames: {frames} · at budget {result['budgets'][0]}: tokens p50 {t['p50']} · p95 {t['p95']} · "
        f"max {t['max']} · over budget {t['over_budget']} · pre_turn p50 {lat['p50']} ms · p95 {lat['p95']} ms"
    )


@app.command()
def context(
    ctx: typer.Context,
    directories: Annotated[
        list[Path],
        typer.Argument(help="Folders of LoCoMo or labelled conversation *.json files; each is one dataset."),
    ],
    budget: Annotated[
        str | None,
        typer.Option(
            "--budget",
            help="Total token budgets, comma-separated (e.g. 1000,2000,4000); each question's "
            "context is assembled at each from the same store. Default: the frame's own total.",
        ),
    ] = None,
    out: Annotated[Path | None, _JSON_OPTION] = None,
    files: Annotated[int | None, _FILES_OPTION] = None,
) -> None:
    """Context evidence recall: is the evidence in what the agent actually sees, and in what a
    plain retrieval-augmented prompt of the same size would hold?

    For each conversation (LoCoMo files, categories 1-4, or the labelled format of `bench
    retrieval`): a fresh store, ingest once, then every question as the first message of a fresh
    session through `pre_turn`, once per budget. An evidence group is present when one of its
    messages is among the context's items and its text (or its first 200 characters) is in the
    context text: groups is the mean share of a question's groups present, all every group, any
    at least one. Beside it, at the same budget over the same message texts, the packed baseline:
    BM25 and dense top hits interleaved, deduplicated, packed as `speaker: text` (each clipped to
    the context's per-item ceiling) until the budget is full, scored the same way; the stronger
    BM25 variant is reported. Per budget: a table per dataset and category with the nous/baseline
    ratio of groups; then per budget the tokens used p50/p95 and the baseline packed into the
    tokens nous actually used (evidence per token); then the frames chosen and pre_turn latency.

    Example: nous bench context ../shared/datasets/locomo ../shared/datasets/beam --budget 1000,2000,4000 --json context.json
    """
    from nous.bench.context import run_context
    from nous.bench.locomo import load_any_dir

    budgets = _budgets(budget)
    names = _dataset_names(directories)
    datasets = {
        name: _load(directory, partial(load_any_dir, directory, files))
        for name, directory in zip(names, directories, strict=True)
    }
    questions = sum(len(c.questions) for items in datasets.values() for c in items)
    with Steps("questions", questions) as steps:
        result = run(
            run_context(
                datasets,
                budgets=budgets,
                settings=state(ctx).settings,
                progress=_progress,
                step=steps.advance,
            )
        )
    print_context(result)
    if out:
        out.write_text(json.dumps(result, indent=2))
        console.print(f"wrote {out}")


@app.command()
def extraction(
    ctx: typer.Context,
    directories: Annotated[
        list[Path],
        typer.Argument(
            help="Folders of LoCoMo files and/or native-format chats (*.json); each is one dataset."
        ),
    ],
    out: Annotated[Path | None, _JSON_OPTION] = None,
    files: Annotated[int | None, _FILES_OPTION] = None,
) -> None:
    """Extraction quality: are the pipeline's facts worth keeping, and do they match the events
    people annotated?

    For each conversation of each folder (LoCoMo files, or chats in the native format): a fresh
    store, ingest, the event pipeline run to completion with the offline provider (summaries
    and facts without an LLM). Per folder, the facts a reader would throw out: from an
    assistant's turn, with code or a URL, over 300 characters, a request or question turned
    into a sentence, a near-duplicate of an earlier fact of the same scope; facts per session,
    categories, subjects, summaries that read as transcript fragments. On LoCoMo's annotated
    sessions, an event is covered when an extracted fact of that session about the same
    speaker is within cosine 0.60 of it (shipped model, fixed threshold): event_coverage,
    facts_per_session and unmatched_fact_share against the baseline of keeping every sentence,
    and the mean cosine between each episode's summary and LoCoMo's own session summary.

    Example: nous bench extraction ../shared/datasets/locomo ../shared/datasets/beam --json x.json
    """
    from nous.bench.extraction import junk_rows, run_extraction, summarize_figures

    for directory in directories:
        _dataset(directory)
    results: list[dict[str, Any]] = []
    for directory in directories:
        try:
            # one step per conversation: each is ingested and run through the whole pipeline
            with Steps(
                f"{directory.name}: conversations", len(sorted(directory.glob("*.json"))[:files])
            ) as steps:
                result = run(
                    run_extraction(
                        directory, settings=state(ctx).settings, files=files, progress=steps.advance
                    )
                )
        except NousError as exc:
            raise fail(str(exc), 2) from None
        results.append(result)
        table(
            f"{result['dataset']} · {plural(result['files'], 'conversation')} · "
            f"{plural(result['conversation_sessions'], 'session')} · {plural(result['facts'], 'fact')} "
            f"({result['facts_per_conversation_session']}/session)",
            ["junk check", "facts", "share"],
            junk_rows(result),
        )
        categories = ", ".join(f"{c} {n}" for c, n in result["categories"].items())
        subjects = ", ".join(f"{c} {n}" for c, n in list(result["subjects"].items())[:5])
        console.print(
            f"categories: {categories or '-'} · subjects: {subjects or '-'} · "
            f"summaries that read as transcript fragments: {result['summary_fragments']} · "
            f"summary sentences that are fragments: {result['summary_sentence_fragments']} "
            f"of {result['summary_sentences']}"
        )
        if result["sessions"]:
            table(
                f"{result['dataset']} · {plural(result['sessions'], 'annotated session')} · "
                f"{plural(result['events'], 'event')}",
                ["facts from", "event_coverage", "facts/session", "unmatched share"],
                summarize_figures(result),
            )
            console.print(
                f"summary_similarity {result['summary_similarity']} over "
                f"{plural(result['summaries_scored'], 'session')}"
            )
        console.print(duration(result["seconds"]))
    if out:
        out.write_text(json.dumps(results[0] if len(results) == 1 else results, indent=2))
        console.print(f"wrote {out}")


@app.command()
def load(
    clients: Annotated[
        str,
        typer.Option(
            "--clients",
            help="Concurrent clients; several counts (1,16) run one after the other and are compared.",
        ),
    ] = "16",
    seconds: Annotated[float, typer.Option("--seconds", min=1, max=3600, help="How long to load.")] = 60,
    workers: Annotated[
        int, typer.Option("--workers", min=1, max=64, help="Server processes (nous serve --workers).")
    ] = 1,
    postgres: Annotated[
        str | None, typer.Option(help="Serve this PostgreSQL database instead (a scratch schema, dropped).")
    ] = None,
    out: Annotated[Path | None, _JSON_OPTION] = None,
) -> None:
    """Load a real `nous serve` on loopback: N clients writing facts (40%), recalling (40%) and
    building turn contexts (20%) for S seconds. Prints requests/s, p50/p95/p99 per operation,
    errors, the recall p95 under load beside one client's alone (same run), and the server's
    memory (RSS) after warm-up and at the end: a soak (`--clients 8 --seconds 600`) shows a leak.
    With several client counts, each runs on a fresh store and is compared with the first:
    requests/s and recall p95 as ratios.

    Example: nous bench load --clients 1,16 --seconds 60 --workers 2
    """
    from nous.bench.load import run_load_series

    counts = _counts(clients)
    url = None
    if postgres:
        sep = "&" if "?" in postgres else "?"
        url = f"{postgres}{sep}nous_schema=load_{uuid.uuid4().hex[:8]}"
    series = run(
        run_load_series(
            counts,
            seconds=seconds,
            database_url=url,
            workers=workers,
            progress=lambda m: err_console.print(f"[dim]{m}[/dim]"),
        )
    )
    for result in series["runs"]:
        _print_load(result)
    for row in series["against_fewest_clients"]:
        console.print(
            f"{plural(row['clients'], 'client')} against {plural(counts[0], 'client')}: "
            f"requests/s ×{row['requests_per_s']} · recall p95 ×{row['recall_p95']}"
        )
    if out:
        out.write_text(json.dumps(series["runs"][0] if len(counts) == 1 else series, indent=2))
        console.print(f"wrote {out}")


@app.command("censor-stall")
def censor_stall(
    checkers: Annotated[
        int, typer.Option("--checkers", min=1, max=64, help="Concurrent check-action clients.")
    ] = 4,
    rounds: Annotated[
        int,
        typer.Option("--rounds", min=5, max=10_000, help="/health and recall probes, alone and under load."),
    ] = 100,
    postgres: Annotated[
        str | None, typer.Option(help="Serve this PostgreSQL database instead (a scratch schema, dropped).")
    ] = None,
    out: Annotated[Path | None, _JSON_OPTION] = None,
) -> None:
    """Whether one agent's slow censor patterns slow other tenants: 8 censors the validator
    accepts, each as slow as it allows, on one agent of a real `nous serve`; /health and another
    agent's recall timed alone, then while N clients run that agent's check-action (p50/p95).

    Example: nous bench censor-stall --checkers 4 --rounds 100
    """
    from nous.bench.censor_stall import run_censor_stall

    url = None
    if postgres:
        sep = "&" if "?" in postgres else "?"
        url = f"{postgres}{sep}nous_schema=stall_{uuid.uuid4().hex[:8]}"
    result = run(
        run_censor_stall(
            checkers=checkers,
            rounds=rounds,
            database_url=url,
            progress=lambda m: err_console.print(f"[dim]{m}[/dim]"),
        )
    )
    rows = [
        [what, when, result[key][figure]["p50"], result[key][figure]["p95"]]
        for key, when in (("alone", "alone"), ("during_checks", f"{checkers} checking"))
        for figure, what in (("health_ms", "/health"), ("other_recall_ms", "other agent's recall"))
    ]
    checks = result["check_action_ms"]
    rows.append(["check-action (stalled agent)", f"{checkers} checking", checks["p50"], checks["p95"]])
    table(
        f"nous bench censor-stall · {result['backend']} · {result['censors']} slow censors · "
        f"{result['rounds']} probes",
        ["request", "while", "p50 ms", "p95 ms"],
        rows,
    )
    console.print(f"{checks['count']} checks; {result['patterns_timed_out']} pattern runs ran out of time")
    if out:
        out.write_text(json.dumps(result, indent=2))
        console.print(f"wrote {out}")


@app.command("cold-start")
def cold_start(
    memories: Annotated[
        int, typer.Option("--memories", min=1, max=10_000_000, help="Memories in the SQLite store.")
    ] = 100_000,
    workers: Annotated[
        int, typer.Option("--workers", min=1, max=64, help="Server processes (nous serve --workers).")
    ] = 2,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            help="A SQLite file to use and keep (filled up to --memories if it holds fewer): a second "
            "run skips the fill. Default: a temporary one.",
        ),
    ] = None,
    out: Annotated[Path | None, _JSON_OPTION] = None,
) -> None:
    """How soon a restarted server answers, and what the vector index file saves, on a SQLite store of
    N synthetic memories: the first vector search after reopening the store with the index rebuilt
    from the rows and opened from its file (same answers; the ratio), then `nous serve --workers W`
    started, killed with SIGKILL and started again: time until its socket accepts, until /health
    says ok and until a recall sent at once is answered.

    Example: nous bench cold-start --memories 100000 --store /tmp/cold.db
    """
    from nous.bench.cold_start import run_cold_start

    if store is not None and store.exists() and not store.is_file():
        raise fail(f"--store {store} is not a file; give a SQLite file to create or reuse", 2)
    result = run(run_cold_start(memories, workers=workers, db=store, progress=_progress))
    index = result["index"]
    table(
        f"first vector search after reopening · sqlite · {result['memories']} memories",
        ["index", "open s", "first search s", "save s"],
        [
            [what, index[key]["open_s"], index[key]["first_search_s"], index[key]["save_s"]]
            for key, what in (("rebuilt", "rebuilt from the rows"), ("from_file", "opened from its file"))
        ],
    )
    console.print(
        f"rebuild / file ×{index['ratio_rebuild_to_file']} · same results {index['same_results']} · "
        f"file {index['file_mb']} MB",
        highlight=False,
    )
    table(
        f"nous serve --workers {result['workers']} · seconds from the command",
        ["start", "socket accepts", "/health ok", "first recall", "CPU s to ready"],
        [
            [what, f["socket_s"], f["health_ok_s"], f["first_recall_s"], f["cpu_to_ready_s"]]
            for what, f in (
                ("first start", result["serve"]["first_start"]),
                ("after SIGKILL", result["serve"]["after_sigkill"]),
            )
        ],
    )
    console.print(f"load average {result['load_average']} on {result['cores']} cores", highlight=False)
    if out:
        out.write_text(json.dumps(result, indent=2))
        console.print(f"wrote {out}")


@app.command()
def fill(
    ctx: typer.Context,
    n: Annotated[int, typer.Option("--n", min=1, max=10_000_000, help="Memories to add.")] = 10_000,
    out: Annotated[Path | None, _JSON_OPTION] = None,
) -> None:
    """Add N synthetic memories to the configured store (--db or NOUS_DATABASE_URL; --agent), as the scale
    benchmark builds its stores: vectors mixed out of 2,000 real embeddings instead of embedding
    every text. For timing what grows with a store (export, import, backups); prints the rate.

    Example: nous --db sqlite:///big.db bench fill --n 100000
    """
    from nous.bench.scale import run_fill

    st = state(ctx)
    with Steps("fill", n) as steps:

        def report(done: int, total: int) -> None:
            steps.advance(count=done - steps.done)

        result = run(run_fill(n, st.settings, agent_id=st.agent_id, progress=report))
    table(
        "nous bench fill",
        ["figure", "value"],
        [
            ("store", result["store"]),
            ("agent", result["agent_id"]),
            ("added", result["added"]),
            ("seconds", result["seconds"]),
            ("memories/s", result["memories_per_s"]),
        ],
    )
    if out:
        out.write_text(json.dumps(result, indent=2))
        console.print(f"wrote {out}")


def _counts(raw: str) -> list[int]:
    """``--clients``: one count or several, comma-separated, each 1..512; bad input exits 2."""
    try:
        counts = [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        counts = []
    if not counts or not all(1 <= n <= 512 for n in counts):
        raise typer.BadParameter(
            f"{raw!r}: give counts of 1 to 512, comma-separated (1,16)", param_hint="--clients"
        )
    return counts


def _print_load(result: dict[str, Any]) -> None:
    table(
        f"nous bench load · {result['backend']} · {plural(result['clients'], 'client')} · "
        f"{plural(result['workers'], 'worker')} · {result['seconds']} s · "
        f"{result['requests_per_s']} req/s · {plural(result['error_count'], 'error')}",
        ["operation", "count", "p50 ms", "p95 ms", "p99 ms"],
        [[op, m["count"], m["p50"], m["p95"], m["p99"]] for op, m in result["operations"].items()],
    )
    single = result["single_client_recall_ms"]
    console.print(
        f"recall p95 alone {single['p95']} ms · under load ×{result['recall_p95_ratio_loaded_to_single']}"
        f" · server CPU {result['server_cpu_ms_per_request']} ms per request"
    )
    rss = result["server_rss_mb"]
    if rss:
        console.print(
            f"server RSS {rss['after_warmup']} MB after warm-up → {rss['end']} MB at the end "
            f"({rss['growth_after_warmup']:+.1%}; max {rss['max']} MB)"
        )


@app.command()
def crash(
    kills: Annotated[
        int, typer.Option("--kills", min=1, max=10_000, help="How many times to kill the writer.")
    ] = 20,
    postgres: Annotated[
        str | None, typer.Option(help="Run on this PostgreSQL database instead (a scratch schema, dropped).")
    ] = None,
    out: Annotated[Path | None, _JSON_OPTION] = None,
) -> None:
    """Kill a writer with SIGKILL again and again; check nothing acknowledged is ever lost.

    Each round starts a process that ingests a conversation, then learns, confirms and forgets facts
    (with the event worker running), printing every write the store acknowledged; it is killed at a
    random moment, and the store is checked: it opens sound, every acknowledged memory is there
    with its content and audit row, every acknowledged forget and confirmation holds. At the end
    the interrupted ingestion is run again (no duplicates) and the pipeline drained (no event dead
    or stuck). Then a server is killed as often while a client writes facts (dedup off) with
    Idempotency-Keys, sending each write whose answer was lost again: none may be stored twice.

    Example: nous bench crash --kills 20 --json crash.json
    """
    from nous.bench.crash import run_crash

    url = None
    if postgres:
        sep = "&" if "?" in postgres else "?"
        url = f"{postgres}{sep}nous_schema=crash_{uuid.uuid4().hex[:8]}"
    result = run(
        run_crash(kills=kills, database_url=url, progress=lambda m: err_console.print(f"[dim]{m}[/dim]"))
    )
    console.print(
        f"{result['backend']}: {plural(result['kills'], 'kill')} survived · {result['writes_verified']} of "
        f"{plural(result['writes_acknowledged'], 'acknowledged write')} verified · lost {result['lost']}"
        f" · {duration(result['seconds'])}",
        highlight=False,
    )
    idem = result["idempotent"]
    console.print(
        f"{result['backend']}: {plural(result['kills'], 'server kill')} · {idem['writes']} writes with "
        f"Idempotency-Keys, {idem['sent_again']} sent again after a lost answer · "
        f"duplicates {idem['duplicates']}",
        highlight=False,
    )
    for problem in result["problems"]:
        err_console.print(f"[red]{problem}[/red]", highlight=False)
    if out:
        out.write_text(json.dumps(result, indent=2))
        console.print(f"wrote {out}")
    if result["problems"]:
        raise typer.Exit(1)


@app.command()
def dedup(
    ctx: typer.Context,
    data: Annotated[
        list[Path] | None,
        typer.Option(
            help="Labelled pairs (JSONL: a, b, label); repeat for several files. Default: every "
            "tests/data/dedup_pairs*.jsonl."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--json", help="Also write the figures to this JSON file.")
    ] = None,
    errors: Annotated[int, typer.Option(min=0, help="Show this many duplicate-tier mistakes.")] = 0,
) -> None:
    """Search-before-store quality: precision and recall of the duplicate and connect tiers.

    Uses the thresholds in force (NOUS_DEDUP_DUPLICATE_THRESHOLD, NOUS_DEDUP_CONNECT_THRESHOLD)
    and prints a cosine-only baseline at the same thresholds beside them, for each pair file, with
    the changed statements judged duplicates (swallowed: the store would lose the change).

    Example: nous bench dedup --errors 5 --json dedup.json
    """
    from nous.bench.dedup import default_pairs_paths, load_pairs, run_dedup
    from nous.embeddings import create_provider
    from nous.errors import NousError
    from nous.memory.dedup import DedupThresholds

    paths = data or default_pairs_paths()
    missing = [p for p in paths if not p.is_file()]
    if not paths or missing:
        raise fail("no labelled pairs found: pass --data FILE (JSONL with a, b, label)", 2)
    settings = state(ctx).settings
    thresholds = DedupThresholds(settings.dedup_duplicate_threshold, settings.dedup_connect_threshold)
    provider = create_provider(settings)
    results: dict[str, dict[str, Any]] = {}
    _progress(f"dedup tiers: duplicate ≥ {thresholds.duplicate}, connect ≥ {thresholds.connect}")
    for path in paths:
        try:
            pairs = load_pairs(path)
            _progress(f"embedding the {plural(len(pairs), 'labelled pair')} ({2 * len(pairs)} texts)")
            result = run_dedup(pairs, provider, thresholds)
        except (NousError, ValueError) as exc:
            raise fail(str(exc), 2) from None
        results[path.name] = result
        base = result["cosine_only"]
        table(
            f"{path.name} · {plural(result['pairs'], 'pair')} · "
            f"{plural(result['changes_swallowed'], 'change')} swallowed",
            ["system", "dup precision", "dup recall", "connect prec", "connect recall"],
            [
                [
                    name,
                    *(
                        f"{r[k]:.3f}"
                        for k in (
                            "duplicate_precision",
                            "duplicate_recall",
                            "connect_precision",
                            "connect_recall",
                        )
                    ),
                ]
                for name, r in (("nous", result), ("cosine only", base))
            ],
        )
        for e in result["duplicate_errors"][:errors]:
            console.print(
                f"[yellow]{e['label']} → {e['predicted']}[/yellow] ({e['cosine']}) {e['a']!r} / {e['b']!r}"
            )
    if out:
        # one file: its figures as before; several: by file name
        out.write_text(json.dumps(next(iter(results.values())) if len(results) == 1 else results, indent=2))
        console.print(f"wrote {out}")


@app.command()
def frames(
    ctx: typer.Context,
    data: Annotated[
        Path | None,
        typer.Option(
            help="Labelled messages (JSONL: text, frame; optional turn, has_identity, domain). "
            "Default: tests/data/frames.jsonl."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--json", help="Also write the figures to this JSON file.")
    ] = None,
    errors: Annotated[int, typer.Option(min=0, help="Show this many mistakes.")] = 0,
    folds: Annotated[int, typer.Option(min=2, help="Folds of the cross-validation of the rule weights.")] = 5,
) -> None:
    """Frame selection accuracy: the frame pre_turn picks for each labelled message against its label.

    Prints accuracy overall and per frame (recall, precision), the commonest confusions, and the
    rule weights chosen again by k-fold cross-validation and leave-one-domain-out, each fold's
    weights scored on the messages it held out.

    Example: nous bench frames --errors 10 --json frames.json
    """
    import asyncio

    from nous.bench.frames import default_frames_path, load_frames, run_frames
    from nous.embeddings import create_provider

    path = data or default_frames_path()
    if path is None or not path.is_file():
        raise fail("no labelled messages found: pass --data FILE (JSONL with text, frame)", 2)
    try:
        rows = load_frames(path)
        _progress(f"embedding the {plural(len(rows), 'labelled message')}")
        result = asyncio.run(run_frames(rows, create_provider(state(ctx).settings), folds=folds))
    except (NousError, ValueError) as exc:
        raise fail(str(exc), 2) from None
    table(
        f"frames · {plural(result['messages'], 'message')} · accuracy {result['accuracy']:.3f} "
        f"(rule weight {result['rule_weight']}, generic {result['generic_weight']})",
        ["frame", "messages", "recall", "precision"],
        [
            [frame, f["messages"], *("-" if f[k] is None else f"{f[k]:.3f}" for k in ("recall", "precision"))]
            for frame, f in result["per_frame"].items()
        ],
    )
    table("confusions (label → chosen)", ["pair", "messages"], list(result["confusion"].items())[:10])
    for key, title in (("k_fold", f"{folds}-fold"), ("leave_one_domain_out", "leave one domain out")):
        table(
            f"weights chosen {title} · held-out accuracy {result[f'{key}_accuracy']}",
            ["held out", "messages", "rule weight", "generic", "train acc", "held-out acc"],
            [
                [
                    f["fold"],
                    f["messages"],
                    f["rule_weight"],
                    f["generic_weight"],
                    f["train_accuracy"],
                    f["held_out_accuracy"],
                ]
                for f in result[key]
            ],
        )
    for e in result["errors"][:errors]:
        console.print(f"[yellow]{e['label']} → {e['predicted']}[/yellow] (turn {e['turn']}) {e['text']!r}")
    if out:
        out.write_text(json.dumps(result, indent=2))
        console.print(f"wrote {out}")


def _short_name(file_name: str) -> str:
    """A labelled file's name as a table row: ``censor_actions_holdout2.jsonl`` -> ``holdout2``."""
    stem = file_name.removesuffix(".jsonl")
    return stem.removeprefix("censor_actions_") or stem


@app.command()
def censors(
    ctx: typer.Context,
    data: Annotated[
        list[Path] | None,
        typer.Option(
            help="Labelled actions with their censors (JSONL; see docs/censors.md); repeat for several "
            "files. Default: tests/data/censor_actions.jsonl and the four held-out files "
            "censor_actions_holdout*.jsonl."
        ),
    ] = None,
    sweep: Annotated[
        bool, typer.Option("--sweep", help="Also print the figures at other semantic thresholds.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--json", help="Also write the figures to this JSON file.")
    ] = None,
    errors: Annotated[int, typer.Option(min=0, help="Show this many wrong verdicts per file.")] = 0,
) -> None:
    """Censor verdicts: precision and recall of block and of warn on labelled agent actions.

    Each file's censors go into a fresh store and every action is judged by check-action (nothing
    recorded), at the semantic threshold in force; --sweep re-decides them at other thresholds.
    The threshold and the operation rule were chosen on the development file and the first three
    held-out files (written after the threshold; the third was blind to the rule's last version);
    the fourth was written blind, by a writer who had not read the matching code, and is never
    tuned on.

    Example: nous bench censors --sweep --errors 5
    """
    import asyncio

    from nous.bench.censors import default_censor_paths, run_censor_set

    paths = data or default_censor_paths()
    missing = [p for p in paths if not p.is_file()]
    if not paths or missing:
        raise fail("no labelled actions found: pass --data FILE (JSONL with censors and actions)", 2)
    settings = state(ctx).settings
    results: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            result = asyncio.run(run_censor_set(path, settings, progress=_progress))
        except (NousError, ValueError) as exc:
            raise fail(str(exc), 2) from None
        results[path.name] = result

    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    def cells(r: dict[str, Any]) -> list[str]:
        return [fmt(r[v][k]) for v in ("block", "warn") for k in ("precision", "recall")]

    columns = ["block P", "block R", "warn P", "warn R"]  # precision, recall
    table(
        f"censors · semantic threshold {next(iter(results.values()))['threshold']} · P precision, R recall",
        ["file", "censors/actions", *columns],
        [[_short_name(name), f"{r['censors']}/{r['actions']}", *cells(r)] for name, r in results.items()],
    )
    if sweep:
        for name, r in results.items():
            table(
                f"sweep · {name}", ["threshold", *columns], [[s["threshold"], *cells(s)] for s in r["sweep"]]
            )
    for name, r in results.items():
        for e in r["errors"][:errors]:
            fired = ", ".join(e["fired"]) or "nothing fired"
            console.print(
                f"[yellow]{name}: {e['expect']} → {e['got']}[/yellow] {escape(e['text'])!r} ({escape(fired)})",
                highlight=False,
            )
    if out:
        out.write_text(json.dumps(results, indent=2))
        console.print(f"wrote {out}")
