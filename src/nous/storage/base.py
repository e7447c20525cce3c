"""The one storage interface every backend implements.

Writes are expressed as a list of operations applied in one transaction, so an
operation that touches several rows (a supersession, a link, an audit row) is
never half-written. Reads are plain async methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from nous.models import Edge, HistoryEntry, LifecycleState, Memory, MemoryKind, StoreStats, WorkingMemory


@dataclass(slots=True)
class PutMemory:
    """Insert a memory, or replace every column of an existing one with the same id."""

    memory: Memory
    content_hash: str
    embedding: np.ndarray | None = None
    embedding_model: str | None = None
    keep_embedding: bool = False


@dataclass(slots=True)
class PutEdge:
    """Insert an edge unless the same (source, target, relation) already exists."""

    edge: Edge


@dataclass(slots=True)
class AddHistory:
    """Append an audit row."""

    entry: HistoryEntry


@dataclass(slots=True)
class PurgeMemory:
    """Delete a memory row and its edges for good (explicit forget only)."""

    memory_id: str


@dataclass(slots=True)
class PutWorkingMemory:
    """Insert or replace one session's working memory."""

    working_memory: WorkingMemory


@dataclass(slots=True)
class SetEmbedding:
    """Attach an embedding to a memory whose content hash still matches."""

    memory_id: str
    content_hash: str
    embedding: np.ndarray
    embedding_model: str


@dataclass(slots=True)
class SetLifecycle:
    """Update only a memory's lifecycle columns (a review or a decay step).

    Touches neither its text nor its vector, so indexes need no refresh.
    """

    memory_id: str
    agent_id: str
    lifecycle: LifecycleState
    stability: float
    review_count: int
    last_reviewed_at: datetime | None


# Keyword search on large stores leaves out query terms found in more than this share of
# memories: their IDF is near zero, yet every memory holding them must be scored.
LARGE_STORE = 20_000
COMMON_TERM_SHARE = 0.05


def selective_terms(terms: list[str], share: dict[str, float]) -> list[str]:
    """``terms`` without the very common ones (by document share); the rarest is always kept."""
    kept = [t for t in terms if share.get(t, 0.0) <= COMMON_TERM_SHARE]
    return kept or [min(terms, key=lambda t: share.get(t, 0.0))]


WriteOp = PutMemory | PutEdge | AddHistory | PurgeMemory | PutWorkingMemory | SetEmbedding | SetLifecycle
INDEX_NEUTRAL_OPS = (SetLifecycle, AddHistory)  # ops that change nothing a search index holds


@dataclass(slots=True)
class MemoryQuery:
    """Which memories a read concerns. ``None`` means no constraint."""

    agent_id: str
    kinds: tuple[MemoryKind, ...] | None = None
    user_id: str | None = None
    session_id: str | None = None
    subject: str | None = None
    category: str | None = None
    include_inactive: bool = False
    include_superseded: bool = False
    since: datetime | None = None
    until: datetime | None = None
    ids: tuple[str, ...] | None = None
    newest_first: bool = True
    limit: int = 100
    offset: int = 0

    def narrows_beyond_kind(self) -> bool:
        """True when the query filters on more than agent, kind and activity."""
        return any(
            v is not None
            for v in (
                self.user_id,
                self.session_id,
                self.subject,
                self.category,
                self.since,
                self.until,
                self.ids,
            )
        )


@dataclass(slots=True)
class ScoredId:
    """A memory id with a backend-specific relevance score (higher is better).

    Keyword hits may also carry ``own``: the score of the memory's own text alone, without its
    keyword context. Vector hits leave it None.
    """

    id: str
    score: float
    own: float | None = None


@dataclass(slots=True)
class CandidateInfo:
    """The few columns ranking needs about a candidate, without loading the whole memory."""

    id: str
    kind: MemoryKind
    session_id: str | None
    user_id: str | None
    occurred_at: datetime
    encoded_frame: str | None
    encoded_censors: list[str] | None
    active: bool
    superseded_by: str | None
    lifecycle: LifecycleState = LifecycleState.ACTIVE

    @classmethod
    def of(cls, memory: Memory) -> CandidateInfo:
        return cls(
            memory.id,
            memory.kind,
            memory.session_id,
            memory.user_id,
            memory.occurred_at,
            memory.encoded_frame,
            memory.encoded_censors,
            memory.active,
            memory.superseded_by,
            memory.lifecycle,
        )


CANDIDATE_COLUMNS = (
    "id, kind, session_id, user_id, occurred_at, encoded_frame, encoded_censors, active, superseded_by, "
    "lifecycle"
)


@dataclass(slots=True)
class StoreInfo:
    """Static facts about an open store."""

    backend: str
    location: str
    embedding_model: str | None = None
    embedding_dimensions: int | None = None
    extras: dict[str, str] = field(default_factory=dict)


class Store(ABC):
    """Abstract storage backend."""

    info: StoreInfo

    @abstractmethod
    async def open(self, *, embedding_model: str, embedding_dimensions: int) -> None:
        """Connect, apply pending migrations and check the embedding space matches."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections and threads."""

    @abstractmethod
    async def apply(self, ops: list[WriteOp]) -> list[bool]:
        """Apply the operations in one transaction; per op, whether it changed anything."""

    @abstractmethod
    async def get_many(self, agent_id: str, ids: list[str]) -> dict[str, Memory]:
        """Memories by id (active or not) within an agent; unknown ids are absent."""

    @abstractmethod
    async def resolve_prefix(self, agent_id: str, prefix: str) -> list[str]:
        """Up to two ids starting with ``prefix``."""

    @abstractmethod
    async def query(self, query: MemoryQuery) -> list[Memory]:
        """Memories matching the query, by ``occurred_at``."""

    @abstractmethod
    async def vector_search(self, query: MemoryQuery, embedding: np.ndarray, limit: int) -> list[ScoredId]:
        """Nearest memories by cosine similarity (score = cosine)."""

    @abstractmethod
    async def keyword_search(self, query: MemoryQuery, terms: list[str], limit: int) -> list[ScoredId]:
        """Memories matching any of the terms, best first (score = backend rank)."""

    @abstractmethod
    async def describe(self, agent_id: str, ids: list[str]) -> dict[str, CandidateInfo]:
        """Ranking metadata of the given memories (unknown ids are absent)."""

    @abstractmethod
    async def vectors(self, agent_id: str, ids: list[str]) -> dict[str, np.ndarray]:
        """Stored embeddings of the given memories (those that have one)."""

    @abstractmethod
    async def edges(self, agent_id: str, ids: list[str]) -> list[Edge]:
        """Edges touching any of the ids."""

    @abstractmethod
    async def history(self, agent_id: str, memory_id: str) -> list[HistoryEntry]:
        """The audit trail of one memory, oldest first."""

    @abstractmethod
    async def embeddings_by_hash(self, hashes: list[str], model: str) -> dict[str, np.ndarray]:
        """Stored embeddings of the given content hashes, computed by ``model``."""

    @abstractmethod
    async def missing_embeddings(self, agent_id: str | None, limit: int) -> list[tuple[Memory, str]]:
        """Memories without an embedding and their content hashes."""

    @abstractmethod
    async def working_memory(self, agent_id: str, session_id: str) -> WorkingMemory | None:
        """One session's working memory, if any."""

    @abstractmethod
    async def stats(self, agent_id: str) -> StoreStats:
        """Counts for one agent."""

    @abstractmethod
    def iter_memories(self, agent_id: str, batch_size: int = 500) -> AsyncIterator[Memory]:
        """Every memory of an agent, active or not, oldest first."""

    @abstractmethod
    async def all_edges(self, agent_id: str) -> list[Edge]:
        """Every edge of an agent."""

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
