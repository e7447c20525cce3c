"""Topic threads, the pure part: assigning memories to threads by meaning, words and continuity.

A thread is one topic of one user scope (agent + user; no user: the agent's shared memories)
across sessions. Memories are taken in time order; each joins the best thread of its scope when
its score reaches ``JOIN_AT``, else starts a new thread. The score of a thread for a memory is

- the cosine of the memory's embedding to the thread's centroid (the normalised sum of its
  members' embeddings),
- plus ``WORDS_WEIGHT`` times the share of the memory's content words among the thread's
  frequent words (its keyword state),
- plus ``CONTINUITY`` when the memory follows, in the same session, a memory of that thread (a
  reply belongs with the message it answers unless its meaning moves away).

State is a running sum and counts, so assignment is incremental: a memory is assigned once and
never moved, and the same memories in the same order always give the same threads. Nothing here
does I/O (``nous.memory.threads`` reads and writes the store); ``JOIN_AT`` was chosen on the
labelled chats (docs/retrieval.md, "Topic threads").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from nous._text import keyword_terms
from nous.language.lexicon import CALENDAR, GENERIC

JOIN_AT = 0.35  # a memory joins the best thread scoring at least this, else starts its own
WORDS_WEIGHT = 0.3  # how much the share of shared frequent words adds to the cosine
CONTINUITY = 0.1  # bonus of the thread that the memory's session was last in
KEYWORDS_KEPT = 40  # a thread's keyword state: its this many most frequent words
BACKGROUND_PRIOR = 20  # the background counts this many zero vectors (see ``Threader._background``)
_EARLIEST = datetime.min.replace(tzinfo=UTC)
ITEM_WORDS = 24  # a memory's words considered (its first distinct content words)


@dataclass(slots=True)
class ThreadItem:
    """A memory as threading sees it."""

    id: str
    user_id: str | None
    session_id: str | None
    occurred_at: datetime
    vector: np.ndarray  # L2-normalised
    words: list[str]


@dataclass(slots=True, eq=False)  # a thread is itself: compared by identity
class ThreadState:
    """A thread's incremental state: the sum of its members' vectors, its word counts (the
    ``KEYWORDS_KEPT`` most frequent: how many members used each), its size and times."""

    id: str
    user_id: str | None
    vector_sum: np.ndarray
    size: int = 0
    keywords: dict[str, int] = field(default_factory=dict)
    first_at: datetime | None = None
    last_at: datetime | None = None
    last_session: str | None = None
    changed: bool = False  # touched by this run (to be written)
    new: bool = False  # started by this run

    def add(self, item: ThreadItem) -> None:
        self.vector_sum = self.vector_sum + item.vector
        self.size += 1
        counts = Counter(self.keywords)
        counts.update(set(item.words))
        self.keywords = kept_keywords(counts)
        if self.first_at is None or item.occurred_at < self.first_at:
            self.first_at = item.occurred_at
        if self.last_at is None or item.occurred_at >= self.last_at:
            self.last_at = item.occurred_at
            self.last_session = item.session_id
        self.changed = True


def kept_keywords(counts: Counter[str]) -> dict[str, int]:
    """A thread's keyword state from word counts: the ``KEYWORDS_KEPT`` most frequent (ties by
    word), none counted zero or less."""
    ranked = sorted(((w, c) for w, c in counts.items() if c > 0), key=lambda kv: (-kv[1], kv[0]))
    return dict(ranked[:KEYWORDS_KEPT])


_NO_TOPIC = GENERIC | CALENDAR


def item_words(text: str, skip: Collection[str] = ()) -> list[str]:
    """The content words of a memory that can tie it to a topic (no generic chat words, no dates
    such as "May" or "Friday", none of ``skip``)."""
    words = keyword_terms(text, limit=ITEM_WORDS * 2)
    return [w for w in words if w not in _NO_TOPIC and w not in skip and len(w) > 2][:ITEM_WORDS]


@dataclass(slots=True)
class Threader:
    """Assigns items to the threads of their scope; ``new_id`` names a new thread."""

    threads: list[ThreadState]
    join_at: float = JOIN_AT
    words_weight: float = WORDS_WEIGHT
    continuity: float = CONTINUITY
    center: bool = True
    _by_scope: dict[str | None, list[ThreadState]] = field(default_factory=dict)
    _last_thread: dict[str, ThreadState] = field(default_factory=dict)  # session -> its last thread

    def __post_init__(self) -> None:
        for t in self.threads:
            self._by_scope.setdefault(t.user_id, []).append(t)
            if t.last_session is not None:
                seen = self._last_thread.get(t.last_session)
                if seen is None or (t.last_at or _EARLIEST) > (seen.last_at or _EARLIEST):
                    self._last_thread[t.last_session] = t

    def _background(self, threads: list[ThreadState]) -> np.ndarray | float:
        """What every memory of the scope shares (their mean, shrunk towards zero while there are
        few): taken out of both sides of the cosine, so that a long chat's common tone ("X said",
        chit-chat) does not make every thread look close to every message."""
        if not self.center:
            return 0.0
        total = sum(t.size for t in threads)
        return np.sum([t.vector_sum for t in threads], axis=0) / (total + BACKGROUND_PRIOR)

    def score(self, item: ThreadItem) -> tuple[int, float] | None:
        """The best thread (its index in the item's scope) and its score, if the scope has any."""
        threads = self._by_scope.get(item.user_id)
        if not threads:
            return None
        background = self._background(threads)
        means = np.stack([t.vector_sum / t.size for t in threads]) - background
        means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-9)
        x = item.vector - background
        scores = means @ (x / max(float(np.linalg.norm(x)), 1e-9))
        if item.words and self.words_weight:
            words = set(item.words)
            scores = scores + self.words_weight * np.array(
                [len(words.intersection(t.keywords)) / len(words) for t in threads], dtype=np.float32
            )
        last = self._last_thread.get(item.session_id) if item.session_id else None
        if last is not None and self.continuity and last in threads:
            scores[threads.index(last)] += self.continuity
        best = int(np.argmax(scores))
        return best, float(scores[best])

    def assign(self, item: ThreadItem, new_id: Callable[[ThreadItem], str]) -> ThreadState:
        """Add ``item`` to its best thread, or to a new one named ``new_id(item)``; the thread."""
        found = self.score(item)
        threads = self._by_scope.setdefault(item.user_id, [])
        if found is not None and found[1] >= self.join_at:
            thread = threads[found[0]]
            thread.add(item)
        else:
            thread = ThreadState(
                id=new_id(item), user_id=item.user_id, vector_sum=np.zeros_like(item.vector), new=True
            )
            thread.add(item)
            threads.append(thread)
            self.threads.append(thread)
        if item.session_id:
            self._last_thread[item.session_id] = thread
        return thread


def thread_all(
    items: Iterable[ThreadItem],
    threads: Sequence[ThreadState],
    new_id: Callable[[ThreadItem], str],
    *,
    join_at: float = JOIN_AT,
    words_weight: float = WORDS_WEIGHT,
    continuity: float = CONTINUITY,
    center: bool = True,
) -> tuple[list[tuple[str, str]], list[ThreadState]]:
    """Assign ``items`` (in time order) to ``threads`` or new ones (``new_id`` of the item that
    starts it): the (memory id, thread id) pairs and every thread (changed ones marked)."""
    threader = Threader(list(threads), join_at, words_weight, continuity, center)
    pairs: list[tuple[str, str]] = []
    for item in sorted(items, key=lambda i: (i.occurred_at, i.id)):
        pairs.append((item.id, threader.assign(item, new_id).id))
    return pairs, threader.threads
