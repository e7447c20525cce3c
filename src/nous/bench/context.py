"""Context evidence recall: what the agent actually sees, scored against labelled evidence.

For each labelled conversation: a fresh store, ingest through the public API once, then for every
question and every total budget asked for, a fresh session whose first user message is the
question: ``pre_turn`` (with now = ``asked_at`` and ``budget``; None keeps the frame's own total),
then ``end_session`` (the question's trivial episode is discarded, so it does not leak into the
next question's context). An evidence group counts as present when one of its message ids is
among the items the context included (through the memories' provenance) *and* that message's
text — or its first 200 characters — is in the context text. ``groups`` is the share of a
question's evidence groups present, ``all`` every group, ``any`` at least one.

In the same run, over the same message texts, a packed retrieval baseline: what a plain
retrieval-augmented prompt would hold at the same budget. The BM25 and dense rankings of
``nous.bench.retrieval.Baselines`` are interleaved (BM25 first, then dense, duplicates dropped)
and the messages packed as ``speaker: text``, each clipped to the context engine's per-item
ceiling (``ITEM_MAX_TOKENS``), in that order until the budget is full (a message that no longer
fits is skipped for a shorter one further down). A group is present when one of its messages was
packed and its text, or its first 200 characters, is in the packed text. Both BM25 variants are
packed; the stronger at each budget (mean ``groups``) is reported, as ``bench retrieval`` does:
comparing against the weaker one flatters us. The same baseline packed into the tokens the context
actually used (``baseline_at_tokens_used``) tells evidence per token apart from a context that
leaves part of its budget empty.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nous import Nous
from nous._tokens import clip_and_count, count_tokens
from nous.bench.labelled import LabelledConversation, LabelledQuestion
from nous.bench.retrieval import Baselines
from nous.bench.stats import percentiles_ms
from nous.cognitive import Context
from nous.cognitive.context import ITEM_MAX_TOKENS
from nous.config import Settings
from nous.embeddings import EmbeddingProvider, create_provider

QUOTE_CHARS = 200  # an evidence message must be quoted whole, or at least this much of its start
FRAME = "frame"  # the budget key when each question keeps its frame's own total
KEYWORD_VARIANTS = ("bm25s", "bm25_fts5")
PACK_SEPARATOR = "\n"


def _flat(text: str) -> str:
    """``text`` on one line: a quote is found whatever its line breaks became."""
    return " ".join(text.split())


def _quoted(text: str, flat_haystack: str) -> bool:
    """``text`` (or its first QUOTE_CHARS) is in ``flat_haystack`` (see ``_flat``)."""
    return _flat(text)[:QUOTE_CHARS] in flat_haystack


def _present(
    question: LabelledQuestion, context: Context, turn_ids: dict[str, list[str]], texts: dict[str, str]
) -> list[bool]:
    """Per evidence group: is one of its messages included and quoted in the context text?"""
    included = {mid for item_id in context.included_ids() for mid in turn_ids.get(item_id, ())}
    flat = _flat(context.text)
    return [
        any(mid in included and _quoted(texts.get(mid, "\0"), flat) for mid in group)
        for group in question.evidence
    ]


@dataclass(frozen=True)
class Packed:
    """A packed prompt: its text, the messages in it (in order) and its tokens."""

    text: str
    ids: list[str]
    tokens: int


def interleave(*rankings: Sequence[str]) -> list[str]:
    """The rankings taken in turn, one id from each (the first ranking first), duplicates dropped."""
    out: dict[str, None] = {}
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking):
                out.setdefault(ranking[rank], None)
    return list(out)


def pack(ranked: Sequence[str], lines: Mapping[str, str], budget: int) -> Packed:
    """The messages of ``ranked`` (``lines``: id → ``speaker: text``), each clipped to
    ``ITEM_MAX_TOKENS``, joined by newlines in rank order within ``budget`` tokens; a message that
    no longer fits is skipped and the next tried."""
    kept: list[tuple[str, str, int]] = []
    used = 0
    for mid in ranked:
        text, tokens = clip_and_count(lines[mid], ITEM_MAX_TOKENS)
        cost = tokens + (1 if kept else 0)  # the newline before it
        if used + cost > budget:
            continue
        kept.append((mid, text, tokens))
        used += cost
    text = PACK_SEPARATOR.join(t for _, t, _ in kept)
    tokens = count_tokens(text)
    while tokens > budget and kept:  # tokens merged across a newline: rare, measured exactly
        kept.pop()
        text = PACK_SEPARATOR.join(t for _, t, _ in kept)
        tokens = count_tokens(text)
    return Packed(text, [mid for mid, _, _ in kept], tokens)


def packed_present(question: LabelledQuestion, packed: Packed, texts: Mapping[str, str]) -> list[bool]:
    """Per evidence group: was one of its messages packed, and is it quoted in the packed text?"""
    included = set(packed.ids)
    flat = _flat(packed.text)
    return [
        any(mid in included and _quoted(texts.get(mid, "\0"), flat) for mid in group)
        for group in question.evidence
    ]


def _mean(values: Sequence[float]) -> float:
    return round(float(np.mean(values)), 4) if values else 0.0


@dataclass(frozen=True)
class _Row:
    """One question's score in one context."""

    dataset: str
    category: str
    groups: float  # the share of its evidence groups present
    all: float
    any: float
    tokens: int


def _figures(rows: Sequence[_Row]) -> dict[str, Any]:
    tokens = np.asarray([r.tokens for r in rows] or [0])
    return {
        "groups": _mean([r.groups for r in rows]),
        "all": _mean([r.all for r in rows]),
        "any": _mean([r.any for r in rows]),
        "questions": len(rows),
        "tokens_p50": int(np.percentile(tokens, 50)),
        "tokens_p95": int(np.percentile(tokens, 95)),
    }


def _by_category(rows: Sequence[_Row]) -> dict[str, Any]:
    categories: dict[str, list[_Row]] = defaultdict(list)
    for row in rows:
        categories[row.category].append(row)
    return {cat: _figures(r) for cat, r in sorted(categories.items())}


@dataclass
class Tally:
    """Evidence present per question (groups share, all, any) by dataset and category, and the
    tokens each context used."""

    rows: list[_Row] = field(default_factory=list)
    over_budget: int = 0

    def add(self, dataset: str, category: str, groups: list[bool], tokens: int, budget: int) -> None:
        share = sum(groups) / len(groups) if groups else 0.0
        self.rows.append(_Row(dataset, category, share, float(all(groups)), float(any(groups)), tokens))
        self.over_budget += tokens > budget

    def summary(self) -> dict[str, Any]:
        datasets: dict[str, list[_Row]] = defaultdict(list)
        for row in self.rows:
            datasets[row.dataset].append(row)
        figures = _figures(self.rows)
        return {
            **figures,
            "tokens": {
                "p50": figures["tokens_p50"],
                "p95": figures["tokens_p95"],
                "max": max((r.tokens for r in self.rows), default=0),
                "over_budget": int(self.over_budget),
            },
            "per_category": _by_category(self.rows),
            "per_dataset": {
                name: _figures(rows) | {"per_category": _by_category(rows)} for name, rows in datasets.items()
            },
        }


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def _budget_key(budget: int | None) -> str:
    return FRAME if budget is None else str(budget)


def _datasets(
    conversations: Sequence[LabelledConversation] | Mapping[str, Sequence[LabelledConversation]],
) -> list[tuple[str, LabelledConversation]]:
    if isinstance(conversations, Mapping):
        return [(name, item) for name, items in conversations.items() for item in items]
    return [("all", item) for item in conversations]


async def run_context(
    conversations: Sequence[LabelledConversation] | Mapping[str, Sequence[LabelledConversation]],
    *,
    budgets: Sequence[int | None] = (None,),
    settings: Settings | None = None,
    provider: EmbeddingProvider | None = None,
    progress: Callable[[str], None] | None = None,
    step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Score the context engine and the packed retrieval baseline on every conversation at every
    budget (see the module docstring). ``conversations`` by dataset name, or one list (dataset
    ``all``). ``budgets``: total token budgets, None for the frame's own. ``step`` is called with
    the conversation's name after each question (all its budgets). The figures at the first budget
    are also given at the top level (the keys of the single-budget report)."""
    settings = (settings or Settings()).model_copy(update={"events_worker": "off"})  # no background work
    provider = provider or create_provider(settings)
    items = _datasets(conversations)
    if not items:
        raise ValueError("no labelled conversations to score")
    if not budgets:
        raise ValueError("no budgets to score")
    budgets = list(dict.fromkeys(budgets))
    nous_tally = {b: Tally() for b in budgets}
    packed_tally = {(b, v): Tally() for b in budgets for v in KEYWORD_VARIANTS}
    used_tally = {(b, v): Tally() for b in budgets for v in KEYWORD_VARIANTS}  # into the tokens used
    frames: Counter[str] = Counter()
    latencies: list[float] = []
    per_dataset: Counter[str] = Counter()
    for dataset, item in items:
        name = item.name or item.conversation.id
        texts = {m.id: m.content for s in item.conversation.sessions for m in s.messages}
        ids, lines = item.message_texts()
        if progress:
            progress(f"{name}: ingesting {len(texts)} messages")
        baselines = Baselines(ids, lines, provider)
        by_id = dict(zip(ids, lines, strict=True))
        try:
            with tempfile.TemporaryDirectory(prefix="nous-context-") as tmp:
                run_settings = settings.model_copy(
                    update={"database_url": f"sqlite:///{Path(tmp) / 'bench.db'}"}
                )
                async with Nous(run_settings, agent_id="bench", embedding_provider=provider) as nous:
                    await nous.ingest(item.conversation)
                    await nous.recall("warm up", limit=1, reinforce=False)
                    for n, question in enumerate(item.questions):
                        dense = [i[0] for i in baselines.dense(question.question, len(ids))]
                        keyword = {
                            "bm25s": [i[0] for i in baselines.bm25s(question.question, len(ids))],
                            "bm25_fts5": [i[0] for i in baselines.fts5(question.question, len(ids))],
                        }
                        ranked = {v: interleave(keyword[v], dense) for v in KEYWORD_VARIANTS}
                        for b, budget in enumerate(budgets):
                            session = f"bench-{n}-{b}"
                            t0 = time.perf_counter()
                            context = await nous.pre_turn(
                                session, question.question, budget=budget, at=question.asked_at
                            )
                            latencies.append(time.perf_counter() - t0)
                            await nous.end_session(session, at=question.asked_at)
                            if b == 0:
                                frames[context.frame] += 1
                            found = await nous.store.get_many(nous.agent_id, context.included_ids())
                            turn_ids = {mid: m.provenance.turn_ids for mid, m in found.items()}
                            groups = _present(question, context, turn_ids, texts)
                            nous_tally[budget].add(
                                dataset, question.category, groups, context.tokens, context.budget
                            )
                            for variant in KEYWORD_VARIANTS:  # the same total the context had
                                for tally, total in (
                                    (packed_tally, context.budget),
                                    (used_tally, context.tokens),
                                ):
                                    packed = pack(ranked[variant], by_id, total)
                                    tally[(budget, variant)].add(
                                        dataset,
                                        question.category,
                                        packed_present(question, packed, texts),
                                        packed.tokens,
                                        total,
                                    )
                        if step:
                            step(name)
        finally:
            baselines.close()
        per_dataset[dataset] += len(item.questions)
        if progress:
            progress(f"{name}: {len(item.questions)} questions")
    by_budget: dict[str, Any] = {}
    for budget in budgets:
        nous_figures = nous_tally[budget].summary()
        variants = {v: packed_tally[(budget, v)].summary() for v in KEYWORD_VARIANTS}
        stronger = max(KEYWORD_VARIANTS, key=lambda v: variants[v]["groups"])
        baseline = {**variants[stronger], "variant": stronger}
        at_used = used_tally[(budget, stronger)].summary()
        by_budget[_budget_key(budget)] = {
            "nous": nous_figures,
            "baseline": baseline,
            "baseline_variants": {v: {k: variants[v][k] for k in ("groups", "all", "any")} for v in variants},
            "ratio_groups": _ratio(nous_figures["groups"], baseline["groups"]),
            "ratio_all": _ratio(nous_figures["all"], baseline["all"]),
            "baseline_at_tokens_used": {**at_used, "variant": stronger},
            "ratio_groups_at_tokens_used": _ratio(nous_figures["groups"], at_used["groups"]),
            "ratio_groups_per_dataset": {
                name: _ratio(figures["groups"], baseline["per_dataset"][name]["groups"])
                for name, figures in nous_figures["per_dataset"].items()
            },
        }
    first = by_budget[_budget_key(budgets[0])]["nous"]
    return {
        "context_recall_all": first["all"],
        "context_recall_any": first["any"],
        "per_category": {
            cat: {"context_recall_all": m["all"], "context_recall_any": m["any"], "questions": m["questions"]}
            for cat, m in first["per_category"].items()
        },
        "frames": dict(frames.most_common()),
        "tokens": first["tokens"],
        "latency_ms": percentiles_ms(latencies),
        "questions": first["questions"],
        "budgets": [_budget_key(b) for b in budgets],
        "by_budget": by_budget,
        "datasets": dict(per_dataset),
        "embedding_model": provider.model_name,
    }
