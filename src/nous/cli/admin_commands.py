"""Commands that manage the store: init, stats, doctor, export, import, maintain."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nous.cli.output import Steps, console, plural, print_json, progress_bar, table
from nous.cli.runtime import fail, run, state, with_nous
from nous.errors import NousError
from nous.models import MaintenanceReport, StoreStats
from nous.models.events import EventStatus
from nous.models.llm import LLMUsage

if TYPE_CHECKING:
    from nous.api import Nous
    from nous.events import WorkerReport

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]


def register(app: typer.Typer) -> None:
    for command in (init, stats, doctor, export, import_, maintain):
        name = "import" if command is import_ else None
        app.command(name=name)(command)


def init(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Create the store (or migrate an existing one) and show where it is.

    Example: nous --db sqlite:///team.db init
    """
    st = state(ctx)

    async def act(nous: Nous) -> StoreStats:
        return await nous.stats()

    s = with_nous(ctx, act)
    info = {
        "database": s.location,
        "backend": s.backend,
        "schema_version": s.schema_version,
        "agent_id": st.agent_id,
        "embedding_provider": st.settings.embedding_provider,
    }
    if as_json:
        print_json({"status": "ready", **info})
    else:
        console.print(f"[green]ready[/green] {s.backend} store at {s.location} (schema v{s.schema_version})")


def stats(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Counts of memories by type, edges, history rows, pending embeddings, outbox events, and
    language-model calls and tokens per provider, model and purpose.

    Example: nous stats --json
    """

    async def act(nous: Nous) -> tuple[StoreStats, dict[EventStatus, int], list[LLMUsage]]:
        return await nous.stats(), await nous.event_counts(), await nous.llm_usage()

    s, counts, usage = with_nous(ctx, act)
    if as_json:
        print_json(
            {
                **s.model_dump(mode="json"),
                "events": {e.value: counts.get(e, 0) for e in EventStatus},
                "llm_usage": [u.model_dump() for u in usage],
            }
        )
        return
    rows: list[tuple[str, int | str]] = [(k, v) for k, v in sorted(s.active_by_kind.items())]
    rows += [
        ("inactive or superseded", s.inactive),
        ("edges", s.edges),
        ("history rows", s.history_rows),
        ("embeddings pending", s.missing_embeddings),
        *((f"events {e.value}", counts.get(e, 0)) for e in EventStatus),
        *(
            (
                f"LLM {u.provider}/{u.model} {u.purpose}",
                f"{plural(u.calls, 'call')} ({u.failed} failed) · {u.input_tokens} in / {u.output_tokens} out tokens",
            )
            for u in usage
        ),
    ]
    table(f"{s.backend} store {s.location} · agent {s.agent_id}", ["what", "count"], rows)


def doctor(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Check the store, the embedding model and the database extensions; say how to fix problems.

    Exits with 1 when a check fails, so it can gate a deployment script.

    Example: nous doctor
    """
    from nous.embeddings import create_provider
    from nous.storage import create_store

    st = state(ctx)
    checks: list[dict[str, str]] = []

    def record(name: str, ok: bool, detail: str) -> None:
        checks.append({"check": name, "status": "ok" if ok else "FAIL", "detail": detail})

    async def go() -> None:
        url = st.settings.resolved_database_url()
        try:
            provider = create_provider(st.settings)
            started = time.perf_counter()
            vec = provider.embed(["nous doctor check"])
            record(
                "embedding model",
                vec.shape == (1, provider.dimensions),
                f"{provider.model_name}, {provider.dimensions} dims, "
                f"{(time.perf_counter() - started) * 1000:.0f} ms incl. load",
            )
        except NousError as exc:
            record("embedding model", False, str(exc))
            return
        store = create_store(url)
        try:
            await store.open(embedding_model=provider.model_name, embedding_dimensions=provider.dimensions)
            s = await store.stats(st.agent_id)
            record("store", True, f"{s.backend} at {s.location}, schema v{s.schema_version}")
            extras = "FTS5 + in-process vector index" if s.backend == "sqlite" else "pgvector HNSW + tsvector"
            record("search indexes", True, extras)
            record(
                "pending embeddings",
                s.missing_embeddings == 0,
                "none" if not s.missing_embeddings else f"{s.missing_embeddings}: run `nous maintain`",
            )
        except NousError as exc:
            record("store", False, f"{exc} (check NOUS_DATABASE_URL)")
        finally:
            await store.close()

    run(go())
    if as_json:
        print_json(checks)
    else:
        table(
            "nous doctor",
            ["check", "status", "detail"],
            [(c["check"], c["status"], c["detail"]) for c in checks],
        )
    if any(c["status"] != "ok" for c in checks):
        raise typer.Exit(1)


def export(
    ctx: typer.Context,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="File to write; default stdout.")] = None,
    no_vectors: Annotated[
        bool,
        typer.Option(
            "--no-vectors",
            help="Leave out the stored embeddings: a smaller file, but an import embeds every memory again.",
        ),
    ] = False,
) -> None:
    """Export this agent's memories and edges as JSON Lines, each memory with its stored embedding
    (so `nous import` into a store with the same embedding model need not embed again).

    Example: nous export -o backup.jsonl
    """

    async def act(nous: Nous) -> int:
        stats = await nous.stats()  # the lines: a header, every memory (inactive too), every edge
        total = 1 + sum(stats.active_by_kind.values()) + stats.inactive + stats.edges
        count = 0
        stream = out.open("w", encoding="utf-8") if out else sys.stdout
        try:
            with progress_bar() as progress:
                task = progress.add_task("exporting", total=total or None)
                async for line in nous.export_lines(vectors=not no_vectors):
                    stream.write(line + "\n")
                    count += 1
                    progress.advance(task)
        finally:
            if out:
                stream.close()
        return count

    count = with_nous(ctx, act)
    if out:
        console.print(f"[green]exported[/green] {plural(count, 'line')} to {out}")


def import_(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A file written by `nous export`.", exists=False)],
    re_embed: Annotated[
        bool,
        typer.Option("--re-embed", help="Embed every memory again instead of reusing the file's vectors."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Import memories from a `nous export` file (validated whole before anything is written).

    The file's embeddings are reused where it names this store's embedding model and a memory's
    text is unchanged; the rest are embedded. Import only files you trust: a stored vector is
    reused for the same text by every agent of the store (--re-embed ignores the file's vectors).

    What the store already has is left as it is (a memory by its id, a link): importing the same
    file again changes nothing and says how many were already present.

    Example: nous import backup.jsonl
    """
    if not file.exists():
        raise fail(f"{file} does not exist", 2)

    in_file = 0

    async def act(nous: Nous) -> int:
        with progress_bar() as progress:
            task = progress.add_task("importing", total=None)

            def parsed(count: int) -> None:
                nonlocal in_file
                in_file = count
                progress.update(task, total=count)

            return await nous.import_jsonl(
                file,
                on_parsed=parsed,
                progress=lambda n: progress.advance(task, n),
                vectors=not re_embed,
                actor="cli",
            )

    new = with_nous(ctx, act)
    if as_json:
        print_json({"status": "imported", "memories": new, "already_present": in_file - new})
    else:
        console.print(
            f"[green]imported[/green] {new} new, {in_file - new} already present "
            f"({plural(in_file, 'memory', 'memories')} in {file})",
            highlight=False,
        )


async def _drain_events(nous: Nous) -> WorkerReport:
    """Run the due outbox events until none is left, as ``Nous.process_events`` does, but one
    claim of one event at a time so the progress moves with each event. Events that handlers
    add along the way (a closed episode's facts) are run too; the total grows with them."""
    from nous.events import WorkerReport

    worker = nous.event_worker(batch=1)
    total = WorkerReport()
    due = (await nous.event_counts()).get(EventStatus.PENDING, 0)
    with Steps("events", due) as steps:
        while True:
            report = await worker.run_once()
            if report.handled == 0:
                break
            total.add(report)
            steps.advance(count=report.handled)
    return total


def maintain(
    ctx: typer.Context,
    events: Annotated[
        bool, typer.Option("--events", help="Also run the due outbox events until the queue is empty.")
    ] = False,
    threads: Annotated[
        bool, typer.Option("--threads", help="Rebuild every topic thread from scratch (see `nous threads`).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run upkeep: embed memories whose embedding is pending, then the lifecycle decay pass, and
    put memories not in a topic thread yet into one (--threads: rebuild every thread from none),
    and mark users' standing instructions ("Always …", "From now on …") among turns stored by a
    version that did not mark them; with --events, also end idle sessions
    (NOUS_SESSION_TIMEOUT_MINUTES) and drain the outbox (see `nous events`).

    Decay moves each memory between active, weak, dormant and archived by how likely it is
    still remembered (FSRS-style retrievability); dormant and archived memories rank lower in
    recall but are never deleted. Safe to run as often as you like, e.g. daily from cron.

    Example: nous maintain --events --json
    Example: nous maintain --threads
    """

    async def act(nous: Nous) -> tuple[MaintenanceReport, WorkerReport | None]:
        pending = (await nous.stats()).missing_embeddings
        with Steps("embedding", pending) as steps:
            report = await nous.maintain(progress=lambda n: steps.advance(count=n), rebuild_threads=threads)
        if not events:
            return report, None
        await nous.end_idle_sessions()
        return report, await _drain_events(nous)

    report, drained = with_nous(ctx, act)
    if as_json:
        out = report.model_dump()
        if drained is not None:
            out["events"] = {
                "done": drained.done,
                "retried": drained.retried,
                "dead": drained.dead,
                "errors": drained.errors,
            }
        print_json(out)
        return
    changes = ", ".join(f"{n} {state}" for state, n in sorted(report.lifecycle_changes.items())) or "none"
    console.print(
        f"[green]done[/green] embedded {plural(report.embedded, 'pending memory', 'pending memories')}"
    )
    if report.refreshed:
        console.print(
            f"  re-embedded {plural(report.refreshed, 'censor or decision', 'censors and decisions')}"
            " as this version presents them"
        )
    console.print(f"  lifecycle changes: {changes}")
    if report.threaded or threads:
        console.print(f"  threaded {plural(report.threaded, 'memory', 'memories')} into topic threads")
    if report.instructions_marked:
        marked = report.instructions_marked
        console.print(
            f"  marked {plural(marked, 'earlier turn')} as"
            f" {'a standing instruction' if marked == 1 else 'standing instructions'}"
            ' (listed under "About the user" in the context)'
        )
    if report.idempotency_keys_pruned:
        console.print(f"  pruned {plural(report.idempotency_keys_pruned, 'expired Idempotency-Key')}")
    if drained is not None:
        console.print(
            f"  events: {drained.done} done, {drained.retried} to retry, {drained.dead} dead"
            + (" (see `nous events --status dead`)" if drained.dead else "")
        )
