"""A small linear re-ranker over cheap features of the head of the base ranking.

Each candidate among the best ``rerank_depth`` of the fused ranking gets a feature vector built
from what recall already knows (its fused rank, cosine, the share of the query's terms in its own
text and in its context, its session's strength, graph evidence, a speaker match, length, whether
it is a question) and is scored ``sigmoid(w . x + b)``. Keyword evidence enters as term shares,
not as BM25 scores relative to the best hit: among memories matching the same words, those ratios
are length-normalisation noise at full scale, and they let a useless keyword side outvote meaning. Recency is not a feature: it is a rule applied
only to questions about what is current (``search.py``), as the labelled data cannot teach it. Features are scale-free
(ranks, shares, scores relative to the pool's best), so the same weights serve any store size or
conversation style. How the weights were chosen is in ``docs/retrieval.md``; ``scripts/
fit_reranker.py`` reproduces them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

FEATURES: tuple[str, ...] = (
    "rrf",  # fused reciprocal-rank score / the best one
    "rank",  # 1 - rank / depth in the fused ranking
    "cosine",  # cosine to the query (best chunk)
    "cover_own",  # keyword evidence of its own text: the share of query terms it holds
    "cover_context",  # keyword evidence of its context: the share of query terms found only there
    "session",  # strength of its session / the strongest session's
    "graph",  # evidence from edges to the best memories (0..1)
    "speaker",  # the query names its speaker (or asks in the first person and it is the user's)
    "length",  # log length of its text, 1 at ~4,000 characters
    "question",  # it is itself a question
)

# Chosen by leave-one-conversation-out over LoCoMo dev and the long user-assistant chats together
# (scripts/fit_reranker.py; docs/retrieval.md has the per-fold figures).
WEIGHTS = np.array(
    [2.032, 0.501, 2.879, 3.008, 1.323, 2.138, 0.851, 2.154, 0.063, -0.154],
    dtype=np.float64,
)
BIAS = -11.535

_WORD = re.compile(r"[\w][\w'\-]*", re.UNICODE)
_FIRST_PERSON = re.compile(r"\b(i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.IGNORECASE)
_SUFFIXES = ("ing", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """A light stemmer for coverage features: lower-case, without a common suffix."""
    w = word.lower().strip("'-")
    if w.endswith("'s"):
        w = w[:-2]
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


def stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text)}


def first_person(query: str) -> bool:
    return _FIRST_PERSON.search(query) is not None


@dataclass(slots=True)
class CandidateFacts:
    """What the re-ranker reads about one candidate."""

    rrf: float
    rank: int
    cosine: float
    content: str
    context: str | None
    session_strength: float
    graph: float
    speaker: str | None
    role: str | None


def feature_matrix(
    facts: Sequence[CandidateFacts], query_terms: set[str], query: str, depth: int
) -> np.ndarray:
    """One row of FEATURES per candidate."""
    if not facts:
        return np.zeros((0, len(FEATURES)))
    best_rrf = max(f.rrf for f in facts) or 1.0
    lower = query.lower()
    asks_first_person = first_person(query)
    n_terms = len(query_terms) or 1
    rows = []
    for f in facts:
        own = stems(f.content) & query_terms
        around = (stems(f.context) & query_terms) - own if f.context else set()
        named = f.speaker is not None and re.search(rf"\b{re.escape(f.speaker.lower())}\b", lower) is not None
        speaker = 1.0 if named or (asks_first_person and f.role == "user") else 0.0
        rows.append(
            (
                f.rrf / best_rrf,
                max(0.0, 1.0 - f.rank / depth),
                f.cosine,
                len(own) / n_terms,
                len(around) / n_terms,
                f.session_strength,
                f.graph,
                speaker,
                min(1.0, math.log1p(len(f.content)) / math.log1p(4000)),
                1.0 if f.content.rstrip().endswith("?") else 0.0,
            )
        )
    return np.asarray(rows, dtype=np.float64)


def score(matrix: np.ndarray, weights: np.ndarray = WEIGHTS, bias: float = BIAS) -> np.ndarray:
    """Relevance in (0, 1) per row."""
    return 1.0 / (1.0 + np.exp(-(matrix @ weights + bias)))
