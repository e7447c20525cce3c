"""The one storage interface every backend implements.

Writes are expressed as a list of operations applied in one transaction, so an
operation that touches several rows (a supersession, a link, an audit row) is
never half-written. Reads are plain async methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from datetime import datetime

import numpy as np

from nous._time import as_utc
from nous.errors import InvalidInputError
from nous.models import (
    Edge,
    ErasureReceipt,
    HistoryEntry,
    LifecycleState,
    Memory,
    MemoryKind,
    StoreStats,
    WorkingMemory,
)
from nous.models.events import Event, EventStatus
from nous.models.keys import ApiKey
from nous.models.llm import LLMCall, LLMUsage
from nous.models.metadata import MetaFilter
from nous.models.session import IdentitySection, SessionState


@dataclass(slots=True)
class PutMemory:
    """Insert a memory, or replace every column of an existing one with the same id.

    ``chunks`` are a long memory's extra vectors (see ``SetEmbedding``); they replace the stored
    ones, unless ``keep_embedding`` keeps both the embedding and the chunks as they are.
    """

    memory: Memory
    content_hash: str
    embedding: np.ndarray | None = None
    embedding_model: str | None = None
    keep_embedding: bool = False
    chunks: list[np.ndarray] | None = None
    # Compare-and-swap: replace the stored row only if its updated_at is still this (the value the
    # change was computed from); otherwise StaleWriteError, and nothing in the transaction is written.
    expect_updated_at: datetime | None = None


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
    """Insert or replace one session's working memory. With ``expect_updated_at`` (the value it was
    read with; None: it did not exist) the write is a compare-and-swap: StaleWriteError if another
    process wrote it since."""

    working_memory: WorkingMemory
    expect_updated_at: datetime | None = None
    check: bool = False  # compare-and-swap against expect_updated_at


@dataclass(slots=True)
class SetEmbedding:
    """Attach an embedding to a memory whose content hash still matches.

    ``chunks`` are the vectors of a long memory's chunks after the first (the first chunk's
    vector is the embedding itself; see ``nous.embeddings.chunking``); they replace any stored
    ones. Vector search scores a memory by the best of its embedding and its chunks.
    """

    memory_id: str
    content_hash: str
    embedding: np.ndarray
    embedding_model: str
    chunks: list[np.ndarray] | None = None


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


@dataclass(slots=True)
class NoteUserTurn:
    """A user message in a session: creates the session row or adds to its counters (in SQL).

    Raises ConflictError when the session has ended: an ended session is never reopened.
    """

    agent_id: str
    session_id: str
    user_id: str | None
    chars: int
    remember: bool
    frame: str | None
    active_censors: list[str]
    topic: str | None  # None keeps the stored topic (a follow-up does not replace it)
    text: str  # the message itself, kept until the reply so the turn can be stored whole
    at: datetime


@dataclass(slots=True)
class NoteReply:
    """The reply that completes a turn: turn count, characters and tools, added in SQL.

    Raises NotFoundError for an unknown session and ConflictError for an ended one.
    """

    agent_id: str
    session_id: str
    chars: int
    tools: list[str]
    at: datetime


@dataclass(slots=True)
class ClaimSessionEpisode:
    """Record the episode a session opened, if it has none yet; raises ConflictError otherwise, so
    that an episode written in the same ``apply`` is rolled back with it (two processes racing on
    one session open one episode between them)."""

    agent_id: str
    session_id: str
    episode_id: str


@dataclass(slots=True)
class EndSession:
    """Mark a session ended (result False if it already was). Raises NotFoundError if unknown."""

    agent_id: str
    session_id: str
    at: datetime


@dataclass(slots=True)
class PutSession:
    """Write a whole session row as given (an ingested conversation's session, already ended); a
    session that already exists is left as it is (result False), and one that exists for another
    user (or for the agent with no user, when ``state`` has one) is a ConflictError: a session is
    never shared between users."""

    state: SessionState


@dataclass(slots=True)
class SetIdentitySection:
    """Replace one section of the agent's identity: its version goes up by one, and a history row
    (memory id ``identity:<section>``) keeps the old and new text, written in the same statement
    order inside the transaction."""

    agent_id: str
    section: str
    content: str
    actor: str
    at: datetime


@dataclass(slots=True)
class EmitEvent:
    """Add an event to the outbox, in the transaction of the change it reports. With
    ``if_changed`` only if the op just before it changed something (an ``EndSession`` that found
    the session already ended emits nothing)."""

    event: Event
    if_changed: bool = False


@dataclass(slots=True)
class CompleteEvent:
    """Mark a claimed event done, in the same transaction as its handler's effect. Raises
    LeaseLostError (rolling the effect back) unless ``lease_owner`` still holds its lease."""

    event_id: str
    lease_owner: str
    at: datetime


@dataclass(slots=True)
class FailEvent:
    """Record a failed attempt: back to pending until ``retry_at``, or dead if it is None.
    Changes nothing (False) unless ``lease_owner`` still holds the lease."""

    event_id: str
    lease_owner: str
    error: str
    retry_at: datetime | None


@dataclass(slots=True)
class RetryEvent:
    """Revive a dead (or pending) event: pending, due now, attempts reset. NotFoundError if unknown."""

    agent_id: str
    event_id: str
    at: datetime


@dataclass(slots=True)
class PutApiKey:
    """Store a new API key (its secret's hash only)."""

    key: ApiKey
    secret_hash: str


@dataclass(slots=True)
class RevokeApiKey:
    """Revoke a key (result False if it was already revoked); NotFoundError if unknown."""

    key_id: str
    at: datetime


@dataclass(slots=True)
class ClaimIdempotencyKey:
    """Claim a caller's ``Idempotency-Key`` for one request (True), in one statement: a new key, one
    kept since before ``expired_before``, or one whose first request stopped (lease run out)
    unanswered and before writing anything, sent again with the same request. Otherwise False:
    the key is answered, in flight, or was sent with another request."""

    agent_id: str
    user_id: str  # '' for an agent's key
    key: str
    request_hash: str
    owner: str  # the claiming request's token
    at: datetime
    lease_until: datetime
    expired_before: datetime


@dataclass(slots=True)
class GuardIdempotencyKey:
    """Added to each write of a request that holds an idempotency key (see ``write_riders``): marks
    the key written; ConflictError, rolling the write back, if another request took the key over."""

    agent_id: str
    user_id: str
    key: str
    owner: str
    at: datetime


@dataclass(slots=True)
class AnswerIdempotencyKey:
    """Keep the answer of the request that holds the key (False if it no longer does)."""

    agent_id: str
    user_id: str
    key: str
    owner: str
    status: int
    headers: list[tuple[str, str]]
    body: str


@dataclass(slots=True)
class ReleaseIdempotencyKey:
    """Drop the holder's claim if its request wrote nothing (True), so that a retry runs again."""

    agent_id: str
    user_id: str
    key: str
    owner: str


@dataclass(slots=True)
class IdempotentRequest:
    """A kept idempotency key: the request it was first sent with, and its answer once given."""

    request_hash: str
    owner: str
    created_at: datetime
    lease_until: datetime
    written_at: datetime | None
    status: int | None
    headers: list[tuple[str, str]]
    body: str | None


@dataclass(slots=True)
class EventStep:
    """Mark one step of an event's handler as applied, in the transaction of the step's effect.
    Raises StepDoneError (rolling the effect back) if that step was applied before."""

    event_id: str
    step: str


@dataclass(slots=True)
class EraseUser:
    """Delete every row of one user of an agent: their memories of every kind (with chunks,
    edges at either end and audit rows, those of memories purged before included), their
    sessions (tools, working memory), and the events and ingest jobs about them. The agent's
    shared memories (no user) stay. ``apply`` fills in ``receipt``'s counts and adds it to the
    audit (history row on ``user:<user_id>``, counts only) in the same transaction."""

    receipt: ErasureReceipt
    actor: str


@dataclass(slots=True)
class ThreadRecord:
    """A topic thread as stored: its label, its members' count and times, and the state that
    incremental assignment needs (``nous.memory.threading``): the sum of the members' vectors and
    the counts of their most frequent words. ``version`` goes up by one with each write."""

    id: str
    agent_id: str
    user_id: str | None
    label: str
    size: int
    vector_sum: np.ndarray
    keywords: dict[str, int]
    first_at: datetime | None
    last_at: datetime | None
    last_session: str | None
    created_at: datetime
    updated_at: datetime
    version: int = 0


@dataclass(slots=True)
class PutThread:
    """Insert a new thread (``expect_version`` None; ConflictError if the id exists) or replace a
    stored one's state if its version is still ``expect_version`` (StaleWriteError otherwise): a
    thread changed by another run since it was read fails the whole write, which is then redone
    from what is stored."""

    thread: ThreadRecord
    expect_version: int | None = None


@dataclass(slots=True)
class AddThreadMember:
    """Make a memory a member of a thread; ConflictError (rolling the write back) if it is a
    member of a thread already (another run threaded it first)."""

    agent_id: str
    thread_id: str
    memory_id: str
    occurred_at: datetime
    at: datetime


@dataclass(slots=True)
class DropThread:
    """Delete a thread and its memberships if its version is still ``expect_version``
    (StaleWriteError otherwise): a thread none of whose members is left."""

    agent_id: str
    thread_id: str
    expect_version: int


@dataclass(slots=True)
class ClearThreads:
    """Delete every thread of an agent and their memberships (a rebuild starts from none)."""

    agent_id: str


@dataclass(slots=True)
class RecordLLMCall:
    """Append a language-model usage row."""

    call: LLMCall


# Keyword search indexes a memory's own text and its keyword context (``Memory.keyword_context``,
# e.g. a turn's neighbouring turns) as two fields; a word found in the context counts this much
# of one found in the memory's own text.
CONTEXT_WEIGHT = 0.5

# Keyword search on large stores leaves out query terms found in more than this share of
# memories: their IDF is near zero, yet every memory holding them must be scored.
LARGE_STORE = 20_000
COMMON_TERM_SHARE = 0.05


def selective_terms(terms: list[str], share: dict[str, float]) -> list[str]:
    """``terms`` without the very common ones (by document share), possibly none: on a large store
    a word found in over COMMON_TERM_SHARE of memories says little about which one is meant (its
    IDF is near zero), yet ranking by it scores every memory that holds it (~100 ms for 60k
    matches at 1M memories). Meaning (the dense search) still finds what such a question asks."""
    return [t for t in terms if share.get(t, 0.0) <= COMMON_TERM_SHARE]


# The write ops by aggregate: each backend applies every op of its union (``assert_never`` in
# the dispatch lets mypy find a missing case).
MemoryOp = PutMemory | PutEdge | AddHistory | PurgeMemory | SetEmbedding | SetLifecycle
SessionOp = (
    NoteUserTurn
    | NoteReply
    | ClaimSessionEpisode
    | EndSession
    | PutSession
    | SetIdentitySection
    | PutWorkingMemory
)
EventOp = EmitEvent | CompleteEvent | FailEvent | RetryEvent | RecordLLMCall | EventStep
KeyOp = PutApiKey | RevokeApiKey
IdempotencyOp = ClaimIdempotencyKey | GuardIdempotencyKey | AnswerIdempotencyKey | ReleaseIdempotencyKey
UserOp = EraseUser
ThreadOp = PutThread | AddThreadMember | DropThread | ClearThreads
WriteOp = MemoryOp | SessionOp | EventOp | KeyOp | IdempotencyOp | UserOp | ThreadOp
# Ops applied with every write transaction of the current context, after its own ops (the
# server's request that holds an Idempotency-Key sets its ``GuardIdempotencyKey`` here, so the
# key is marked written in the same transaction as what the request stores).
write_riders: ContextVar[tuple[WriteOp, ...]] = ContextVar("write_riders", default=())


@contextmanager
def without_riders() -> Iterator[None]:
    """Writes made inside carry none of the context's riders: they are not what the request's
    Idempotency-Key stands for (the OpenAI proxy's session bookkeeping before its model call),
    so a request that stops after them leaves its key to a retry, which runs them again."""
    token = write_riders.set(())
    try:
        yield
    finally:
        write_riders.reset(token)


# Ops that change what a search index holds (a memory's text, its vectors or whether it exists);
# every other op leaves the indexes as they were.
INDEX_OPS = (PutMemory, PurgeMemory, SetEmbedding, EraseUser)


def unencodable(exc: UnicodeEncodeError) -> InvalidInputError:
    """A text parameter the driver cannot encode (a lone surrogate, e.g. from undecodable bytes in
    an id or a filter) is a bad input, not a storage failure."""
    bad = exc.object[exc.start : exc.end]
    return InvalidInputError(f"text is not valid Unicode ({bad!r}: {exc.reason})")


@dataclass(slots=True)
class MemoryQuery:
    """Which memories a read concerns. ``None`` means no constraint. With ``shared``, a ``user_id``
    also admits the agent's memories that belong to no user (knowledge every user shares);
    ``shared_only`` (without a ``user_id``) admits just those. With ``as_of``, the store as it
    stood then: memories that occurred later are left out, and one superseded only later still
    counts as current."""

    agent_id: str
    kinds: tuple[MemoryKind, ...] | None = None
    user_id: str | None = None
    shared: bool = False
    shared_only: bool = False
    session_id: str | None = None
    subject: str | None = None
    category: str | None = None
    include_inactive: bool = False
    include_superseded: bool = False
    superseded_only: bool = False
    lifecycle: tuple[LifecycleState, ...] | None = None
    since: datetime | None = None
    until: datetime | None = None
    ids: tuple[str, ...] | None = None
    as_of: datetime | None = None
    where: MetaFilter | None = None  # conditions on the memory's metadata (nous.models.metadata)
    newest_first: bool = True
    limit: int = 100
    offset: int = 0

    def __post_init__(self) -> None:
        # Stored times are UTC: a naive bound is UTC too (it was compared to aware times, a
        # TypeError, and read as local time by PostgreSQL and by astimezone).
        self.since, self.until, self.as_of = (
            as_utc(t) if isinstance(t, datetime) else t for t in (self.since, self.until, self.as_of)
        )

    def narrows_beyond_kind(self) -> bool:
        """True when the query filters on more than agent, kind and activity."""
        scope = (self.user_id, self.session_id, self.subject, self.category, self.lifecycle, self.ids)
        return (
            self.superseded_only
            or self.shared_only
            or any(v is not None for v in (*scope, self.since, self.until, self.as_of, self.where))
        )


@dataclass(slots=True)
class ScoredId:
    """A memory id with a backend-specific relevance score (higher is better).

    Keyword hits also carry ``own``: the score of the memory's own text alone, without its
    keyword context (0.0 when only the context matched). Vector hits leave it None and carry
    ``main``: the cosine of the memory's main embedding alone (``score`` is the best of it and its
    chunk vectors'; they differ when a passage of a long memory matched better than its opening).
    """

    id: str
    score: float
    own: float | None = None
    main: float | None = None


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
        return cls(*(getattr(memory, f.name) for f in fields(cls)))


# The memories table's columns of the same names, in the same order.
CANDIDATE_COLUMNS = ", ".join(f.name for f in fields(CandidateInfo))


@dataclass(slots=True)
class StoreInfo:
    """Static facts about an open store."""

    backend: str
    location: str
    embedding_model: str | None = None
    embedding_dimensions: int | None = None
    extras: dict[str, str] = field(default_factory=dict)


class MemoryStore(ABC):
    """Reads of memories and what hangs off them: edges, history, embeddings, chunks."""

    @abstractmethod
    async def get_many(self, agent_id: str, ids: list[str]) -> dict[str, Memory]:
        """Memories by id (active or not) within an agent; unknown ids are absent."""

    @abstractmethod
    async def foreign_ids(self, agent_id: str, ids: list[str]) -> set[str]:
        """Those of ``ids`` that name another agent's memories (an import re-ids them, so a
        client-chosen id neither collides with nor reveals another agent's memory)."""

    @abstractmethod
    async def resolve_prefix(self, agent_id: str, prefix: str) -> list[str]:
        """Up to two ids starting with ``prefix``."""

    @abstractmethod
    async def resolve_history_prefix(self, agent_id: str, prefix: str) -> list[str]:
        """Up to two memory ids starting with ``prefix`` that have history rows (history outlives
        a hard-forgotten memory, so its id can still be looked up by prefix)."""

    @abstractmethod
    async def query(self, query: MemoryQuery) -> list[Memory]:
        """Memories matching the query, by ``occurred_at``."""

    @abstractmethod
    async def vector_search(
        self, query: MemoryQuery, embedding: np.ndarray, limit: int, *, chunks: bool = True
    ) -> list[ScoredId]:
        """Nearest memories by cosine similarity, each at most once: score = the best cosine of a
        memory's embedding and (with ``chunks``) its chunk vectors. Dedup compares whole memories
        (``chunks=False``): a short memory close to one passage of a long one is not its duplicate."""

    @abstractmethod
    async def keyword_search(
        self, query: MemoryQuery, terms: list[str], limit: int, *, own: bool = False
    ) -> list[ScoredId]:
        """Memories matching any of the terms, best first by ``score`` (backend rank over the own
        text and the keyword context weighted CONTEXT_WEIGHT). With ``own``, each hit's ``own`` is
        its rank on the own text alone (computed for the returned hits only; recall does not ask)."""

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
    async def all_edges(self, agent_id: str) -> list[Edge]:
        """Every edge of an agent."""

    @abstractmethod
    async def history(self, agent_id: str, memory_id: str) -> list[HistoryEntry]:
        """The audit trail of one memory, oldest first."""

    @abstractmethod
    async def embeddings_by_hash(self, hashes: list[str], model: str) -> dict[str, np.ndarray]:
        """Stored embeddings of the given content hashes, computed by ``model``."""

    @abstractmethod
    async def chunks_by_hash(self, hashes: list[str], model: str) -> dict[str, list[np.ndarray]]:
        """Stored chunk vectors (in order) of memories with the given content hashes, by ``model``;
        hashes of memories without chunks are absent."""

    @abstractmethod
    async def missing_embeddings(self, agent_id: str | None, limit: int) -> list[tuple[Memory, str]]:
        """Memories without an embedding and their content hashes."""

    @abstractmethod
    async def missing_chunks(self, agent_id: str, min_chars: int, limit: int) -> list[tuple[Memory, str]]:
        """Embedded memories whose content is longer than ``min_chars`` but that have no chunk
        vectors (stored before chunking, or with chunking off), and their content hashes."""

    @abstractmethod
    def iter_memories(self, agent_id: str, batch_size: int = 500) -> AsyncIterator[Memory]:
        """Every memory of an agent, active or not, oldest first."""

    @abstractmethod
    async def stats(self, agent_id: str) -> StoreStats:
        """Counts for one agent."""


class SessionStore(ABC):
    """Reads of sessions, their working memory and the agent's identity."""

    @abstractmethod
    async def session(self, agent_id: str, session_id: str) -> SessionState | None:
        """One session's state, if it exists."""

    @abstractmethod
    async def sessions(
        self,
        agent_id: str,
        *,
        ended: bool | None = None,
        idle_before: datetime | None = None,
        limit: int = 100,
    ) -> list[SessionState]:
        """Sessions by last activity, newest first; ``ended`` filters ended or live ones,
        ``idle_before`` those last active before that time."""

    @abstractmethod
    async def working_memory(self, agent_id: str, session_id: str) -> WorkingMemory | None:
        """One session's working memory, if any."""

    @abstractmethod
    async def identity(self, agent_id: str) -> list[IdentitySection]:
        """The agent's identity sections (any that were ever set)."""


class Outbox(ABC):
    """The event outbox (claims and reads) and language-model usage."""

    @abstractmethod
    async def claim_events(
        self, agent_id: str, worker_id: str, *, limit: int, lease_until: datetime, now: datetime
    ) -> list[Event]:
        """Atomically lease up to ``limit`` of the agent's due events (pending ones whose
        ``available_at`` has come, running ones whose lease ran out), oldest first; each claim
        counts as an attempt. Concurrent workers never get the same event."""

    @abstractmethod
    async def events(
        self,
        agent_id: str,
        *,
        status: EventStatus | None = None,
        event_id: str | None = None,
        limit: int = 100,
    ) -> list[Event]:
        """The agent's events, newest first; ``status`` and ``event_id`` filter."""

    @abstractmethod
    async def event_counts(self, agent_id: str | None) -> dict[EventStatus, int]:
        """How many of the agent's events (None: every agent's) are in each status."""

    @abstractmethod
    async def llm_usage(self, agent_id: str) -> list[LLMUsage]:
        """The agent's language-model calls and tokens per provider, model and purpose."""


class KeyStore(ABC):
    """Reads of API keys."""

    @abstractmethod
    async def api_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """A key and its secret's hash, if it exists (revoked or not)."""

    @abstractmethod
    async def api_keys(self) -> list[ApiKey]:
        """Every key, newest first."""


class IdempotencyStore(ABC):
    """Reads and upkeep of kept idempotency keys."""

    @abstractmethod
    async def idempotency_key(self, agent_id: str, user_id: str, key: str) -> IdempotentRequest | None:
        """A caller's kept key, if any."""

    @abstractmethod
    async def prune_idempotency_keys(self, agent_id: str, before: datetime) -> int:
        """Delete the agent's keys claimed before ``before``; how many."""


class ThreadStore(ABC):
    """Reads of topic threads. Members are listed only while their memory is active (a forgotten
    memory leaves its thread's member list at once; ``stale_threads`` finds the threads whose
    stored state still counts it, which ``nous.memory.threads.repair_threads`` derives again).
    A purged memory's membership row goes with it; a soft-forgotten one's stays, for a restore."""

    @abstractmethod
    async def threads(
        self,
        agent_id: str,
        *,
        user_id: str | None = None,
        any_user: bool = False,
        ids: list[str] | None = None,
        limit: int = 100,
        live: bool = True,
    ) -> list[ThreadRecord]:
        """Threads by last activity (their newest member), newest first: those of ``user_id``
        (None: the agent's shared threads), of every user with ``any_user``, or with ``ids``.
        ``size`` is the count of active members, or with ``live`` False the count that ``vector_sum``
        sums (the threading state; forgotten members included)."""

    @abstractmethod
    async def thread_members(self, agent_id: str, thread_id: str) -> list[tuple[str, datetime]]:
        """(memory id, occurred at) of a thread's active members, in time order."""

    @abstractmethod
    async def thread_of(self, agent_id: str, memory_ids: list[str]) -> dict[str, str]:
        """The thread of each of ``memory_ids`` that has one."""

    @abstractmethod
    async def unthreaded(self, agent_id: str, kinds: tuple[MemoryKind, ...], limit: int) -> list[str]:
        """Ids of active, embedded memories of ``kinds`` in no thread yet, oldest first."""

    @abstractmethod
    async def stale_threads(
        self, agent_id: str, *, ids: list[str] | None = None, limit: int = 100
    ) -> list[str]:
        """Ids of threads (among ``ids`` if given) whose stored state counts another number of
        members than are active: a member was forgotten, purged or restored since it was written."""


class Store(MemoryStore, SessionStore, Outbox, KeyStore, IdempotencyStore, ThreadStore):
    """A storage backend: the ports of every aggregate, one transactional write path (``apply``),
    and its lifecycle."""

    info: StoreInfo

    @abstractmethod
    async def open(self, *, embedding_model: str, embedding_dimensions: int) -> None:
        """Connect, apply pending migrations and check the embedding space matches."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections and threads."""

    async def warm_up(self) -> None:
        """Make the first search fast: load what a backend keeps in process (the SQLite vector
        index, from its file or the rows). Searching before it is correct, only slower."""

    @abstractmethod
    def exclusive(self, key: str) -> AbstractAsyncContextManager[None]:
        """Run the block as the only holder of ``key`` among every process using this store (see
        ``storage/locks.py``): what it reads is not changed by another holder before it writes."""

    @abstractmethod
    async def apply(self, ops: list[WriteOp]) -> list[bool]:
        """Apply the operations in one transaction; per op, whether it changed anything."""

    @asynccontextmanager
    async def bulk_load(self) -> AsyncIterator[None]:
        """A scope for writing many memories (an import, a benchmark's ingest): a backend may put
        off index upkeep it does faster once at the end. Every write and read in it stays correct,
        and the store is as usual when the scope ends."""
        yield

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
