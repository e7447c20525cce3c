"""The state of one recall between its steps, and the rules that read it: candidates with
their signals, score arithmetic that keeps a relevance a probability, and scope checks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from nous.models import Memory
from nous.retrieval import rerank
from nous.retrieval.intent import NONE as NO_INTENT
from nous.retrieval.intent import Intent
from nous.retrieval.timeparse import ParsedQuery, TimeWindow
from nous.retrieval.weights import RetrievalWeights
from nous.storage import MemoryQuery
from nous.storage.base import CandidateInfo


@dataclass(slots=True)
class Candidate:
    """A memory in the running: its fused rank score, its score so far, and the signals behind it."""

    id: str
    base: float = 0.0  # reciprocal-rank fusion of the dense and keyword pools
    score: float = 0.0
    signals: dict[str, float] | None = None

    def signal(self, name: str, value: float) -> None:
        if self.signals is None:
            self.signals = {}
        self.signals[name] = value

    def rounded_signals(self) -> dict[str, float]:
        return {k: round(float(v), 6) for k, v in (self.signals or {}).items()}


FEATURE_INDEX = {name: i for i, name in enumerate(rerank.FEATURES)}


def scaled(score: float, factor: float) -> float:
    """A relevance (0..1) with its odds multiplied by ``factor``: a boost or a fade that keeps the
    score a probability (for small scores it is simply ``score * factor``)."""
    if score >= 1.0 or factor == 1.0:
        return score
    return score * factor / (1.0 - score + score * factor)


def raw_score(c: Candidate, w: RetrievalWeights) -> float:
    """The score of a preset without the re-ranker: what that search alone would report (the
    cosine for dense alone, BM25 for keywords alone, reciprocal-rank fusion for both)."""
    signals = c.signals or {}
    if not w.keyword:
        return max(0.0, signals.get("dense", 0.0))
    if not w.dense:
        return signals.get("keyword", 0.0)
    return c.base


@dataclass(slots=True)
class Pools:
    """What the dense and keyword searches found."""

    candidates: dict[str, Candidate] = field(default_factory=dict)
    memories: dict[str, CandidateInfo] = field(default_factory=dict)
    cosine: dict[str, float] = field(default_factory=dict)
    query_vector: np.ndarray | None = None


@dataclass(slots=True)
class GraphEvidence:
    """What the edges of the best memories say: their neighbours with a share of a best one's
    strength (0..1), and the turns two ``follows`` steps from best ones, each with those best
    ones' ids and strengths."""

    neighbours: dict[str, float]
    two_steps: dict[str, dict[str, float]]


@dataclass(slots=True)
class Run:
    """One recall's state between the steps."""

    weights: RetrievalWeights
    now: datetime
    parsed: ParsedQuery
    window: TimeWindow | None
    candidates: dict[str, Candidate]
    memories: dict[str, CandidateInfo]
    loaded: dict[str, Memory] = field(default_factory=dict)
    features: list[tuple[str, np.ndarray]] = field(default_factory=list)
    intent: Intent = NO_INTENT


@dataclass(slots=True)
class Ranked:
    """A recall's candidates ranked best first (``candidates``), with the run that scored them."""

    run: Run
    candidates: list[Candidate]


def nothing_close(candidates: Iterable[Candidate], w: RetrievalWeights) -> bool:
    """No candidate has keyword evidence, none is of the kind the question asks for ("what did we
    decide?" shares no word with the decision), no censor's pattern fires on it, and none is as
    close as ``nothing_below_cosine``: the question is about something the store never heard of
    ("xyzzy plugh"), and the best of the noise is still noise."""
    for c in candidates:
        signals = c.signals or {}
        if signals.keys() & {"keyword", "kind_match", "fires"}:
            return False
        if signals.get("dense", 0.0) >= w.nothing_below_cosine:
            return False
    return True


def is_current(memory: Memory, as_of: datetime | None) -> bool:
    """Not superseded (as of ``as_of``, when given: a fact replaced later was current then)."""
    if memory.superseded_by is None:
        return True
    return as_of is not None and memory.valid_to is not None and memory.valid_to > as_of


def in_scope(memory: CandidateInfo, scope: MemoryQuery) -> bool:
    """Whether a memory reached by an edge passes the query's filters."""
    if scope.kinds and memory.kind not in scope.kinds:
        return False
    if not scope.include_inactive and not memory.active:
        return False
    if not scope.include_superseded and memory.superseded_by is not None:
        return False
    others = scope.user_id is not None and memory.user_id != scope.user_id
    if others and not (scope.shared and memory.user_id is None):
        return False
    if scope.session_id is not None and memory.session_id != scope.session_id:
        return False
    if scope.since and memory.occurred_at < scope.since:
        return False
    if scope.as_of and memory.occurred_at > scope.as_of:
        return False
    return not (scope.until and memory.occurred_at >= scope.until)
