"""Covering recall from topic threads: an experiment, chosen leave-one-out over files.

For a question that asks for an order, a summary or a change over time, recall returns a
covering set (``Retriever._cover``: the best ``limit x 10`` results in time order, cut into
``limit`` stretches of equal score mass, the best of each). This script asks whether members of
the topic threads that best match the question do better, alone or mixed with that set.

Two steps. ``capture`` opens a copy of each store (one per labelled file, built beforehand with
``Nous.ingest`` and ``Nous.build_threads``; ``--build`` does that), recalls every question that
gets a covering set and keeps what the variants need: the ranked candidates that ``_cover`` sees,
the question's embedding and words, every thread with its members, every memory's time, session,
vector and the message ids it stands for. ``evaluate`` then computes each variant's set offline at
limits 10 and 20 (a covering recall is a different set at each limit, as the bench asks it) and
scores it with the bench's scorer (``nous.bench.labelled.Scores``): groups@10 and all@20 per
category. The variant for each held-out file is the one with the best mean groups@10 (then
groups@20) over the covered questions of the other files; the current rule is one of the variants.

Variants: how threads are ranked against the question (``query``: centroid cosine plus the share
of the question's words, as ``Nous.threads(query=)``; ``centroid``: the cosine alone; ``pool``:
the recall scores of the thread's members among the covering pool), how many threads (1-3), how
members are ranked (their recall score, or their cosine to the question), how they are picked
(``stretch``: the covering rule over the threads' members; ``session<m>``: the best, at most m per
session first; ``top``: the best), and the share of the ``limit`` places they take (the rest:
the current covering set, at the smaller limit, or its best-scoring picks).

LoCoMo files (names starting with a digit) are no fold, only checked: of their questions only
one (41.json, category 4) gets a covering set. What ``capture`` keeps is cached next to each store
(``<store>.captured.pkl``).

    PYTHONPATH=src python scripts/threadcover_experiment.py --stores /tmp/threadcover/stores \\
        --data /work/shared/datasets beam beam500 locomo:41.json

Result (all 9 BEAM files, 38 covered questions, the default embedding model): held out, pooled
groups@10 0.173 -> 0.178 (event ordering 0.210 -> 0.209, summarization 0.100 -> 0.113), all@20
0.053 -> 0.053; the best variant in-sample reaches 0.190. Even threads ranked by the labels
themselves give 0.24-0.26 from their members: the evidence is a few messages among the 40-60 of a
thread on the same project, and picking them inside a thread is as hard as picking them in the
chat. Not kept in recall.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import pickle
import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nous.api import Nous
from nous.bench.labelled import LabelledConversation, LabelledQuestion, Scores
from nous.bench.locomo import load_any_dir
from nous.config import Settings
from nous.embeddings import create_provider
from nous.memory.threading import WORDS_WEIGHT, item_words
from nous.memory.threads import MAX_THREADS, thread_scores
from nous.retrieval.search import Retriever
from nous.retrieval.weights import DEFAULT_WEIGHTS

KS = (10, 20)
DEPTH = DEFAULT_WEIGHTS.cover_depth
DUPLICATE = DEFAULT_WEIGHTS.duplicate_cosine


@dataclass
class Captured:
    """One covered question: what the variants need."""

    question: LabelledQuestion
    ranked: list[tuple[str, float]]  # what ``_cover`` receives, best first
    hits: dict[int, list[str]]  # the current covering recall's memory ids at each limit
    vector: np.ndarray
    thread_query: list[float]  # ``thread_scores`` of every thread, as ``Nous.threads(query=)``
    thread_centroid: list[float]  # the centroid cosine alone


@dataclass
class FileData:
    """One store: its threads and memories, and its covered questions."""

    name: str
    threads: list[str]  # thread ids, in the order of the scores above
    members: dict[str, list[str]]  # thread id -> member ids in time order
    thread_of: dict[str, str]
    at: dict[str, Any]  # memory id -> occurred_at
    session: dict[str, str | None]
    turns: dict[str, list[str]]  # memory id -> the message ids it stands for
    vectors: dict[str, np.ndarray]
    questions: list[Captured]


async def build(data: Path, stores: Path, specs: list[str]) -> None:
    """Ingest each file into ``stores/<dir>/<file>.db`` and thread it (skipping stores that exist)."""
    settings = Settings().model_copy(update={"events_worker": "off"})
    provider = create_provider(settings)
    for item, out in files(data, stores, specs):
        if out.exists():
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        s = settings.model_copy(update={"database_url": f"sqlite:///{out}"})
        async with Nous(s, agent_id="bench", embedding_provider=provider) as nous:
            await nous.ingest(item.conversation)
            await nous.build_threads()


def files(data: Path, stores: Path, specs: list[str]) -> list[tuple[LabelledConversation, Path]]:
    """``dir`` or ``dir:file.json`` specs → (labelled conversation, its store's path)."""
    out = []
    for spec in specs:
        folder, _, only = spec.partition(":")
        for item in load_any_dir(data / folder):
            if not only or item.name == only:
                out.append((item, stores / folder / f"{item.name}.db"))
    return out


async def capture(item: LabelledConversation, db: Path, provider: Any) -> FileData:
    """Recall each question of ``item`` on a copy of its store; keep the covered ones."""
    settings = Settings().model_copy(update={"events_worker": "off"})
    with tempfile.TemporaryDirectory(prefix="threadcover-") as tmp:
        copy = Path(tmp) / "store.db"
        shutil.copy(db, copy)
        s = settings.model_copy(update={"database_url": f"sqlite:///{copy}"})
        async with Nous(s, agent_id="bench", embedding_provider=provider) as nous:
            retriever = nous._retriever
            assert isinstance(retriever, Retriever)
            store, agent = nous.store, nous.agent_id
            records = [r for r in await store.threads(agent, any_user=True, limit=MAX_THREADS) if r.size > 0]
            members = {r.id: [m for m, _ in await store.thread_members(agent, r.id)] for r in records}
            seen: dict[str, list[tuple[str, float]]] = {}
            original = retriever._cover

            async def hook(ranked: Any, limit: int, memories: Any, w: Any) -> Any:
                seen[str(limit)] = [(c.id, c.score) for c in ranked]
                return await original(ranked, limit, memories, w)

            retriever._cover = hook  # type: ignore[method-assign]
            questions = []
            for q in item.questions:
                seen.clear()
                hits = {}
                for k in KS:
                    found = await nous.recall(
                        q.question, limit=k, now=q.asked_at, reinforce=False, min_score=0
                    )
                    hits[k] = [h.id for h in found]
                if not seen:
                    continue  # not a covered question
                vector = await nous.embedder.embed_one(q.question)
                words = item_words(q.question)
                questions.append(
                    Captured(
                        q,
                        seen[str(max(KS))],
                        hits,
                        vector,
                        thread_scores(records, vector, words, words_weight=WORDS_WEIGHT),
                        thread_scores(records, vector, words, words_weight=0.0),
                    )
                )
            ids = sorted(
                {m for ms in members.values() for m in ms} | {i for c in questions for i, _ in c.ranked}
            )
            memories = await store.get_many(agent, ids)
            vectors = await store.vectors(agent, ids)
    return FileData(
        name=item.name,
        threads=[r.id for r in records],
        members=members,
        thread_of={m: t for t, ms in members.items() for m in ms},
        at={i: m.occurred_at for i, m in memories.items()},
        session={i: m.session_id for i, m in memories.items()},
        turns={i: list(m.provenance.turn_ids) for i, m in memories.items()},
        vectors=vectors,
        questions=questions,
    )


# -- offline sets ---------------------------------------------------------------------------


def dedupe(ids: list[str], f: FileData, kept: list[np.ndarray] | None = None) -> list[str]:
    """Drop an id nearly identical (cosine) to one before it (``_diversify``)."""
    kept = [] if kept is None else kept
    out = []
    for i in ids:
        v = f.vectors.get(i)
        if v is not None and kept and float(np.max(np.stack(kept) @ v)) > DUPLICATE:
            continue
        out.append(i)
        if v is not None:
            kept.append(v)
    return out


def stretches(scored: list[tuple[str, float]], limit: int, f: FileData) -> list[str]:
    """The covering rule of ``_cover`` over (id, score) pairs: time order, ``limit`` stretches of
    equal score mass, the best of each."""
    pool = [(i, s) for i, s in scored if i in f.at]
    if not pool or limit <= 0:
        return []
    keep = set(dedupe([i for i, _ in pool], f))
    pool = sorted([(i, s) for i, s in pool if i in keep], key=lambda p: f.at[p[0]])
    steps = min(limit, len(pool))
    weights = [max(s, 1e-9) for _, s in pool]
    total, before = sum(weights), 0.0
    parts: list[list[tuple[str, float]]] = [[] for _ in range(steps)]
    for p, weight in zip(pool, weights, strict=True):
        parts[min(steps - 1, int((before + weight / 2) / total * steps))].append(p)
        before += weight
    return [max(part, key=lambda p: p[1])[0] for part in parts if part]


_CURRENT: dict[tuple[str, str, int], list[str]] = {}


def current(c: Captured, limit: int, f: FileData) -> list[str]:
    """The current covering set (``_cover``) at ``limit``."""
    if limit <= 0 or not c.ranked:
        return []
    key = (f.name, c.question.id, limit)
    if key not in _CURRENT:
        _CURRENT[key] = _current(c, limit, f)
    return list(_CURRENT[key])


def _current(c: Captured, limit: int, f: FileData) -> list[str]:
    top = c.ranked[0][1]
    pool = [(i, s) for i, s in c.ranked[: limit * DEPTH] if s >= top * DEFAULT_WEIGHTS.cover_floor]
    return stretches(pool, limit, f)


@dataclass(frozen=True)
class Variant:
    rank_threads: str  # query | centroid | pool
    threads: int
    members: str  # score | cosine
    pick: str  # stretch | session1 | session2 | top
    share: float  # of the limit taken by thread members
    mix: str  # small: the current set at the smaller limit; best: its best-scoring picks

    def label(self) -> str:
        if self.share == 0:
            return "current"
        return f"{self.rank_threads}/{self.threads}t/{self.members}/{self.pick}/{self.share}/{self.mix}"


CURRENT = Variant("query", 1, "score", "stretch", 0.0, "small")


def variants() -> list[Variant]:
    out = [CURRENT]
    for combo in itertools.product(
        ("query", "centroid", "pool"),
        (1, 2, 3),
        ("score", "cosine"),
        ("stretch", "session1", "session2", "top"),
        (0.3, 0.5, 0.7, 1.0),
        ("small", "best"),
    ):
        v = Variant(*combo)
        if v.share == 1.0 and v.mix == "best":
            continue  # nothing left to mix
        out.append(v)
    return out


def chosen_set(v: Variant, c: Captured, limit: int, f: FileData) -> list[str]:
    """The memory ids a variant returns at ``limit``, oldest first."""
    if v.share == 0:
        return current(c, limit, f)
    score = dict(c.ranked)
    if v.rank_threads == "pool":
        mass: dict[str, float] = defaultdict(float)
        for i, s in c.ranked[: limit * DEPTH]:
            if i in f.thread_of:
                mass[f.thread_of[i]] += s
        order = sorted(mass, key=lambda t: (-mass[t], t))
    else:
        values = c.thread_query if v.rank_threads == "query" else c.thread_centroid
        order = [f.threads[j] for j in np.argsort(-np.asarray(values), kind="stable")]
    members = [m for t in order[: v.threads] for m in f.members[t] if m in f.at]
    if v.members == "score":
        relevance = {m: score.get(m, 0.0) for m in members}
    else:
        relevance = {m: float(f.vectors[m] @ c.vector) if m in f.vectors else 0.0 for m in members}
    places = max(1, round(v.share * limit))
    if v.pick == "stretch":
        picked = stretches([(m, relevance[m]) for m in members], places, f)
    else:
        best = dedupe(sorted(members, key=lambda m: -relevance[m]), f)
        if v.pick == "top":
            picked = best[:places]
        else:
            cap = int(v.pick[-1])
            per: dict[str | None, int] = defaultdict(int)
            picked = []
            for m in best:
                if len(picked) < places and per[f.session[m]] < cap:
                    picked.append(m)
                    per[f.session[m]] += 1
            picked += [m for m in best if m not in picked][: places - len(picked)]
    rest = limit - len(picked)
    if v.mix == "small":
        others = current(c, rest, f)
    else:
        others = sorted(current(c, limit, f), key=lambda i: -score.get(i, 0.0))
    kept = [f.vectors[m] for m in picked if m in f.vectors]
    for i in dedupe([i for i in others if i not in picked], f, kept):
        if len(picked) >= limit:
            break
        picked.append(i)
    if len(picked) < limit:  # too few: the current set's others, then the ranking
        for i in [*current(c, limit, f), *(i for i, _ in c.ranked)]:
            if len(picked) >= limit:
                break
            if i not in picked:
                picked.append(i)
    return sorted(picked, key=lambda i: f.at[i])


_SCORED: dict[tuple[Variant, str], Scores] = {}


def score_files(v: Variant, data: list[FileData]) -> Scores:
    if len(data) == 1:
        key = (v, data[0].name)
        if key not in _SCORED:
            _SCORED[key] = _score_files(v, data)
        return _SCORED[key]
    return _score_files(v, data)


def _score_files(v: Variant, data: list[FileData]) -> Scores:
    scores = Scores(KS)
    for f in data:
        for c in f.questions:
            scores.add(c.question, {k: [f.turns[i] for i in chosen_set(v, c, k, f)] for k in KS})
    return scores


def evaluate(data: list[FileData]) -> None:
    # The offline current set must be what recall returned.
    mismatches = sum(current(c, k, f) != c.hits[k] for f in data for c in f.questions for k in KS)
    print(
        f"offline current set differs from recall in {mismatches} of {2 * sum(len(f.questions) for f in data)}"
    )
    all_variants = variants()
    per_file = {f.name: {v: score_files(v, [f]) for v in all_variants} for f in data}

    def pooled_all(v: Variant, files: list[FileData]) -> tuple[float, float]:
        n = sum(len(g.questions) for g in files) or 1
        return (
            sum(sum(per_file[g.name][v].hits["groups@10"]) for g in files) / n,
            sum(sum(per_file[g.name][v].hits["groups@20"]) for g in files) / n,
        )

    held: dict[str, Scores] = {"current": Scores(KS), "chosen": Scores(KS)}
    print(
        "| held out | questions | chosen on the others | groups@10 (current → chosen) | all@20 (current → chosen) |"
    )
    print("|---|---|---|---|---|")
    folds = [f for f in data if f.questions and not f.name[:1].isdigit()]  # LoCoMo files are only checked
    for f in folds:
        train = [g for g in folds if g is not f]
        if not train:
            continue

        def pooled(v: Variant, train: list[FileData] = train) -> tuple[float, float]:
            g10 = sum(sum(per_file[g.name][v].hits["groups@10"]) for g in train)
            g20 = sum(sum(per_file[g.name][v].hits["groups@20"]) for g in train)
            n = sum(len(g.questions) for g in train)
            return g10 / n, g20 / n

        best = max(all_variants, key=pooled)
        for name, v in (("current", CURRENT), ("chosen", best)):
            for c in f.questions:
                held[name].add(c.question, {k: [f.turns[i] for i in chosen_set(v, c, k, f)] for k in KS})
        a, b = per_file[f.name][CURRENT].summary(), per_file[f.name][best].summary()
        print(
            f"| {f.name} | {len(f.questions)} | {best.label()} | {a['groups@10']:.3f} → {b['groups@10']:.3f} "
            f"| {a['recall_all@20']:.3f} → {b['recall_all@20']:.3f} |"
        )
    a, b = held["current"].summary(), held["chosen"].summary()
    if "groups@10" not in a:
        a = b = {"groups@10": 0.0, "recall_all@20": 0.0, "per_category": {}}
    print(
        f"| **pooled, held out** | {sum(len(f.questions) for f in folds)} | | "
        f"{a['groups@10']:.3f} → {b['groups@10']:.3f} | {a['recall_all@20']:.3f} → {b['recall_all@20']:.3f} |"
    )
    print("\nper category, pooled held out (groups@10 / all@20, current → chosen):")
    for cat in sorted(a["per_category"]):
        x, y = a["per_category"][cat], b["per_category"][cat]
        print(
            f"  {cat} ({x['questions']}): {x['groups@10']:.3f} / {x['recall_all@20']:.3f} → "
            f"{y['groups@10']:.3f} / {y['recall_all@20']:.3f}"
        )
    print("\nbest variants on all BEAM files (in-sample, groups@10 / groups@20):")
    ranked = sorted(all_variants, key=lambda v: pooled_all(v, folds), reverse=True)
    for v in [*ranked[:10], CURRENT]:
        s = score_files(v, folds).summary()
        cats = " ".join(f"{k}={m['groups@10']:.3f}" for k, m in s["per_category"].items())
        print(f"  {v.label()}: {s['groups@10']:.3f} / {s['groups@20']:.3f} ({cats})")
    for f in data:
        if f not in folds and f.questions:
            for v in (CURRENT, ranked[0]):
                s = score_files(v, [f]).summary()
                print(
                    f"check {f.name} {v.label()}: groups@10 {s['groups@10']:.3f} all@20 {s['recall_all@20']:.3f}"
                )


def oracle_bound(data: list[FileData]) -> None:
    """groups@10 when the threads are ranked by how many of the question's evidence groups they
    hold (read from the labels: a bound on what a better thread ranking could give, not a rule)."""
    print("\nthreads ranked by the labels (a bound), thread members only, groups@10:")
    out: dict[str, list[float]] = defaultdict(list)
    for f in data:
        if f.name[:1].isdigit():
            continue
        by_turn: dict[str, list[str]] = defaultdict(list)
        for m, turns in f.turns.items():
            for t in turns:
                by_turn[t].append(m)
        for c in f.questions:
            held: dict[str, int] = defaultdict(int)
            for g in c.question.evidence:
                for t in {f.thread_of[m] for i in g for m in by_turn[i] if m in f.thread_of}:
                    held[t] += 1
            values = [float(held.get(t, 0)) for t in f.threads]
            told = Captured(c.question, c.ranked, c.hits, c.vector, values, values)
            for n, pick in itertools.product((1, 2, 3), ("top", "session2", "stretch")):
                found = {
                    t
                    for i in chosen_set(Variant("query", n, "score", pick, 1.0, "small"), told, 10, f)
                    for t in f.turns[i]
                }
                share = sum(bool(found.intersection(g)) for g in c.question.evidence) / len(
                    c.question.evidence
                )
                out[f"{n} thread(s), {pick}"].append(share)
            out["current"].append(score_files(CURRENT, [f]).hits["groups@10"][f.questions.index(c)])
    for name, values in out.items():
        print(f"  {name}: {np.mean(values):.3f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("specs", nargs="+", help="dataset folders, or folder:file.json")
    parser.add_argument("--data", type=Path, default=Path("/work/shared/datasets"))
    parser.add_argument("--stores", type=Path, default=Path("/tmp/threadcover/stores"))
    parser.add_argument("--build", action="store_true", help="ingest and thread stores that are missing")
    args = parser.parse_args()
    if args.build:
        await build(args.data, args.stores, args.specs)
    provider = create_provider(Settings())
    data = []
    for item, db in files(args.data, args.stores, args.specs):
        cached = db.with_suffix(".captured.pkl")
        if cached.exists() and cached.stat().st_mtime > db.stat().st_mtime:
            data.append(pickle.loads(cached.read_bytes()))
            continue
        if not db.exists():
            print(f"no store for {item.name} ({db}): skipped")
            continue
        found = await capture(item, db, provider)
        cached.write_bytes(pickle.dumps(found))
        data.append(found)
    evaluate(data)
    oracle_bound(data)


if __name__ == "__main__":
    asyncio.run(main())
