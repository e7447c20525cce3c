"""LoCoMo retrieval benchmark: Nous (public API only) against BM25 and dense baselines.

For each conversation file: a fresh store, ingest through ``Nous.ingest``, then for
every question of categories 1-4 with evidence, recall the top k memories, map them
to source turn ids through provenance, and score recall_any@k / recall_all@k.
The baselines rank the raw turns (speaker-prefixed text with photo captions) with
BM25 (bm25s, English stop words) and with the same embedding model (cosine).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nous.api import Nous
from nous.bench.stats import percentiles_ms
from nous.config import Settings
from nous.embeddings import EmbeddingProvider, create_provider
from nous.ingest import Conversation, parse_conversation

CATEGORIES = (1, 2, 3, 4)


@dataclass
class Question:
    text: str
    category: int
    evidence: set[str]


@dataclass
class Scores:
    """Accumulates recall_any@k / recall_all@k overall and per category."""

    ks: tuple[int, ...]
    hits: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    per_category: dict[int, dict[str, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )

    def add(self, question: Question, ranked_turns: list[list[str]]) -> None:
        for k in self.ks:
            found: set[str] = set()
            for turn_ids in ranked_turns[:k]:
                found.update(turn_ids)
            any_hit = float(bool(found & question.evidence))
            all_hit = float(question.evidence <= found)
            for name, value in ((f"recall_any@{k}", any_hit), (f"recall_all@{k}", all_hit)):
                self.hits[name].append(value)
                self.per_category[question.category][name].append(value)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: round(float(np.mean(v)), 4) for name, v in sorted(self.hits.items())}
        out["per_category"] = {
            str(cat): {name: round(float(np.mean(v)), 4) for name, v in sorted(metrics.items())}
            | {"questions": len(next(iter(metrics.values())))}
            for cat, metrics in sorted(self.per_category.items())
        }
        return out


def load_questions(path: Path) -> list[Question]:
    """Questions of categories 1-4 that have evidence."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for qa in data.get("qa", []):
        evidence = {e.strip() for e in qa.get("evidence", []) if isinstance(e, str) and e.strip()}
        if qa.get("category") in CATEGORIES and evidence:
            out.append(Question(str(qa["question"]), int(qa["category"]), evidence))
    return out


def raw_turns(conversation: Conversation) -> tuple[list[str], list[str]]:
    """(turn ids, speaker-prefixed texts) of every message."""
    ids, texts = [], []
    for session in conversation.sessions:
        for message in session.messages:
            ids.append(message.id)
            texts.append(f"{message.name or message.role}: {message.content}")
    return ids, texts


class Baselines:
    """BM25 and dense rankings over the raw turns of one conversation."""

    def __init__(self, ids: list[str], texts: list[str], provider: EmbeddingProvider) -> None:
        import bm25s

        self.ids = ids
        self.provider = provider
        self._bm25 = bm25s.BM25()
        self._bm25.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        self._matrix = provider.embed(texts)

    def bm25(self, query: str, k: int) -> list[list[str]]:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        k = min(k, len(self.ids))
        docs, scores = self._bm25.retrieve(tokens, k=k, show_progress=False)
        return [[self.ids[int(d)]] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def dense(self, query: str, k: int) -> list[list[str]]:
        scores = self._matrix @ self.provider.embed([query])[0]
        return [[self.ids[int(i)]] for i in np.argsort(-scores)[:k]]


async def run_locomo(
    directory: Path,
    *,
    ks: tuple[int, ...] = (5, 10, 20),
    settings: Settings | None = None,
    provider: EmbeddingProvider | None = None,
    limit_files: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark over every ``*.json`` conversation in ``directory``."""
    settings = settings or Settings()
    provider = provider or create_provider(settings)
    files = sorted(directory.glob("*.json"))[:limit_files]
    if not files:
        raise FileNotFoundError(f"no *.json conversation files in {directory}")
    systems = {name: Scores(ks) for name in ("nous", "bm25", "dense")}
    latencies: list[float] = []
    ingest_turns, ingest_seconds, n_questions = 0, 0.0, 0
    per_file: dict[str, int] = {}
    max_k = max(ks)
    for path in files:
        questions = load_questions(path)
        conversation = parse_conversation(path.read_bytes())
        with tempfile.TemporaryDirectory(prefix="nous-locomo-") as tmp:
            run_settings = settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'bench.db'}"})
            async with Nous(run_settings, agent_id="locomo", embedding_provider=provider) as nous:
                started = time.perf_counter()
                report = await nous.ingest(path)
                ingest_seconds += time.perf_counter() - started
                ingest_turns += report.turns
                await nous.recall("warm up", limit=1)
                for question in questions:
                    t0 = time.perf_counter()
                    hits = await nous.recall(question.text, limit=max_k)
                    latencies.append(time.perf_counter() - t0)
                    systems["nous"].add(question, [h.memory.provenance.turn_ids for h in hits])
        ids, texts = raw_turns(conversation)
        baselines = Baselines(ids, texts, provider)
        for question in questions:
            systems["bm25"].add(question, baselines.bm25(question.text, max_k))
            systems["dense"].add(question, baselines.dense(question.text, max_k))
        n_questions += len(questions)
        per_file[path.name] = len(questions)
        if progress:
            progress(f"{path.name}: {len(questions)} questions")
    results = {name: s.summary() for name, s in systems.items()}
    k_ref = 10 if 10 in ks else max_k
    best_baseline = max(results["bm25"][f"recall_all@{k_ref}"], results["dense"][f"recall_all@{k_ref}"])
    return {
        "systems": results,
        "latency_ms": percentiles_ms(latencies),
        "ingest_per_s": round(ingest_turns / ingest_seconds, 1) if ingest_seconds else 0.0,
        "questions": n_questions,
        "files": per_file,
        f"ratio_vs_best_baseline@{k_ref}": round(results["nous"][f"recall_all@{k_ref}"] / best_baseline, 3)
        if best_baseline
        else None,
        "embedding_model": provider.model_name,
    }
