"""The retrieval parameters and named presets. One set per preset, the same for every dataset."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from nous.errors import InvalidInputError
from nous.models import MemoryKind


def _floors() -> dict[MemoryKind, float]:
    return {
        MemoryKind.FACT: 0.1,
        MemoryKind.DECISION: 0.1,
        MemoryKind.PROCEDURE: 0.1,
        MemoryKind.CENSOR: 0.15,
        MemoryKind.EPISODE: 0.05,
        MemoryKind.TURN: 0.05,
    }


@dataclass(frozen=True, slots=True)
class RetrievalWeights:
    """How recall finds and orders candidates.

    The base ranking fuses the dense and keyword candidate pools by reciprocal rank, so neither
    side's score scale can swamp the other. The best ``rerank_depth`` candidates are then scored
    by a small linear re-ranker over cheap features (``nous.retrieval.rerank``), whose weights
    were chosen by leave-one-conversation-out; session and graph evidence and, for temporal
    questions only, recency enter as features there.
    """

    name: str = "default"
    pool: int = 300  # candidates taken from each of the dense and keyword searches
    dense: bool = True  # run the dense (embedding) search
    keyword: bool = True  # run the keyword (BM25) search
    rrf_k: float = 60.0  # reciprocal-rank constant of the base fusion
    boosts: bool = True  # session, graph and (temporal questions) recency evidence
    rerank: bool = True  # re-score the head of the base ranking with the linear re-ranker
    rerank_depth: int = 50
    per_kind: int = 5  # the best this-many of each kind are re-ranked too, wherever they stand
    kind_pool: int = 50  # candidates of the dense search among memories other than turns
    # Questions about what is current ("latest", "now", "recently") or recaps: the newest memory
    # of the head gets up to this much more score. A product rule, not fitted: in the labelled
    # data "recently" is relative to when each question was written, not to the conversation's end.
    recency: float = 0.15
    group_top: int = 3  # a session's strength is the sum of its best this-many base scores
    graph_seeds: int = 3  # neighbours (edges of any relation) of this many best memories
    frame: float = 1.3  # multiplier when encoded in the caller's current frame
    censor: float = 0.2  # up to this multiplier extra for censor overlap
    superseded: float = 0.3  # a replaced memory (history asked for) whose successor is not a result
    duplicate_cosine: float = 0.97  # a result this similar to a better one is dropped (diversity)
    min_cosine: dict[MemoryKind, float] = field(default_factory=_floors)  # floor without keyword evidence
    # A memory outside a time window read from the question's words competes with its odds times
    # this (search.py, _outside_window): words that only look like a time do not hide the answer.
    outside_window: float = 0.2
    # A question no memory shares a word with and none comes this close to (cosine) gets nothing
    # (when a minimum score applies). On the development sets no answerable question was below
    # 0.25 without keyword evidence; nonsense sits under 0.15.
    nothing_below_cosine: float = 0.2
    # A covering recall (search.py, ``_cover``) chooses among the best ``limit * cover_depth``
    # results scoring at least ``cover_floor`` of the best one (both chosen leave-one-out,
    # docs/retrieval.md "Covering recall").
    cover_depth: int = 10
    cover_floor: float = 0.0
    recap_days: float = 2.0  # recap questions without a window look back this far
    recap_max: int = 5


DEFAULT_WEIGHTS = RetrievalWeights()

PRESETS: dict[str, RetrievalWeights] = {
    "default": DEFAULT_WEIGHTS,
    # Plain cosine over every memory type: what a vector store alone would return.
    "dense-only": replace(DEFAULT_WEIGHTS, name="dense-only", keyword=False, boosts=False, rerank=False),
    # Plain BM25 (the memory's own words, its context words at a lower weight).
    "keyword-only": replace(DEFAULT_WEIGHTS, name="keyword-only", dense=False, boosts=False, rerank=False),
    # Reciprocal-rank fusion of dense and keyword, nothing else.
    "no-boosts": replace(DEFAULT_WEIGHTS, name="no-boosts", boosts=False, rerank=False),
}


def preset(name: str | None) -> RetrievalWeights:
    """The named preset (None means ``default``); InvalidInputError for an unknown name."""
    if name is None:
        return DEFAULT_WEIGHTS
    found = PRESETS.get(name) if isinstance(name, str) else None
    if found is None:
        raise InvalidInputError(
            f"unknown recall preset {name!r}: choose from {', '.join(PRESETS)}", field="preset"
        )
    return found
