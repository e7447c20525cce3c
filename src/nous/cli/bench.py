"""``nous bench``: benchmarks that print figures."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer

from nous.bench.dedup import default_pairs_path, load_pairs, run_dedup
from nous.bench.locomo import run_locomo
from nous.bench.scale import run_scale
from nous.cli.output import console, err_console, print_json, progress_bar, table
from nous.cli.runtime import fail, run, state

app = typer.Typer(help="Benchmarks: figures printed, never pass/fail.", no_args_is_help=True)


def _ints(raw: str, name: str) -> list[int]:
    try:
        values = [int(x) for x in raw.split(",") if x.strip()]
    except ValueError:
        raise fail(f"{name} must be comma-separated integers, got {raw!r}", 2) from None
    if not values or any(v <= 0 for v in values):
        raise fail(f"{name} must list positive integers", 2)
    return values


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
) -> None:
    """Ingest rate (memories/s, and its ratio to the raw embedding rate) and recall p50/p95 at N memories.

    Each size runs on a fresh temporary SQLite store, and on PostgreSQL when --postgres is given
    (in a scratch schema, dropped afterwards).
    """
    settings = state(ctx).settings
    sizes = _ints(n, "--n")
    results: list[dict[str, Any]] = []
    with progress_bar() as progress:
        task = progress.add_task("bench", total=None)

        def report(stage: str, done: int, total: int) -> None:
            progress.update(task, description=stage, completed=done, total=total)

        for size in sizes:
            targets: list[str | None] = [None]
            if postgres:
                sep = "&" if "?" in postgres else "?"
                targets.append(f"{postgres}{sep}nous_schema=bench_{size}_{uuid.uuid4().hex[:8]}")
            for url in targets:
                results.append(
                    run(
                        run_scale(
                            size,
                            url,
                            queries=queries,
                            settings=settings,
                            progress=report,
                            drop_after=url is not None,
                        )
                    )
                )
    table(
        "nous bench scale",
        ["backend", "n", "ingest/s", "raw embed/s", "overhead ×", "recall p50 ms", "recall p95 ms"],
        [
            (
                r["backend"],
                r["n"],
                r["ingest_per_s"],
                r["raw_embedding_per_s"],
                r["storage_overhead_ratio"],
                r["recall_latency_ms"]["p50"],
                r["recall_latency_ms"]["p95"],
            )
            for r in results
        ],
    )
    if out:
        out.write_text(json.dumps({"results": results}, indent=2))
        console.print(f"wrote {out}")
    elif not console.is_terminal:
        print_json({"results": results})


@app.command()
def locomo(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Folder of LoCoMo-format conversation *.json files.")],
    k: Annotated[str, typer.Option("--k", help="Cut-offs, comma-separated.")] = "5,10,20",
    out: Annotated[
        Path | None, typer.Option("--json", help="Also write the figures to this JSON file.")
    ] = None,
    files: Annotated[int | None, typer.Option(min=1, help="Only the first N files (for smoke runs).")] = None,
) -> None:
    """Retrieval on LoCoMo: Nous against BM25 and dense baselines, recall_any@k and recall_all@k.

    Each file gets a fresh store; conversations go in through the public API only.
    """
    if not directory.is_dir():
        raise fail(f"{directory} is not a directory", 2)
    ks = tuple(_ints(k, "--k"))
    settings = state(ctx).settings
    result = run(
        run_locomo(
            directory,
            ks=ks,
            settings=settings,
            limit_files=files,
            progress=lambda msg: err_console.print(f"[dim]{msg}[/dim]"),
        )
    )
    columns = ["system"] + [f"{m}@{x}" for x in ks for m in ("any", "all")]
    rows = [
        [name] + [f"{s[f'recall_{m}@{x}']:.3f}" for x in ks for m in ("any", "all")]
        for name, s in result["systems"].items()
    ]
    table(f"LoCoMo retrieval · {result['questions']} questions", columns, rows)
    cats = sorted(result["systems"]["nous"]["per_category"])
    kk = 10 if 10 in ks else max(ks)
    table(
        f"recall_all@{kk} per category",
        ["system", *[f"cat {c}" for c in cats]],
        [
            [name] + [f"{s['per_category'][c][f'recall_all@{kk}']:.3f}" for c in cats]
            for name, s in result["systems"].items()
        ],
    )
    lat = result["latency_ms"]
    console.print(
        f"recall latency p50 {lat['p50']} ms · p95 {lat['p95']} ms · ingest {result['ingest_per_s']} turns/s"
    )
    if out:
        out.write_text(json.dumps(result, indent=2))
        console.print(f"wrote {out}")


@app.command()
def dedup(
    ctx: typer.Context,
    data: Annotated[
        Path | None,
        typer.Option(help="Labelled pairs (JSONL: a, b, label). Default: tests/data/dedup_pairs.jsonl."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--json", help="Also write the figures to this JSON file.")
    ] = None,
    errors: Annotated[int, typer.Option(min=0, help="Show this many duplicate-tier mistakes.")] = 0,
) -> None:
    """Search-before-store quality: precision and recall of the duplicate and connect tiers.

    Uses the thresholds in force (NOUS_DEDUP_DUPLICATE_THRESHOLD, NOUS_DEDUP_CONNECT_THRESHOLD)
    and prints a cosine-only baseline at the same thresholds beside them.
    """
    from nous.embeddings import create_provider
    from nous.errors import NousError
    from nous.memory.dedup import DedupThresholds

    path = data or default_pairs_path()
    if path is None or not path.is_file():
        raise fail("no labelled pairs found: pass --data FILE (JSONL with a, b, label)", 2)
    settings = state(ctx).settings
    try:
        pairs = load_pairs(path)
        thresholds = DedupThresholds(settings.dedup_duplicate_threshold, settings.dedup_connect_threshold)
        result = run_dedup(pairs, create_provider(settings), thresholds)
    except (NousError, ValueError) as exc:
        raise fail(str(exc), 2) from None
    base = result["cosine_only"]
    table(
        f"dedup tiers · {result['pairs']} pairs · duplicate ≥ {thresholds.duplicate}, "
        f"connect ≥ {thresholds.connect}",
        ["system", "dup precision", "dup recall", "connect precision", "connect recall"],
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
        out.write_text(json.dumps(result, indent=2))
        console.print(f"wrote {out}")
