"""Measure what a long history costs: ingest rate and CPU per message, the event pipeline after it,
recall latency and the store's size, on one labelled chat, on SQLite or PostgreSQL.

Wall times depend on what else the machine runs; CPU seconds (this process's user + system time;
for PostgreSQL the server's work is not in them) much less, so both are printed. Recall is timed
over the chat's questions plus, for a steadier p95, every tenth user message asked as a question
(``--queries`` caps the total). With ``--db`` (SQLite) or ``--schema`` (PostgreSQL) the store is
kept, so several chats can be ingested into one store run after run, and a run on a store that
holds the chat ingests nothing: it times recall alone. With ``--profile PREFIX`` the ingest, the
events and the recall are profiled (cProfile, the event loop's thread only) to
``PREFIX.{ingest,events,recall}.prof``.

    PYTHONPATH=src python scripts/measure_length.py /work/shared/datasets/beam500/beam-500k-30.json
    PYTHONPATH=src python scripts/measure_length.py FILE --backend postgres \
        --pg postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import resource
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from nous.api import Nous
from nous.bench.labelled import LabelledConversation, from_locomo, load_labelled
from nous.bench.stats import percentiles_ms
from nous.config import Settings
from nous.embeddings import create_provider


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load(path: Path) -> LabelledConversation:
    return from_locomo(path) if "locomo" in str(path) else load_labelled(path)


def queries_of(item: LabelledConversation, cap: int) -> list[tuple[str, Any]]:
    """The chat's questions, then every tenth user message's opening, up to ``cap``."""
    out: list[tuple[str, Any]] = [(q.question, q.asked_at) for q in item.questions]
    asked = item.last_time()
    users = [m for s in item.conversation.sessions for m in s.messages if m.role == "user"]
    out += [(m.content[:200], asked) for m in users[::10]]
    return out[:cap]


def pg_size(url: str, schema: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
            (schema,),
        ).fetchone()
    return int(row[0]) if row else 0


def drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


async def measure(args: argparse.Namespace, item: LabelledConversation, tmp: Path) -> dict[str, Any]:
    schema = args.schema or f"len_{uuid.uuid4().hex[:10]}"
    if args.backend == "postgres":
        url = f"{args.pg}{'&' if '?' in args.pg else '?'}nous_schema={schema}"
    else:
        url = f"sqlite:///{args.db or tmp / 'length.db'}"
    settings = Settings(database_url=url, events_worker="off")
    provider = create_provider(settings)
    provider.embed(["warm up"])
    messages = sum(len(s.messages) for s in item.conversation.sessions)
    out: dict[str, Any] = {"file": item.name, "backend": args.backend, "messages": messages}
    out["loadavg_before"] = Path("/proc/loadavg").read_text().split()[:3]
    try:
        async with Nous(settings, agent_id="length", embedding_provider=provider) as nous:
            profiler = cProfile.Profile() if args.profile else None
            wall, cpu = time.perf_counter(), cpu_seconds()
            if profiler:
                profiler.enable()
            await nous.ingest(item.conversation)
            if profiler:
                profiler.disable()
                profiler.dump_stats(f"{args.profile}.ingest.prof")
            wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
            out["ingest_s"] = round(wall, 1)
            out["ingest_msgs_per_s"] = round(messages / wall, 1)
            out["ingest_cpu_ms_per_msg"] = round(1000 * cpu / messages, 1)
            if args.events:
                wall, cpu = time.perf_counter(), cpu_seconds()
                if profiler:
                    profiler = cProfile.Profile()
                    profiler.enable()
                await nous.process_events()
                if profiler:
                    profiler.disable()
                    profiler.dump_stats(f"{args.profile}.events.prof")
                wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
                out["events_s"] = round(wall, 1)
                out["events_cpu_ms_per_msg"] = round(1000 * cpu / messages, 1)
            queries = queries_of(item, args.queries)
            await nous.recall("warm up", limit=1, reinforce=False)
            latencies: list[float] = []
            cpu = cpu_seconds()
            profiler = cProfile.Profile() if args.profile else None
            if profiler:
                profiler.enable()
            for text, now in queries:
                t0 = time.perf_counter()
                await nous.recall(text, limit=10, now=now, reinforce=False, min_score=0)
                latencies.append(time.perf_counter() - t0)
            if profiler:
                profiler.disable()
                profiler.dump_stats(f"{args.profile}.recall.prof")
            out["recall_queries"] = len(queries)
            out["recall_ms"] = percentiles_ms(latencies)
            out["recall_cpu_ms_per_query"] = round(1000 * (cpu_seconds() - cpu) / len(queries), 1)
        if args.backend == "postgres":
            size = pg_size(args.pg, schema)
        else:
            db = args.db or tmp / "length.db"
            size = sum(p.stat().st_size for p in db.parent.iterdir() if p.name.startswith(db.name))
        out["store_bytes"] = size
        out["store_kb_per_msg"] = round(size / 1024 / messages, 1)
    finally:
        if args.backend == "postgres" and not args.schema:
            drop_schema(args.pg, schema)
    out["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument(
        "--pg", default=os.environ.get("NOUS_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
    )
    parser.add_argument(
        "--db",
        type=Path,
        help="SQLite: keep the store in this file (ingesting into it again skips what it holds)",
    )
    parser.add_argument("--schema", help="PostgreSQL: use and keep this schema (dropped otherwise)")
    parser.add_argument("--events", action="store_true", help="also time the event pipeline after ingest")
    parser.add_argument("--queries", type=int, default=120, help="recall queries at most")
    parser.add_argument("--profile", help="write cProfile stats to PREFIX.{ingest,events,recall}.prof")
    args = parser.parse_args()
    item = load(args.file)
    with tempfile.TemporaryDirectory(prefix="nous-length-") as tmp:
        result = asyncio.run(measure(args, item, Path(tmp)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
