"""Agent-memory scenarios: recall and context across every kind of memory, scored by labels.

A scenario (``../shared/datasets/agent``, format in its README) is one agent's store — facts,
decisions with reasons and outcomes, procedures, censors, episodes, conversations — and the
questions its users would ask, each labelled with the memories that answer it. Every scenario
gets a fresh store written through the public API, each memory at its own time. Every question
is recalled at its time (``asked_at`` or the scenario's ``now``) by Nous and by the
``dense-only`` and ``keyword-only`` presets on the same store, and built into a context by a
preview of ``pre_turn`` (which writes nothing, so one question never changes what the next sees).

Figures, overall and per question kind:
- **hit@1 / hit@5**: an expected memory among the first 1 / 5 results (answerable questions);
- **stale@1**: of ``update`` questions, the share whose first result that is either expected or
  outdated (``not_current``) is an outdated one;
- **context_include**: the share of questions whose context contains every required string;
- **auroc**: how well the top result's score separates answerable from unanswerable questions
  (0.5 is chance; each system is judged on its own score); and at Nous's default minimum score,
  the share of answerable questions given any result, of those whose right answer is returned
  first, and of unanswerable ones given nothing;
- recall and preview latency p50/p95.

With ``distractors`` (conversations, e.g. LoCoMo or the long chats), each scenario's store first
receives whole conversations about other things, ingested as an agent's store would after some
use: the same questions then show whether scores and rankings hold in a store that grew.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from nous._time import as_utc
from nous.api import Nous
from nous.bench.stats import percentiles_ms
from nous.config import Settings
from nous.embeddings import EmbeddingProvider, create_provider
from nous.errors import InvalidInputError
from nous.ingest import Conversation, parse_conversation
from nous.models import RecallHit

BASELINES = ("dense-only", "keyword-only")
RECALL_LIMIT = 10


class _Written(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    at: datetime | None = None
    user_id: str | None = None
    tags: list[str] = Field(default_factory=list)

    @field_validator("at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None


class FactEntry(_Written):
    type: Literal["fact"]
    content: str
    subject: str | None = None
    category: str | None = None
    confidence: float = 1.0


class ReasonEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str
    text: str


class DecisionEntry(_Written):
    type: Literal["decision"]
    description: str
    reasons: list[ReasonEntry] = Field(default_factory=list)
    confidence: float = 0.5
    stakes: str = "medium"
    category: str | None = None
    outcome: str | None = None


class ProcedureEntry(_Written):
    type: Literal["procedure"]
    name: str
    description: str


class CensorEntry(_Written):
    type: Literal["censor"]
    pattern: str
    action: str = "warn"
    reason: str | None = None


class EpisodeEntry(_Written):
    type: Literal["episode"]
    title: str
    summary: str
    started_at: datetime
    ended_at: datetime | None = None


MemoryEntry = Annotated[
    FactEntry | DecisionEntry | ProcedureEntry | CensorEntry | EpisodeEntry, Field(discriminator="type")
]


class AgentQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    question: str = Field(min_length=1)
    kind: str
    expect: list[str] = Field(default_factory=list)
    not_current: list[str] = Field(default_factory=list)
    context_must_include: list[str] = Field(default_factory=list)
    user_id: str | None = None
    asked_at: datetime | None = None

    @property
    def abstain(self) -> bool:
        return not self.expect


class Scenario(BaseModel):
    """One agent's store and the questions asked of it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    description: str = ""
    agent_id: str = "agent"
    now: datetime
    memories: list[MemoryEntry]
    sessions: list[dict[str, Any]] = Field(default_factory=list)
    questions: list[AgentQuestion]


def load_scenario(path: Path) -> Scenario:
    """A scenario file, validated whole (InvalidInputError naming the first bad field)."""
    try:
        return Scenario.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidInputError(f"{path.name}: {where}: {first['msg']}", field=where) from None


def load_scenarios(directory: Path, limit_files: int | None = None) -> list[Scenario]:
    files = sorted(directory.glob("*.json"))[:limit_files]
    if not files:
        raise FileNotFoundError(f"no *.json scenario files in {directory}")
    return [load_scenario(p) for p in files]


async def write_scenario(nous: Nous, scenario: Scenario) -> dict[str, set[str]]:
    """Write the scenario's memories and sessions through the public API; returns, per stored
    memory id, the scenario ids it stands for (a duplicate write maps onto the memory it
    confirmed; a turn onto its message id)."""
    ids: dict[str, set[str]] = defaultdict(set)
    for m in scenario.memories:
        common: dict[str, Any] = {"user_id": m.user_id, "tags": m.tags or None}
        if isinstance(m, FactEntry):
            result = await nous.learn(
                m.content,
                subject=m.subject,
                category=m.category,
                confidence=m.confidence,
                occurred_at=m.at,
                **common,
            )
            ids[result.existing_id or result.id].add(m.id)
        elif isinstance(m, DecisionEntry):
            decision = await nous.record_decision(
                m.description,
                reasons=[r.model_dump() for r in m.reasons],
                confidence=m.confidence,
                stakes=m.stakes,
                category=m.category,
                occurred_at=m.at,
                **common,
            )
            if m.outcome is not None and m.outcome != "pending":
                await nous.review_decision(decision.id, m.outcome)
            ids[decision.id].add(m.id)
        elif isinstance(m, ProcedureEntry):
            result = await nous.add_procedure(m.name, m.description, occurred_at=m.at, **common)
            ids[result.existing_id or result.id].add(m.id)
        elif isinstance(m, CensorEntry):
            result = await nous.add_censor(
                m.pattern, action=m.action, reason=m.reason, occurred_at=m.at, **common
            )
            ids[result.existing_id or result.id].add(m.id)
        else:
            episode = await nous.start_episode(m.title, started_at=m.started_at, **common)
            await nous.end_episode(episode.id, summary=m.summary, ended_at=m.ended_at or m.started_at)
            ids[episode.id].add(m.id)
    for raw in scenario.sessions:
        session = {k: v for k, v in raw.items() if k != "user_id"}
        conversation = parse_conversation(
            json.dumps({"id": f"{scenario.id}:{session.get('id')}", "sessions": [session]})
        )
        await nous.ingest(conversation, user_id=raw.get("user_id"))
    for memory in await nous.memories(["turn"], limit=100_000, include_inactive=True):
        ids[memory.id].update(memory.provenance.turn_ids)
    return ids


def load_conversations(directory: Path) -> list[Conversation]:
    """Every conversation file of ``directory`` (any shape ``nous ingest`` reads: native, chat
    logs, LoCoMo; a labelled file's questions are ignored), for use as distractors."""
    files = sorted(directory.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no *.json conversation files in {directory}")
    out = []
    for path in files:
        try:
            out.append(parse_conversation(path.read_bytes()))
        except InvalidInputError as exc:
            raise InvalidInputError(f"{path.name}: {exc}") from None
    return out


def _distractors_for(conversations: Sequence[Conversation], position: int, count: int) -> list[Conversation]:
    if not conversations or count <= 0:
        return []
    return [conversations[(position + i) % len(conversations)] for i in range(min(count, len(conversations)))]


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float | None:
    """The probability that a random positive outscores a random negative (ties count half)."""
    if not positive or not negative:
        return None
    pos, neg = np.asarray(positive)[:, None], np.asarray(negative)[None, :]
    return float(np.mean((pos > neg) + 0.5 * (pos == neg)))


def _ranks(hits: Sequence[RecallHit], ids: dict[str, set[str]], wanted: set[str]) -> list[int]:
    """1-based ranks of the hits that stand for a wanted scenario id."""
    return [i + 1 for i, h in enumerate(hits) if ids.get(h.id, set()) & wanted]


class _Tally:
    """Per-question outcomes of one system, grouped by kind; ``min_score`` is the minimum the
    system applies by default (its share of answered and abstained questions is reported)."""

    def __init__(self, min_score: float | None = None) -> None:
        self.rows: list[dict[str, Any]] = []
        self.min_score = min_score

    def add(
        self, question: AgentQuestion, hits: Sequence[RecallHit], ids: dict[str, set[str]]
    ) -> dict[str, Any]:
        expected = _ranks(hits, ids, set(question.expect))
        stale = _ranks(hits, ids, set(question.not_current))
        top = hits[0].score if hits else 0.0
        row: dict[str, Any] = {
            "kind": question.kind,
            "abstain": question.abstain,
            "top_score": top,
            "first_expected": expected[0] if expected else None,
        }
        if question.not_current:
            first_stale = stale[0] if stale else None
            first_good = expected[0] if expected else None
            row["stale"] = first_stale is not None and (first_good is None or first_stale < first_good)
        self.rows.append(row)
        return row

    def figures(self, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        rows = self.rows if rows is None else rows
        answerable = [r for r in rows if not r["abstain"]]
        updates = [r for r in rows if "stale" in r]
        firsts = [r["first_expected"] for r in answerable]
        figures: dict[str, Any] = {
            "hit@1": _mean([f is not None and f <= 1 for f in firsts]),
            "hit@5": _mean([f is not None and f <= 5 for f in firsts]),
            "stale@1": _mean([r["stale"] for r in updates]),
            "auroc": _round(
                auroc([r["top_score"] for r in answerable], [r["top_score"] for r in rows if r["abstain"]])
            ),
            "questions": len(rows),
        }
        if self.min_score is not None:
            # At the default minimum score: answerable questions that get any result, those whose
            # right answer is first and returned, and unanswerable ones that get nothing at all.
            figures["answered_at_default"] = _mean([r["top_score"] >= self.min_score for r in answerable])
            figures["right_first_at_default"] = _mean(
                [r["first_expected"] == 1 and r["top_score"] >= self.min_score for r in answerable]
            )
            figures["abstained_at_default"] = _mean(
                [r["top_score"] < self.min_score for r in rows if r["abstain"]]
            )
        return figures

    def per_kind(self) -> dict[str, dict[str, Any]]:
        kinds = sorted({r["kind"] for r in self.rows})
        return {k: self.figures([r for r in self.rows if r["kind"] == k]) for k in kinds}


def _mean(values: Sequence[bool | float]) -> float | None:
    return round(float(np.mean(values)), 4) if len(values) else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


async def run_agent(
    scenarios: Sequence[Scenario],
    *,
    settings: Settings | None = None,
    provider: EmbeddingProvider | None = None,
    presets: Sequence[str] = BASELINES,
    progress: Callable[[str], None] | None = None,
    step: Callable[[str], None] | None = None,
    distractors: Sequence[Conversation] = (),
    distractors_per_scenario: int = 1,
) -> dict[str, Any]:
    """Score recall and context on every scenario (see the module docstring). ``step`` is called
    with the scenario's id after each question (progress). With ``distractors``, scenario i's
    store first ingests ``distractors_per_scenario`` of them, taken in turn from position i (so
    the scenarios see different conversations when there are enough)."""
    if not scenarios:
        raise ValueError("no scenarios to score")
    settings = (settings or Settings()).model_copy(update={"events_worker": "off"})
    provider = provider or create_provider(settings)
    systems = {"nous": _Tally(settings.recall_min_score), **{p: _Tally() for p in presets}}
    included: list[bool] = []
    included_by_kind: dict[str, list[bool]] = defaultdict(list)
    recall_s: list[float] = []
    preview_s: list[float] = []
    questions: list[dict[str, Any]] = []
    store_sizes: dict[str, int] = {}  # distractor turns in each scenario's store
    for position, scenario in enumerate(scenarios):
        with tempfile.TemporaryDirectory(prefix="nous-agent-") as tmp:
            run_settings = settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'bench.db'}"})
            async with Nous(run_settings, agent_id=scenario.agent_id, embedding_provider=provider) as nous:
                added = _distractors_for(distractors, position, distractors_per_scenario)
                for conversation in added:
                    await nous.ingest(conversation)
                store_sizes[scenario.id] = len(
                    await nous.memories(["turn"], limit=100_000, include_inactive=True)
                )
                ids = await write_scenario(nous, scenario)
                await nous.recall("warm up", limit=1, reinforce=False)
                for q in scenario.questions:
                    at = q.asked_at or scenario.now
                    record: dict[str, Any] = {"scenario": scenario.id, "id": q.id, "kind": q.kind}
                    for name, tally in systems.items():
                        t0 = time.perf_counter()
                        hits = await nous.recall(
                            q.question,
                            limit=RECALL_LIMIT,
                            user_id=q.user_id,
                            now=at,
                            as_of=at,
                            reinforce=False,
                            preset=None if name == "nous" else name,
                            min_score=0,  # ranking is scored; the default minimum is judged below
                        )
                        if name == "nous":
                            recall_s.append(time.perf_counter() - t0)
                        row = tally.add(q, hits, ids)
                        record[name] = {
                            **{k: v for k, v in row.items() if k not in ("kind", "abstain")},
                            "top": [
                                {
                                    "ids": sorted(ids.get(h.id, set())) or [h.id[:8]],
                                    "kind": h.kind.value,
                                    "score": round(h.score, 4),
                                }
                                for h in hits[:5]
                            ],
                        }
                    t0 = time.perf_counter()
                    context = await nous.preview_turn(q.question, user_id=q.user_id, at=at, as_of=at)
                    preview_s.append(time.perf_counter() - t0)
                    if q.context_must_include:
                        text = context.text.lower()
                        missing = [s for s in q.context_must_include if s.lower() not in text]
                        included.append(not missing)
                        included_by_kind[q.kind].append(not missing)
                        record["context_missing"] = missing
                    record["frame"] = context.frame
                    record["context_tokens"] = context.tokens
                    questions.append(record)
                    if step:
                        step(scenario.id)
        if progress:
            progress(f"{scenario.id}: {len(scenario.questions)} questions")
    per_kind = systems["nous"].per_kind()
    for kind, values in included_by_kind.items():
        per_kind[kind]["context_include"] = _mean(values)
    return {
        "systems": {name: tally.figures() for name, tally in systems.items()},
        "context_include": _mean(included),
        "per_kind": per_kind,
        "per_kind_baselines": {name: tally.per_kind() for name, tally in systems.items() if name != "nous"},
        "latency_ms": {"recall": percentiles_ms(recall_s), "pre_turn_preview": percentiles_ms(preview_s)},
        "scenarios": [s.id for s in scenarios],
        "distractor_turns": store_sizes if distractors else {},
        "questions": questions,
        "embedding_model": provider.model_name,
    }
