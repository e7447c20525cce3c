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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import snowballstemmer

from nous._memo import TextMemo

# Each feature with its weight, in one table: chosen by leave-one-conversation-out over the three
# development sets together — LoCoMo, the long user-assistant chats and the agent-memory scenarios
# (scripts/fit_reranker.py; docs/retrieval.md has the per-fold figures), with the scenarios also
# written beside conversations about other things, as a store that grew. A weight is on the
# scale of the calibrated relevance (see BIAS).
FEATURE_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("rrf", 2.553),  # fused reciprocal-rank score / the best one
    ("rank", 0.564),  # 1 - rank / depth in the fused ranking
    ("cosine", 3.816),  # cosine to the query (best chunk)
    ("cover_passage", 3.606),  # share of the query's terms (not the speakers' names) in its best passage
    ("cover_context", 1.704),  # share of the query's terms found only in its context
    ("session", 0.447),  # strength of its session / the strongest session's
    ("graph", 0.478),  # evidence from edges to the best memories (0..1)
    ("speaker", 1.976),  # the query names its speaker (or asks in the first person, of a user turn)
    ("length", -0.236),  # log length of its text, 1 at ~4,000 characters
    ("question", -0.17),  # it is itself a question
    ("kind_match", 2.319),  # of a kind the question asks for (a decision for 'what did we decide')
    ("own", 0.968),  # it belongs to the user who asks (not shared by every user)
    ("turn", -0.564),  # it is a conversation turn
    ("censor", -0.456),  # it is a censor (a rule of what not to do: rarely an answer)
    ("answer_type", 0.965),  # asked when / how much / how many, it holds a time or number
    ("fires", 2.205),  # a censor whose trigger pattern matches the question: what it guards against
    ("continues", 1.307),  # a named speaker's turn two steps from one of the best, theirs (0..1)
)
FEATURES: tuple[str, ...] = tuple(name for name, _ in FEATURE_WEIGHTS)
WEIGHTS = np.array([weight for _, weight in FEATURE_WEIGHTS], dtype=np.float64)
BIAS = -7.876

_WORD = re.compile(r"[\w][\w'\-]*", re.UNICODE)
_FIRST_PERSON = re.compile(r"\b(i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.IGNORECASE)
# The keyword search stems English as Snowball does (SQLite FTS5's porter tokenizer, PostgreSQL's
# english configuration): the coverage features must match words the same way, or a memory the
# keyword side found by "access" for "accessibility" counts as covering none of the question,
# while one sharing only common words ("needs", "team") covers half of it.
_ENGLISH = snowballstemmer.stemmer("english")
# Questions whose answer is a time or a quantity, and text that holds one.
_ASKS_NUMBER = re.compile(
    r"^\s*(when|since when|until when)\b|\b(what|which) (time|day|date|month|year|hour)s?\b|"
    r"\bhow (much|many|long|often|far|soon|late|early|old|big|large|high|fast)\b|"
    r"\bwhat('s| is| was) the (most|least|maximum|minimum|limit|price|cost|budget|deadline|fee|rate)\b",
    re.IGNORECASE,
)
_HOLDS_NUMBER = re.compile(
    r"\d|\b(january|february|march|april|may|june|july|august|september|october|november|december|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|noon|midnight|tomorrow|yesterday|"
    r"weekly|daily|monthly|one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|hundred|"
    r"thousand|dozen|half)\b",
    re.IGNORECASE,
)
# Query terms count where they occur together: a long reply holds many of a question's words by
# chance, scattered over thousands of characters. Its term share is that of its best window of
# this many characters (a short text is one window). 300-500 measured the same held out
# (docs/retrieval.md).
PASSAGE_CHARS = 400
# What is computed once per long text (``nous._memo``): the same memories are re-ranked query after
# query. A text's stems are all most need (its context's, a short text's, one holding at most one
# query term); the positions of its words are computed only for a passage's share, and kept for
# fewer texts as they take more room.
_STEMS: TextMemo[frozenset[str]] = TextMemo(4096)  # a long chat's turns and their contexts
_POSITIONS: TextMemo[dict[str, tuple[tuple[int, int], ...]]] = TextMemo(1024)  # ~a store's re-ranked heads


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The stem coverage features compare: lower-case, without a possessive, Snowball English."""
    w = word.lower().strip("'-")
    if w.endswith("'s"):
        w = w[:-2]
    return str(_ENGLISH.stemWord(w))


def stems(text: str) -> set[str]:
    return set(_stem_set(text))


def _stem_set(text: str) -> frozenset[str]:
    return _STEMS.get(text, _compute_stems)


def _compute_stems(text: str) -> frozenset[str]:
    return frozenset(map(stem, set(_WORD.findall(text))))


def _positions(text: str) -> dict[str, tuple[tuple[int, int], ...]]:
    """Each stem of ``text`` with the (start, end) of its words."""
    return _POSITIONS.get(text, _stem_positions)


def _stem_positions(text: str) -> dict[str, tuple[tuple[int, int], ...]]:
    by_word: dict[str, list[tuple[int, int]]] = {}
    for word, span in zip(_WORD.findall(text), [m.span() for m in _WORD.finditer(text)], strict=True):
        spans = by_word.get(word)
        if spans is None:
            by_word[word] = [span]
        else:
            spans.append(span)
    found: dict[str, list[tuple[int, int]]] = {}
    for word, spans in by_word.items():
        found.setdefault(stem(word), []).extend(spans)
    return {s: tuple(sorted(spans)) for s, spans in found.items()}


def coverage(text: str, query_terms: set[str]) -> tuple[set[str], float]:
    """The query terms ``text`` holds, and the largest share of them found together within one
    window of PASSAGE_CHARS characters (for a short text, simply the share it holds)."""
    if not query_terms:
        return set(), 0.0
    found = set(query_terms.intersection(_stem_set(text)))
    if len(text) <= PASSAGE_CHARS or len(found) <= 1:
        return found, len(found) / len(query_terms)
    positions = _positions(text)
    hits = sorted((start, end, s) for s in found for start, end in positions[s])  # in text order
    best, left, inside = 0, 0, Counter[str]()
    for right, (_, end, term) in enumerate(hits):  # slide a window, right edge at each match
        inside[term] += 1
        while left < right and end - hits[left][0] > PASSAGE_CHARS:
            gone = hits[left][2]
            inside[gone] -= 1
            if not inside[gone]:
                del inside[gone]
            left += 1
        best = max(best, len(inside))
    return found, best / len(query_terms)


def first_person(query: str) -> bool:
    return _FIRST_PERSON.search(query) is not None


@dataclass(slots=True)
class CandidateFacts:
    """What the re-ranker reads about one candidate."""

    rrf: float
    rank: int
    cosine: float
    content: str  # the text keyword search indexes: a procedure with its name, an episode with its summary
    context: str | None
    session_strength: float
    graph: float
    speaker: str | None
    role: str | None
    kind_match: bool = False
    kind: str = "turn"
    own: bool = False
    fires: bool = False
    continues: float = 0.0


def feature_matrix(
    facts: Sequence[CandidateFacts], query_terms: set[str], query: str, depth: int
) -> np.ndarray:
    """One row of FEATURES per candidate."""
    if not facts:
        return np.zeros((0, len(FEATURES)))
    best_rrf = max(f.rrf for f in facts) or 1.0
    lower = query.lower()
    asks_first_person = first_person(query)
    asks_number = _ASKS_NUMBER.search(query) is not None
    # The speakers' names count for the speaker feature, not for the term shares: in a chat
    # between two people every message carries a name, most of them in greetings and thanks.
    speakers = {stem(w) for f in facts if f.speaker and f.speaker != f.role for w in f.speaker.split()}
    topic_terms = query_terms - speakers
    if topic_terms:
        query_terms = topic_terms
    n_terms = len(query_terms) or 1
    rows = []
    for f in facts:
        own, passage = coverage(f.content, query_terms)
        around = (stems(f.context) & query_terms) - own if f.context else set()
        named = f.speaker is not None and re.search(rf"\b{re.escape(f.speaker.lower())}\b", lower) is not None
        speaker = 1.0 if named or (asks_first_person and f.role == "user") else 0.0
        rows.append(
            (
                f.rrf / best_rrf,
                max(0.0, 1.0 - f.rank / depth),
                f.cosine,
                passage,
                len(around) / n_terms,
                f.session_strength,
                f.graph,
                speaker,
                min(1.0, math.log1p(len(f.content)) / math.log1p(4000)),
                1.0 if f.content.rstrip().endswith("?") else 0.0,
                1.0 if f.kind_match else 0.0,
                1.0 if f.own else 0.0,
                1.0 if f.kind == "turn" else 0.0,
                1.0 if f.kind == "censor" else 0.0,
                1.0 if asks_number and _HOLDS_NUMBER.search(f.content) else 0.0,
                1.0 if f.fires else 0.0,
                f.continues,
            )
        )
    return np.asarray(rows, dtype=np.float64)


# No feature of the question as a whole enters the score: one that counted how many memories the
# searches found (the best of 600 similar turns is less surely the answer than the best of 40
# facts) made every score fall as a store grew with conversations about other things, until a
# fact that both searches put first fell under the default minimum (docs/retrieval.md).


def score(matrix: np.ndarray, weights: np.ndarray = WEIGHTS, bias: float = BIAS) -> np.ndarray:
    """Relevance in (0, 1) per row: ``sigmoid(x . weights + bias)``."""
    return 1.0 / (1.0 + np.exp(-(matrix @ weights + bias)))
