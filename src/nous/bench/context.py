"""Context evidence recall: what the agent actually sees, scored against labelled evidence.

For each labelled conversation: a fresh store, ingest through the public API, then for every
question a fresh session whose first user message is the question: ``pre_turn`` (with now =
``asked_at``), then ``end_session`` (the question's trivial episode is discarded, so it does not
leak into the next question's context). An evidence group counts as present when one of its
message ids is among the items the context included (through the memories' provenance) *and*
that message's text — or its first 200 characters — is in the context text.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nous import Nous
from nous.bench.labelled import LabelledConversation, LabelledQuestion
from nous.bench.stats import percentiles_ms
from nous.cognitive import Context
from nous.config import Settings
from nous.embeddings import EmbeddingProvider, create_provider

QUOTE_CHARS = 200  # an evidence message must be quoted whole, or at least this much of its start


def _present(
    question: LabelledQuestion, context: Context, turn_ids: dict[str, list[str]], texts: dict[str, str]
) -> list[bool]:
    """Per evidence group: is one of its messages included and quoted in the context text?"""
    included = {mid for item_id in context.included_ids() for mid in turn_ids.get(item_id, ())}
    return [
        any(mid in included and texts.get(mid, "\0")[:QUOTE_CHARS] in context.text for mid in group)
        for group in question.evidence
    ]


async def run_context(
    conversations: Sequence[LabelledConversation],
    *,
    settings: Settings | None = None,
    provider: EmbeddingProvider | None = None,
    progress: Callable[[str], None] | None = None,
    step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Score the context engine on every conversation (see the module docstring). ``step`` is
    called with the conversation's name after each question (progress)."""
    settings = (settings or Settings()).model_copy(update={"events_worker": "off"})  # no background work
    provider = provider or create_provider(settings)
    if not conversations:
        raise ValueError("no labelled conversations to score")
    scores: dict[str, list[float]] = defaultdict(list)
    per_category: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    frames: Counter[str] = Counter()
    tokens: list[int] = []
    over_budget = 0
    latencies: list[float] = []
    for item in conversations:
        texts = {m.id: m.content for s in item.conversation.sessions for m in s.messages}
        if progress:
            progress(f"{item.name or item.conversation.id}: ingesting {len(texts)} messages")
        with tempfile.TemporaryDirectory(prefix="nous-context-") as tmp:
            run_settings = settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'bench.db'}"})
            async with Nous(run_settings, agent_id="bench", embedding_provider=provider) as nous:
                await nous.ingest(item.conversation)
                await nous.recall("warm up", limit=1, reinforce=False)
                for n, question in enumerate(item.questions):
                    session = f"bench-{n}"
                    t0 = time.perf_counter()
                    context = await nous.pre_turn(session, question.question, at=question.asked_at)
                    latencies.append(time.perf_counter() - t0)
                    await nous.end_session(session, at=question.asked_at)
                    found = await nous.store.get_many(nous.agent_id, context.included_ids())
                    turn_ids = {mid: m.provenance.turn_ids for mid, m in found.items()}
                    groups = _present(question, context, turn_ids, texts)
                    for name, value in (
                        ("context_recall_all", all(groups)),
                        ("context_recall_any", any(groups)),
                    ):
                        scores[name].append(float(value))
                        per_category[question.category][name].append(float(value))
                    frames[context.frame] += 1
                    tokens.append(context.tokens)
                    over_budget += context.tokens > context.budget
                    if step:
                        step(item.name or item.conversation.id)
        if progress:
            progress(f"{item.name or item.conversation.id}: {len(item.questions)} questions")
    arr = np.asarray(tokens)
    return {
        "context_recall_all": round(float(np.mean(scores["context_recall_all"])), 4),
        "context_recall_any": round(float(np.mean(scores["context_recall_any"])), 4),
        "per_category": {
            cat: {name: round(float(np.mean(v)), 4) for name, v in sorted(metrics.items())}
            | {"questions": len(metrics["context_recall_all"])}
            for cat, metrics in sorted(per_category.items())
        },
        "frames": dict(frames.most_common()),
        "tokens": {
            "p50": int(np.percentile(arr, 50)),
            "p95": int(np.percentile(arr, 95)),
            "max": int(arr.max()),
            "over_budget": int(over_budget),
        },
        "latency_ms": percentiles_ms(latencies),
        "questions": len(tokens),
        "embedding_model": provider.model_name,
    }
