"""Retrieval benchmark over labelled conversations: Nous (public API only) against baselines.

For each file: a fresh store, ingest through ``Nous.ingest``, then every question recalled with
``now = asked_at``; each hit is mapped back to the message ids it came from (provenance) and
scored by the one scorer in ``nous.bench.labelled``. In the same run, over the same message texts
(``speaker: text``), three baselines: dense (the same embedding model, cosine), BM25 as bm25s
with English stop words, and BM25 as SQLite FTS5 computes it with no stop words. The stronger of
the two BM25 variants is reported as ``bm25``: comparing against the weaker one flatters us.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nous.api import Nous
from nous.bench.labelled import LabelledConversation, LabelledQuestion, Scores
from nous.bench.stats import percentiles_ms
from nous.config import Settings
from nous.embeddings import EmbeddingProvider, create_provider
from nous.models import RecallHit

_WORD = re.compile(r"\w+", re.UNICODE)
BASELINES = ("bm25", "dense")


class Baselines:
    """Dense and two BM25 rankings over the message texts of one conversation."""

    def __init__(self, ids: list[str], texts: list[str], provider: EmbeddingProvider) -> None:
        import bm25s

        self.ids = ids
        self.provider = provider
        self._bm25s = bm25s.BM25()
        self._bm25s.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        self._fts = sqlite3.connect(":memory:")
        self._fts.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
        self._fts.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)", enumerate(texts))
        self._matrix = provider.embed(texts)

    def close(self) -> None:
        self._fts.close()

    def bm25s(self, query: str, k: int) -> list[list[str]]:
        """bm25s (Lucene BM25) with English stop words removed."""
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, scores = self._bm25s.retrieve(tokens, k=min(k, len(self.ids)), show_progress=False)
        return [[self.ids[int(d)]] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def fts5(self, query: str, k: int) -> list[list[str]]:
        """SQLite FTS5's BM25 over every query word (no stop words), porter stemming."""
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = self._fts.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, k)
        ).fetchall()
        return [[self.ids[r[0]]] for r in rows]

    def dense(self, query: str, k: int) -> list[list[str]]:
        scores = self._matrix @ self.provider.embed([query])[0]
        return [[self.ids[int(i)]] for i in np.argsort(-scores)[:k]]


async def _per_k(
    nous: Nous, question: LabelledQuestion, hits: list[RecallHit], ks: tuple[int, ...], **how: Any
) -> list[list[str]] | dict[int, list[list[str]]]:
    """The message ids behind each hit of a recall at the largest k. A covering recall (its hits
    carry the ``cover`` signal) chooses a different set at each limit, so it is asked again at
    each smaller k, as a caller with that limit would."""
    ranked = [h.memory.provenance.turn_ids for h in hits]
    if not any("cover" in h.signals for h in hits):
        return ranked
    out = {max(ks): ranked}
    for k in ks:
        if k != max(ks):
            again = await nous.recall(
                question.question, limit=k, now=question.asked_at, reinforce=False, **how
            )
            out[k] = [h.memory.provenance.turn_ids for h in again]
    return out


async def run_retrieval(
    conversations: Sequence[LabelledConversation] | Callable[[], Sequence[LabelledConversation]],
    *,
    ks: tuple[int, ...] = (5, 10, 20),
    settings: Settings | None = None,
    provider: EmbeddingProvider | None = None,
    presets: Sequence[str] = (),
    extract: bool = False,
    progress: Callable[[str], None] | None = None,
    step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Score Nous and the baselines on every conversation; ``presets`` adds ``nous:<preset>`` rows.

    With ``extract``, the event pipeline then runs on the same store (episode summaries and
    extracted facts, offline) and every question is asked again: ``nous+extract``. A fact counts
    for the turns it was extracted from (its provenance), so it is a second way to reach them.
    The pipeline never runs in the background here: ``nous`` is recall over what was ingested.
    ``step`` is called with the conversation's name after each question is asked (each pass)."""
    settings = (settings or Settings()).model_copy(update={"events_worker": "off"})
    provider = provider or create_provider(settings)
    items = conversations() if callable(conversations) else conversations
    if not items:
        raise ValueError("no labelled conversations to score")
    names = ["nous", *(["nous+extract"] if extract else []), *(f"nous:{p}" for p in presets)]
    names += ["bm25s", "bm25_fts5", "dense"]
    systems = {name: Scores(ks) for name in names}
    latencies: list[float] = []
    ingest_turns, ingest_seconds, n_questions, extract_seconds = 0, 0.0, 0, 0.0
    per_file: dict[str, int] = {}
    max_k = max(ks)
    for item in items:
        name = item.name or item.conversation.id
        if progress:
            progress(f"{name}: ingesting {sum(len(s.messages) for s in item.conversation.sessions)} messages")
        with tempfile.TemporaryDirectory(prefix="nous-retrieval-") as tmp:
            run_settings = settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'bench.db'}"})
            async with Nous(run_settings, agent_id="bench", embedding_provider=provider) as nous:
                started = time.perf_counter()
                report = await nous.ingest(item.conversation)
                ingest_seconds += time.perf_counter() - started
                ingest_turns += report.turns
                await nous.recall("warm up", limit=1, reinforce=False)
                for question in item.questions:
                    t0 = time.perf_counter()
                    hits = await nous.recall(  # ranking is scored: no minimum score
                        question.question, limit=max_k, now=question.asked_at, reinforce=False, min_score=0
                    )
                    latencies.append(time.perf_counter() - t0)
                    systems["nous"].add(question, await _per_k(nous, question, hits, ks, min_score=0))
                    for preset in presets:
                        hits = await nous.recall(
                            question.question,
                            limit=max_k,
                            now=question.asked_at,
                            reinforce=False,
                            preset=preset,
                        )
                        ranked = await _per_k(nous, question, hits, ks, preset=preset)
                        systems[f"nous:{preset}"].add(question, ranked)
                    if step:
                        step(name)
                if extract:
                    started = time.perf_counter()
                    await nous.process_events()
                    extract_seconds += time.perf_counter() - started
                    for question in item.questions:
                        hits = await nous.recall(
                            question.question,
                            limit=max_k,
                            now=question.asked_at,
                            reinforce=False,
                            min_score=0,
                        )
                        systems["nous+extract"].add(
                            question, await _per_k(nous, question, hits, ks, min_score=0)
                        )
                        if step:
                            step(name)
        baselines = Baselines(*item.message_texts(), provider)
        try:
            for question in item.questions:
                systems["bm25s"].add(question, baselines.bm25s(question.question, max_k))
                systems["bm25_fts5"].add(question, baselines.fts5(question.question, max_k))
                systems["dense"].add(question, baselines.dense(question.question, max_k))
        finally:
            baselines.close()
        n_questions += len(item.questions)
        per_file[item.name or item.conversation.id] = len(item.questions)
        if progress:
            progress(f"{item.name or item.conversation.id}: {len(item.questions)} questions")
    results = {name: s.summary() for name, s in systems.items()}
    k_ref = 10 if 10 in ks else max_k
    key = f"recall_all@{k_ref}"
    keyword = max(("bm25s", "bm25_fts5"), key=lambda n: results[n][key])
    ordered: dict[str, Any] = {name: results[name] for name in names if not name.startswith("bm25")}
    ordered["bm25"] = {**results[keyword], "variant": keyword}
    ordered["dense"] = ordered.pop("dense")
    best = max(ordered["bm25"][key], ordered["dense"][key])
    return {
        "systems": ordered,
        "keyword_baselines": {"bm25s": results["bm25s"], "bm25_fts5": results["bm25_fts5"]},
        "latency_ms": percentiles_ms(latencies) if latencies else {},
        "ingest_per_s": round(ingest_turns / ingest_seconds, 1) if ingest_seconds else 0.0,
        "questions": n_questions,
        "files": per_file,
        f"ratio_vs_best_baseline@{k_ref}": round(results["nous"][key] / best, 3) if best else None,
        **({"extract_seconds": round(extract_seconds, 1)} if extract else {}),
        "embedding_model": provider.model_name,
    }
