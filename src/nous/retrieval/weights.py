"""The retrieval parameters. One set, used everywhere: no per-dataset tuning."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    """How the signals are combined.

    The base score is ``dense * minmax(cosine) + keyword * (bm25 / max bm25)`` over the
    candidate pools; boosts are added as fractions of the best base score so they
    keep their meaning whatever the score scale.
    """

    pool: int = 300  # candidates taken from each of the dense and keyword searches
    dense: float = 0.5
    keyword: float = 0.5
    # Same-session boost: memories from the sessions that match best. Chosen by leave-one-file-out
    # on LoCoMo (0.2 in 4 of 5 folds; held-out recall_all@10 0.704): stronger values pull the
    # top results into one session, which hurts questions whose evidence spans sessions.
    group: float = 0.2
    group_top: int = 3  # a session's strength is the sum of its best this-many base scores
    graph: float = 0.1  # neighbours of the best memories (edges of any relation)
    graph_seeds: int = 3
    recency: float = 0.1  # bonus for memories that happened recently...
    recency_half_life_days: float = 14.0  # ...halving every this many days
    frame: float = 1.3  # multiplier when encoded in the caller's current frame (spec 003 D3)
    censor: float = 0.2  # up to this multiplier extra for censor overlap (spec 003 D4)
    duplicate_cosine: float = 0.97  # a result this similar to a better one is dropped (diversity)
    min_cosine: dict[MemoryKind, float] = field(default_factory=_floors)  # floor without keyword evidence
    recap_days: float = 2.0  # recap questions without a window look back this far
    recap_max: int = 5


DEFAULT_WEIGHTS = RetrievalWeights()
