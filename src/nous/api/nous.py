"""The async Python API: one object per agent over a store and an embedding provider."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from nous._text import validate_content
from nous._time import as_utc, shifted, utcnow
from nous.api.transfer import (
    export_lines,
    import_records,
    memory_ids,
    parse_records,
    read_lines,
    read_records,
)
from nous.brain import DEFAULT_GUARDRAILS, Brain, Guardrail
from nous.cognitive import CognitiveLayer, Context, SessionEnd, TurnContext, TurnResult, check_frame
from nous.config import Settings
from nous.embeddings import Embedder, EmbeddingProvider, create_provider
from nous.errors import ConflictError, InvalidInputError, NotFoundError, NousError
from nous.events import EventWorker, PipelineContext, WorkerReport
from nous.heart import ActionCheck, ActionDecision, CensorMatch, Heart
from nous.ingest import Conversation, IngestReport, ingest_conversation, parse_conversation
from nous.llm import LLMProvider, create_llm_provider
from nous.llm.offline import OfflineProvider
from nous.memory import MemoryRepository
from nous.memory.dedup import DedupThresholds, SimilarityCheck
from nous.memory.parsing import enum_value
from nous.memory.repository import invalid_from_pydantic
from nous.memory.threading import WORDS_WEIGHT, ThreadItem, item_words
from nous.memory.threads import (
    MAX_THREADS,
    build_threads,
    change_member,
    thread_item,
    thread_member,
    thread_model,
    thread_scores,
)
from nous.memory.write_path import WritePath
from nous.models import (
    Calibration,
    Censor,
    CensorAction,
    Decision,
    Edge,
    EdgeRelation,
    Episode,
    ErasureReceipt,
    HistoryEntry,
    LifecycleState,
    MaintenanceReport,
    Memory,
    MemoryKind,
    RecallHit,
    StoreStats,
    WriteResult,
)
from nous.models.base import Provenance
from nous.models.brain import DecisionCategory, Reason, Stakes
from nous.models.events import Event, EventStatus
from nous.models.heart import EpisodeOutcome, FactCategory
from nous.models.llm import LLMUsage
from nous.models.metadata import parse_where
from nous.models.session import IdentitySection, SessionState
from nous.models.threads import Thread
from nous.retrieval import RecallQuery, Retriever
from nous.retrieval.query import validate_limit_and_window, validate_min_score
from nous.storage import Store, create_store
from nous.storage.base import EraseUser, PutEdge, RetryEvent


def parse_kinds(kinds: Sequence[str | MemoryKind] | str | MemoryKind | None) -> tuple[MemoryKind, ...] | None:
    """Memory kinds from names (a single name or a list)."""
    if kinds is None:
        return None
    if isinstance(kinds, str | MemoryKind):
        kinds = [kinds]
    parsed = tuple(enum_value(MemoryKind, k, field="kinds") for k in kinds)
    return tuple(k for k in parsed if k is not None) or None


log = logging.getLogger(__name__)
MAX_OFFSET = 1_000_000_000  # paging further than any store holds (a bigger int overflows the drivers)


class Nous:
    """Long-term memory for one agent.

    >>> async with Nous(database_url="sqlite:///demo.db") as nous:  # doctest: +SKIP
    ...     await nous.learn("The user prefers dark mode", category="preference")
    ...     hits = await nous.recall("what theme does the user like?")
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        database_url: str | None = None,
        agent_id: str | None = None,
        embedding_provider: EmbeddingProvider | None = None,
        llm_provider: LLMProvider | None = None,
    ) -> None:
        self.settings = settings or Settings()
        if database_url is not None:
            self.settings = self.settings.model_copy(update={"database_url": database_url})
        self.agent_id = agent_id or self.settings.agent_id
        self._provider = embedding_provider
        self._llm = llm_provider
        self._store: Store | None = None
        self._embedder: Embedder | None = None
        self._owner = True
        self._repo: MemoryRepository | None = None
        self._heart: Heart | None = None
        self._brain: Brain | None = None
        self._retriever: Retriever | None = None
        self._layer: CognitiveLayer | None = None
        self._worker_task: asyncio.Task[None] | None = None
        self._worker_stop: asyncio.Event | None = None

    # -- lifecycle ---------------------------------------------------------------
    async def open(self) -> Nous:
        """Open the store (applying migrations) and prepare the embedding provider."""
        if self._repo is not None:
            return self
        provider = self._provider or create_provider(self.settings)
        store = create_store(
            self.settings.resolved_database_url(),
            sqlite_readers=self.settings.sqlite_readers,
            lock_timeout_s=self.settings.lock_timeout_s,
            connect_timeout_s=self.settings.connect_timeout_s,
            postgres_pool_size=self.settings.postgres_pool_size,
            postgres_index_build_mb=self.settings.postgres_index_build_mb,
        )
        await store.open(embedding_model=provider.model_name, embedding_dimensions=provider.dimensions)
        self._attach(store, Embedder(provider))
        if self._llm is None:
            self._llm = create_llm_provider(self.settings)
        if self.settings.events_worker == "in-process":
            self._worker_stop = asyncio.Event()
            self._worker_task = asyncio.create_task(self.run_pipeline(self._worker_stop))
        return self

    def _attach(self, store: Store, embedder: Embedder) -> None:
        self._store, self._embedder = store, embedder
        self._repo = MemoryRepository(
            store, embedder, agent_id=self.agent_id, max_content_bytes=self.settings.max_content_bytes
        )
        self._heart = Heart(self._repo, self._write_path(self._repo))
        self._brain = Brain(self._repo, self._guardrails())
        self._retriever = Retriever(self._repo)
        self._layer = CognitiveLayer(
            self._heart,
            self._brain,
            self._retriever,
            recent_hours=self.settings.recent_hours,
        )

    def _guardrails(self) -> tuple[Guardrail, ...]:
        raw = self.settings.decision_guardrails
        if raw is None:
            return DEFAULT_GUARDRAILS
        try:
            return tuple(Guardrail.model_validate(g) for g in raw)
        except ValidationError as exc:
            raise InvalidInputError(
                f"NOUS_DECISION_GUARDRAILS: {invalid_from_pydantic(exc)}", field="decision_guardrails"
            ) from None

    def _write_path(self, repo: MemoryRepository) -> WritePath:
        s = self.settings
        try:
            thresholds = DedupThresholds(s.dedup_duplicate_threshold, s.dedup_connect_threshold)
        except ValueError as exc:
            raise InvalidInputError(str(exc), field="dedup_connect_threshold") from None
        kinds = parse_kinds([k.strip() for k in s.dedup_kinds.split(",") if k.strip()]) or ()
        return WritePath(repo, thresholds, kinds)

    async def close(self) -> None:
        """Stop the in-process event worker (after the event in hand), write pending recall
        reviews, then close the store (only if this object opened it)."""
        if self._worker_task is not None and self._worker_stop is not None:
            self._worker_stop.set()
            with contextlib.suppress(Exception):
                await self._worker_task
            self._worker_task = self._worker_stop = None
        if self._repo is not None:
            try:
                await self._repo.flush_reviews()
            except NousError as exc:  # bookkeeping: never turn a finished read into a failure
                log.warning("recall reviews not written on close: %s", exc)
        if self._llm is not None and self._owner:
            await self._llm.aclose()
        if self._store is not None and self._owner:
            await self._store.close()
        self._store = self._repo = None
        self._heart = self._brain = self._retriever = None

    async def __aenter__(self) -> Nous:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def for_agent(self, agent_id: str) -> Nous:
        """A view of another agent's memory sharing this store and model."""
        if self._store is None or self._embedder is None:
            raise NousError("open Nous before calling for_agent")
        view = Nous(self.settings, agent_id=agent_id)
        view._owner = False
        view._llm = self._llm
        view._attach(self._store, self._embedder)
        return view

    # -- organs ------------------------------------------------------------------
    def _need(self) -> MemoryRepository:
        if self._repo is None:
            raise NousError("Nous is not open: use `async with Nous(...)` or `await nous.open()`")
        return self._repo

    @property
    def repo(self) -> MemoryRepository:
        return self._need()

    @property
    def heart(self) -> Heart:
        self._need()
        assert self._heart is not None
        return self._heart

    @property
    def brain(self) -> Brain:
        self._need()
        assert self._brain is not None
        return self._brain

    @property
    def store(self) -> Store:
        return self._need().store

    @property
    def embedder(self) -> Embedder:
        return self._need().embedder

    async def add_many(
        self, memories: Sequence[Memory], *, edges: Sequence[Edge] = (), actor: str = "api"
    ) -> None:
        """Store many ready-made memories (and edges between them) in one transaction, embedded in
        one batch. Each memory must belong to this agent."""
        repo = self._need()
        await repo.create_many(memories, actor=actor, extra_ops=[PutEdge(e) for e in edges])

    # -- Heart -------------------------------------------------------------------
    async def _encoding(
        self, session_id: str | None, frame: str | None, censors: list[str] | None
    ) -> tuple[str | None, list[str] | None]:
        """Frame-tagged encoding: a memory written in a live session carries the session's frame
        and active censors unless given; an unknown frame is an InvalidInputError."""
        if session_id and (frame is None or censors is None):
            state = await self.heart.sessions.find(session_id)
            if state is not None and not state.ended:
                frame = state.frame if frame is None else frame
                censors = (state.active_censors or None) if censors is None else censors
        check_frame(frame)
        return frame, censors

    async def learn(
        self,
        content: str,
        *,
        subject: str | None = None,
        category: str | FactCategory | None = None,
        source: str | None = None,
        confidence: float = 1.0,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        occurred_at: datetime | None = None,
        frame: str | None = None,
        censors: list[str] | None = None,
        provenance: Provenance | None = None,
        supersedes: str | None = None,
        dedup: bool = True,
        actor: str = "api",
    ) -> WriteResult:
        """Store a fact through the write path (duplicate, update and contradiction checks).
        ``supersedes`` names a fact this one replaces; ``dedup=False`` stores it unchecked. With
        ``session_id`` of a live session the fact carries that session's frame and active censors."""
        frame, censors = await self._encoding(session_id, frame, censors)
        return await self.heart.facts.learn(
            content,
            subject=subject,
            category=category,
            source=source,
            confidence=confidence,
            tags=tags,
            metadata=metadata,
            user_id=user_id,
            session_id=session_id,
            occurred_at=occurred_at,
            frame=frame,
            censors=censors,
            provenance=provenance,
            supersedes=supersedes,
            dedup=dedup,
            actor=actor,
        )

    async def start_episode(
        self,
        title: str,
        *,
        trigger: str | None = None,
        frame: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        started_at: datetime | None = None,
        participants: list[str] | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        censors: list[str] | None = None,
        provenance: Provenance | None = None,
        opening: str | None = None,
        actor: str = "api",
    ) -> Episode:
        """Open an episode (what happened: a conversation, a task); close it with ``end_episode``."""
        frame, censors = await self._encoding(session_id, frame, censors)
        return await self.heart.episodes.start(
            title,
            trigger=trigger,
            frame=frame,
            session_id=session_id,
            user_id=user_id,
            started_at=started_at,
            participants=participants,
            tags=tags,
            metadata=metadata,
            censors=censors,
            provenance=provenance,
            opening=opening,
            actor=actor,
        )

    async def end_episode(
        self,
        episode_id: str,
        *,
        summary: str | None = None,
        outcome: str | EpisodeOutcome = EpisodeOutcome.SUCCESS,
        lessons: list[str] | None = None,
        structured_summary: dict[str, Any] | None = None,
        ended_at: datetime | None = None,
        actor: str = "api",
    ) -> Episode:
        """Close an episode with its summary, outcome and lessons."""
        return await self.heart.episodes.end(
            episode_id,
            summary=summary,
            outcome=outcome,
            lessons=lessons,
            structured_summary=structured_summary,
            ended_at=ended_at,
            actor=actor,
        )

    # -- the turn loop -------------------------------------------------------------
    @property
    def cognitive(self) -> CognitiveLayer:
        self._need()
        assert self._layer is not None
        return self._layer

    async def pre_turn(
        self,
        session_id: str,
        user_text: str,
        *,
        user_id: str | None = None,
        frame: str | None = None,
        budget: int | None = None,
        at: datetime | None = None,
        actor: str = "api",
    ) -> TurnContext:
        """Before the agent answers: choose the frame, record the message, open the session's
        episode if it has earned one, and assemble the context within the frame's token budget
        (``budget`` overrides the total). A new ``session_id`` starts a session."""
        validate_content(user_text, field="user_text", max_bytes=self.settings.max_content_bytes)
        return await self.cognitive.pre_turn(
            session_id, user_text, user_id=user_id, frame=frame, budget=budget, at=at, actor=actor
        )

    async def preview_turn(
        self,
        user_text: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        frame: str | None = None,
        budget: int | None = None,
        at: datetime | None = None,
        as_of: datetime | None = None,
    ) -> Context:
        """The context ``pre_turn`` would build for ``user_text``, writing nothing (no session,
        turn, episode or recall review): for inspecting what the agent would see. With
        ``session_id`` of an existing session, its topic, working memory and last turns count;
        ``at`` is when the message is sent; ``as_of`` shows the store as it stood then."""
        validate_content(user_text, field="user_text", max_bytes=self.settings.max_content_bytes)
        return await self.cognitive.preview(
            user_text,
            session_id=session_id,
            user_id=user_id,
            frame=frame,
            budget=budget,
            at=at,
            as_of=as_of,
        )

    async def post_turn(
        self, session_id: str, result: TurnResult | str, *, at: datetime | None = None, actor: str = "api"
    ) -> SessionState:
        """After the agent answered: count the turn, store the exchange in the session's episode
        and link the decisions and facts written during it (``TurnResult``)."""
        return await self.cognitive.post_turn(session_id, result, at=at, actor=actor)

    async def end_session(
        self,
        session_id: str,
        *,
        reflection: str | None = None,
        at: datetime | None = None,
        actor: str = "api",
    ) -> SessionEnd:
        """End a session: close its episode (discarded if the session stayed trivial), learn each
        reflection line as a lesson, and mark the session ended for the event pipeline."""
        return await self.cognitive.end_session(session_id, reflection=reflection, at=at, actor=actor)

    async def session(self, session_id: str) -> SessionState:
        """A session's state (NotFoundError if it never had a turn)."""
        return await self.heart.sessions.get(session_id)

    async def sessions(self, *, ended: bool | None = None, limit: int = 100) -> list[SessionState]:
        """Sessions by last activity, newest first."""
        validate_limit_and_window(limit, None, None)
        return await self.heart.sessions.recent(ended=ended, limit=limit)

    async def identity(self) -> list[IdentitySection]:
        """The agent's identity sections that were set."""
        return await self.cognitive.identity.sections()

    async def set_identity(self, section: str, content: str) -> IdentitySection:
        """Replace one identity section (character, values, protocols, preferences, boundaries);
        the old text stays in its history."""
        return await self.cognitive.identity.set(section, content)

    async def add_procedure(
        self,
        name: str,
        description: str,
        *,
        domain: str | None = None,
        goals: list[str] | None = None,
        core_patterns: list[str] | None = None,
        core_tools: list[str] | None = None,
        core_concepts: list[str] | None = None,
        notes: str | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        frame: str | None = None,
        censors: list[str] | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        occurred_at: datetime | None = None,
        dedup: bool = True,
        actor: str = "api",
    ) -> WriteResult:
        """Store a procedure (how to do something); with ``session_id`` it carries the live
        session's frame and censors."""
        frame, censors = await self._encoding(session_id, frame, censors)
        return await self.heart.procedures.add(
            name,
            description,
            domain=domain,
            goals=goals,
            core_patterns=core_patterns,
            core_tools=core_tools,
            core_concepts=core_concepts,
            notes=notes,
            tags=tags,
            metadata=metadata,
            frame=frame,
            censors=censors,
            session_id=session_id,
            user_id=user_id,
            occurred_at=occurred_at,
            dedup=dedup,
            actor=actor,
        )

    async def add_censor(
        self,
        trigger_pattern: str,
        *,
        action: str | CensorAction = CensorAction.WARN,
        reason: str | None = None,
        domain: str | None = None,
        escalation_threshold: int = 3,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        occurred_at: datetime | None = None,
        dedup: bool = True,
        actor: str = "api",
    ) -> WriteResult:
        """Store a censor: a case-insensitive trigger regex and what happens when it fires
        (``warn``, ``block``, ``absolute``), with the reason shown to the agent."""
        return await self.heart.censors.add(
            trigger_pattern,
            action=action,
            reason=reason,
            domain=domain,
            escalation_threshold=escalation_threshold,
            tags=tags,
            metadata=metadata,
            user_id=user_id,
            occurred_at=occurred_at,
            dedup=dedup,
            actor=actor,
        )

    async def check_censors(
        self, text: str, *, record: bool = True, user_id: str | None = None
    ) -> list[CensorMatch]:
        return await self.heart.censors.check(text, record=record, user_id=user_id)

    async def check_action(
        self,
        action_text: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        override: bool = False,
        record: bool = True,
        actor: str = "api",
    ) -> ActionCheck:
        """Judge an action before taking it: ``decision`` is ``allow``, ``warn`` or ``block``, with
        the censors that fired (by pattern or by meaning) and their reasons. ``override=True``
        turns a ``block`` into a ``warn``, except for ``absolute`` censors, which always block.
        Each firing is counted (unless ``record`` is False) and a ``warn`` censor escalates to
        ``block`` after ``escalation_threshold`` firings. With ``session_id``, a warning is also
        placed in that session's working memory, so the next context shows it.

        The action is for ``user_id``, or else for the user of the session ``session_id``: the
        censors made for that user and the agent's shared ones judge it (for no user, the shared
        ones only); another user's censors never fire on it. A ``user_id`` other than the
        session's user is an InvalidInputError."""
        user_id = await self._acting_user(session_id, user_id)
        verdict = await self.heart.censors.check_action(
            action_text,
            session_id=session_id,
            user_id=user_id,
            override=override,
            record=record,
            actor=actor,
        )
        if session_id is not None and verdict.decision == ActionDecision.WARN:
            for reason in verdict.reasons or ["an action matched a warning censor"]:
                await self.heart.working_memory.focus(
                    session_id,
                    f"{reason} (action: {action_text[:120]})",
                    relevance=1.0,
                    kind="censor_warning",
                )
        return verdict

    async def _acting_user(self, session_id: str | None, user_id: str | None) -> str | None:
        """The user an action is for: ``user_id``, else the user of the session (if any)."""
        user_id = user_id or None
        if session_id is None:
            return user_id
        state = await self.heart.sessions.find(session_id)
        owner = state.user_id if state is not None else None
        if user_id is not None and owner and owner != user_id:
            raise InvalidInputError(f"session {session_id!r} is another user's", field="user_id")
        return user_id or owner or None

    async def censors(self, *, limit: int = 200, user_id: str | None = None) -> list[Censor]:
        """The censors in force, newest first: with ``user_id``, those that bind that user (its own
        and the agent's shared ones); without, every censor of the agent."""
        validate_limit_and_window(limit, None, None)
        return await self.heart.censors.active(limit=limit, user_id=user_id, every_user=not user_id)

    async def report_false_positive(self, censor_id: str, note: str | None = None) -> Censor:
        """Record that a censor fired when it should not have (counted and kept in its history)."""
        return await self.heart.censors.report_false_positive(censor_id, note)

    async def edit_censor(
        self,
        censor_id: str,
        *,
        trigger_pattern: str | None = None,
        action: str | CensorAction | None = None,
        reason: str | None = None,
        escalation_threshold: int | None = None,
        reset_activations: bool = False,
    ) -> Censor:
        """Change a censor's pattern, action (``warn``, ``block``, ``absolute``), reason or
        escalation threshold (audited). Its activation count is kept unless ``reset_activations``
        sets it back to 0."""
        return await self.heart.censors.edit(
            censor_id,
            trigger_pattern=trigger_pattern,
            action=action,
            reason=reason,
            escalation_threshold=escalation_threshold,
            reset_activations=reset_activations,
        )

    async def retire_censor(self, censor_id: str, reason: str | None = None) -> Censor:
        """Take a censor out of force: it never fires again; its history is kept."""
        return await self.heart.censors.retire(censor_id, reason)

    # -- Brain -------------------------------------------------------------------
    async def record_decision(
        self,
        description: str,
        *,
        context: str | None = None,
        confidence: float = 0.5,
        category: str | DecisionCategory | None = None,
        stakes: str | Stakes = Stakes.MEDIUM,
        reasons: Sequence[Reason | Mapping[str, Any]] | None = None,
        pattern: str | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        thoughts: list[str] | None = None,
        session_id: str | None = None,
        episode_id: str | None = None,
        user_id: str | None = None,
        frame: str | None = None,
        censors: list[str] | None = None,
        occurred_at: datetime | None = None,
        actor: str = "api",
    ) -> Decision:
        """Store a decision with its confidence and typed reasons (made at ``occurred_at``, default
        now; linked to ``episode_id`` when given). It carries a quality score and flags; a blocking
        guardrail raises ``GuardrailError`` and stores nothing. With ``session_id`` of a live
        session it carries that session's frame and censors."""
        frame, censors = await self._encoding(session_id, frame, censors)
        return await self.brain.decisions.record(
            description,
            context=context,
            confidence=confidence,
            category=category,
            stakes=stakes,
            reasons=reasons,
            pattern=pattern,
            tags=tags,
            metadata=metadata,
            thoughts=thoughts,
            session_id=session_id,
            episode_id=episode_id,
            user_id=user_id,
            frame=frame,
            censors=censors,
            occurred_at=occurred_at,
            actor=actor,
        )

    async def review_decision(self, decision_id: str, outcome: str, *, note: str | None = None) -> Decision:
        return await self.brain.decisions.review(decision_id, outcome, note=note)

    async def outcome_proposals(self, *, limit: int = 100) -> list[Decision]:
        """Pending decisions whose outcome the reviewer proposed from later conversations."""
        validate_limit_and_window(limit, None, None)
        return await self.brain.decisions.proposals(limit=limit)

    async def accept_proposal(self, decision_id: str, *, actor: str = "api") -> Decision:
        """Resolve a decision with its proposed outcome."""
        resolved = await self._need().resolve_id(decision_id)
        return await self.brain.decisions.accept_proposal(resolved, actor=actor)

    async def reject_proposal(self, decision_id: str, *, actor: str = "api") -> Decision:
        """Drop a decision's proposed outcome; it stays pending."""
        resolved = await self._need().resolve_id(decision_id)
        return await self.brain.decisions.reject_proposal(resolved, actor=actor)

    async def calibration(self) -> Calibration:
        return await self.brain.calibration()

    # -- any memory --------------------------------------------------------------
    async def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        kinds: Sequence[str | MemoryKind] | str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        include_inactive: bool = False,
        include_superseded: bool = False,
        frame: str | None = None,
        active_censors: Sequence[str] | None = None,
        now: datetime | None = None,
        as_of: datetime | None = None,
        reinforce: bool = True,
        preset: str | None = None,
        min_score: float | None = None,
        in_session: str | None = None,
        where: Mapping[str, Any] | None = None,
        cover: bool | None = None,
    ) -> list[RecallHit]:
        """Memories relevant to ``query``, best first, with the signals behind each score.

        Time expressions in the query ("yesterday", "last week", "in May 2023",
        "before the trip") are resolved against ``now`` and narrow the search; recap
        questions ("what did we talk about?") bring the latest episodes first. ``frame``
        and ``active_censors`` boost memories encoded in the same cognitive state. Recalled
        memories count as reviewed (their stability grows) unless ``reinforce`` is False.
        ``preset`` picks a named retrieval recipe: ``default``, ``dense-only``, ``keyword-only``
        or ``no-boosts`` (see ``nous.PRESETS``); an unknown name is an InvalidInputError, as is an
        unknown ``frame``. ``user_id`` scopes the search to that user's memories and the agent's
        memories that belong to no user. ``as_of`` recalls the store as it stood at that time:
        memories from after it are unseen, and a fact superseded after it is still current.

        Each hit's ``score`` is its estimated relevance, 0..1, comparable across queries and
        stores (calibrated on the development sets: of hits scored 0.3, about three in ten are
        relevant); hits below ``min_score`` are left out — by default NOUS_RECALL_MIN_SCORE, so a
        question nothing answers gets nothing. A preset other than ``default`` reports its own raw
        score (cosine, BM25 or rank fusion) and applies no minimum unless given one.

        ``in_session`` names the live session a tool's recall serves: its frame and active censors
        boost what was stored in the same state, as ``pre_turn``'s own recall does (unlike
        ``session_id``, it filters nothing).

        ``where`` keeps only memories whose metadata passes it, e.g. ``{"project": "x"}``,
        ``{"project": {"in": ["x", "y"]}}``, ``{"reviewed": {"exists": True}}``,
        ``{"priority": {"gte": 2, "lt": 5}}`` (see ``nous.models.metadata``); the search runs
        within those memories, so a selective filter still fills ``limit``.

        ``cover`` asks for a covering set instead of the best few: the strong results in time
        order, cut into ``limit`` stretches of equal weight, the best of each — returned oldest
        first, each with a ``cover`` signal giving its place. By default (None) a question
        that asks for an order, a summary, a change over time or everything so far ("in what
        order did I ...", "summarise how ...", "what have we tried so far") is covered; False
        never covers.
        """
        repo = self._need()
        meta_filter = parse_where(where)
        assert self._retriever is not None
        check_frame(frame)
        if in_session is not None and (frame is None or active_censors is None):
            state = await self.heart.sessions.find(in_session)
            if state is not None and not state.ended:
                frame = frame if frame is not None else state.frame
                active_censors = active_censors if active_censors is not None else state.active_censors
        hits = await self._retriever.recall(
            RecallQuery(
                text=query,
                limit=limit,
                kinds=parse_kinds(kinds),
                user_id=user_id,
                session_id=session_id,
                since=since,
                until=until,
                include_inactive=include_inactive,
                include_superseded=include_superseded,
                frame=frame,
                active_censors=tuple(active_censors) if active_censors else None,
                now=now,
                as_of=as_of,
                preset=preset,
                min_score=self._min_score(min_score, preset),
                where=meta_filter,
                cover=cover,
            )
        )
        if reinforce:
            repo.note_recalled([h.id for h in hits])
        return hits

    def _min_score(self, given: float | None, preset: str | None) -> float:
        if given is not None:
            return validate_min_score(given)
        return self.settings.recall_min_score if preset in (None, "default") else 0.0

    async def similar(
        self, text: str, *, kinds: Sequence[str | MemoryKind] | str | None = None, limit: int = 10
    ) -> list[tuple[Memory, float]]:
        """Memories by pure cosine similarity to ``text`` (no fusion or boosts), for dedup checks."""
        self._need()
        assert self._retriever is not None
        validate_content(text, field="text", max_bytes=self.settings.max_content_bytes)
        validate_limit_and_window(limit, None, None)
        hits = await self._retriever.similar(text, kinds=parse_kinds(kinds), limit=limit)
        found = await self.store.get_many(self.agent_id, [h.id for h in hits])
        return [(found[h.id], h.score) for h in hits if h.id in found]

    async def get(self, memory_id: str) -> Memory:
        """One memory by id (or a unique prefix of 6+ characters)."""
        return await self._need().get(memory_id)

    async def memories(
        self,
        kinds: Sequence[str | MemoryKind] | str | None = None,
        *,
        limit: int = 50,
        offset: int = 0,
        include_inactive: bool = False,
        include_superseded: bool = False,
        superseded_only: bool = False,
        user_id: str | None = None,
        subject: str | None = None,
        category: str | None = None,
        session_id: str | None = None,
        lifecycle: Sequence[str | LifecycleState] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> list[Memory]:
        """Memories, most recent first; with ``user_id``, that user's and the agent's shared ones.

        The filters narrow the list: ``subject`` and ``category`` (exact), ``session_id``,
        ``lifecycle`` states, ``since`` ≤ occurred_at < ``until``, ``where`` on the metadata (as
        in ``recall``); ``superseded_only`` lists just the memories a newer one replaced."""
        meta_filter = parse_where(where)
        for name, value, low, high in (("limit", limit, 1, 100_000), ("offset", offset, 0, MAX_OFFSET)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InvalidInputError(f"{name} must be an integer from {low} to {high}", field=name)
        states = None
        if lifecycle:
            parsed = (enum_value(LifecycleState, state, field="lifecycle") for state in lifecycle)
            states = tuple(state for state in parsed if state is not None)
        if since is not None and until is not None and as_utc(since) >= as_utc(until):
            raise InvalidInputError("since must be before until", field="since")
        return await self._need().query(
            kinds=parse_kinds(kinds),
            limit=limit,
            offset=offset,
            include_inactive=include_inactive,
            include_superseded=include_superseded,
            superseded_only=superseded_only,
            user_id=user_id,
            shared=user_id is not None,
            subject=subject or None,
            category=category or None,
            session_id=session_id or None,
            lifecycle=states,
            since=since,
            until=until,
            where=meta_filter,
        )

    async def edges(self, memory_id: str) -> list[Edge]:
        """The typed links touching a memory (it is the source or the target), newest first."""
        return await self._need().edges(memory_id)

    async def supersede(self, memory_id: str, *, by: str) -> Memory:
        """Mark a memory as replaced by another one (``by``): recall then prefers the newer one,
        and the older one keeps its history (audited, with a ``supersedes`` edge)."""
        return await self._need().supersede(memory_id, by)

    async def update(self, memory_id: str, **changes: Any) -> Memory:
        """Change fields of a memory (audited). ``metadata=`` replaces the whole object."""
        if not changes:
            raise InvalidInputError("nothing to update")
        if "content" not in changes:
            return await self._need().update(memory_id, changes)
        before = await self._threaded(memory_id)  # its thread's words and meaning change with it
        memory = await self._need().update(memory_id, changes)
        await self._rethread(before, memory, joined=True)
        return memory

    async def forget(self, memory_id: str, *, hard: bool = False, actor: str = "api") -> Memory:
        """Soft-delete a memory, or purge it for good with ``hard=True`` (both audited, by ``actor``).
        Its topic thread no longer holds it: its words leave the thread's label and its meaning
        the thread's centroid, and a thread with no member left is dropped."""
        before = await self._threaded(memory_id)
        memory = await self._need().forget(memory_id, hard=hard, actor=actor)
        await self._rethread(before, memory, joined=False)
        return memory

    async def _threaded(self, memory_id: str) -> tuple[str, ThreadItem | None] | None:
        """A memory's thread and, if it counts there now (active, embedded), how threading sees it."""
        memory = await self._need().get(memory_id, include_inactive=True)
        thread = (await self.store.thread_of(self.agent_id, [memory.id])).get(memory.id)
        if thread is None:
            return None
        vector = (await self.store.vectors(self.agent_id, [memory.id])).get(memory.id)
        return thread, (thread_item(memory, vector) if memory.active and vector is not None else None)

    async def _rethread(
        self, before: tuple[str, ThreadItem | None] | None, memory: Memory, *, joined: bool
    ) -> None:
        """Move a thread's state by one member: ``before`` leaves it (if it counted), ``memory``
        joins it (if ``joined`` and it is active and embedded)."""
        if before is None:
            return
        thread, removed = before
        added = None
        if joined and memory.active:
            vector = (await self.store.vectors(self.agent_id, [memory.id])).get(memory.id)
            added = thread_item(memory, vector) if vector is not None else None
        async with self.store.exclusive(f"threads:{self.agent_id}"):
            await change_member(self.store, self.agent_id, thread, removed=removed, added=added)

    async def forget_user(self, user_id: str, *, actor: str = "api") -> ErasureReceipt:
        """Erase one of the agent's users for good, in one transaction: every memory of theirs
        (all kinds, turns included) with its links and audit rows, their sessions and working
        memory, and the events and ingest jobs about them. The agent's shared memories stay. The
        receipt (counts by table, no content) is kept in the agent's audit: ``history("user:ID")``."""
        if not isinstance(user_id, str) or not user_id.strip() or len(user_id) > 200:
            raise InvalidInputError(
                "user_id must be a non-empty string of at most 200 characters", field="user_id"
            )
        receipt = ErasureReceipt(agent_id=self.agent_id, user_id=user_id)
        await self.store.apply([EraseUser(receipt, actor=actor)])
        return receipt

    async def restore(self, memory_id: str) -> Memory:
        """Undo a soft delete; the memory's topic thread counts it again."""
        before = await self._threaded(memory_id)
        memory = await self._need().restore(memory_id)
        await self._rethread(before, memory, joined=True)
        return memory

    async def history(self, memory_id: str) -> list[HistoryEntry]:
        """Every recorded change to a memory, oldest first."""
        return await self._need().history(memory_id)

    async def link(
        self,
        source_id: str,
        target_id: str,
        relation: str | EdgeRelation = "relates_to",
        *,
        weight: float = 1.0,
    ) -> bool:
        """Add a typed edge between two memories; False if it already existed."""
        rel = enum_value(EdgeRelation, relation, field="relation")
        assert rel is not None
        repo = self._need()
        return await repo.link(
            await repo.resolve_id(source_id), await repo.resolve_id(target_id), rel, weight=weight
        )

    async def stats(self) -> StoreStats:
        return await self.store.stats(self.agent_id)

    async def backfill_embeddings(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed memories stored while the embedding provider was unavailable."""
        return await self._need().backfill_embeddings(progress=progress)

    async def maintain(
        self,
        *,
        now: datetime | None = None,
        progress: Callable[[int], None] | None = None,
        rebuild_threads: bool = False,
    ) -> MaintenanceReport:
        """The upkeep pass: embed pending memories, re-embed censors and decisions stored with an
        older presentation, write recall reviews, run lifecycle decay, prune the server's expired
        Idempotency-Keys (NOUS_IDEMPOTENCY_RETENTION_HOURS), thread the memories not in a topic
        thread yet (``rebuild_threads``: every thread built again from none), and mark the users'
        standing instructions among turns stored before they were marked on arrival."""
        repo = self._need()
        embedded = await repo.backfill_embeddings(progress=progress)
        instructions = await repo.mark_instructions()
        threaded = await self.build_threads(rebuild=rebuild_threads)
        refreshed = await repo.refresh_presentation()
        reviewed = await repo.flush_reviews()
        moved = await repo.decay(now=now)
        at, kept = (
            as_utc(now) if now is not None else utcnow(),
            timedelta(hours=self.settings.idempotency_retention_hours),
        )
        # a key kept since before year 1 cannot be: at such a ``now`` nothing has expired yet
        cutoff = at - kept if at - datetime.min.replace(tzinfo=at.tzinfo) > kept else None
        pruned = 0 if cutoff is None else await self.store.prune_idempotency_keys(self.agent_id, cutoff)
        return MaintenanceReport(
            embedded=embedded,
            refreshed=refreshed,
            reviewed=reviewed,
            lifecycle_changes=moved,
            idempotency_keys_pruned=pruned,
            threaded=threaded,
            instructions_marked=instructions,
        )

    # -- topic threads -------------------------------------------------------------
    async def build_threads(self, *, rebuild: bool = False) -> int:
        """Put every memory not in a topic thread yet into one now (the event pipeline does it as
        events are processed); ``rebuild`` drops every thread first. How many were threaded."""
        async with self.store.exclusive(f"threads:{self.agent_id}"):
            return await build_threads(self.store, self.agent_id, rebuild=rebuild)

    async def threads(
        self, *, user_id: str | None = None, limit: int = 20, query: str | None = None
    ) -> list[Thread]:
        """Topic threads: those of ``user_id`` and the agent's shared ones (no user: every thread
        of the agent), newest activity first, or with ``query`` the best matching first (each
        with its ``score``)."""
        validate_limit_and_window(limit, None, None)
        wanted = MAX_THREADS if query else limit
        if user_id is None:
            records = await self.store.threads(self.agent_id, any_user=True, limit=wanted)
        else:
            records = [
                *await self.store.threads(self.agent_id, user_id=user_id, limit=wanted),
                *await self.store.threads(self.agent_id, user_id=None, limit=wanted),
            ]
        records = [r for r in records if r.size > 0]
        if query is None or not query.strip():
            records.sort(key=lambda r: (r.last_at or r.created_at, r.id), reverse=True)
            return [thread_model(r) for r in records[:limit]]
        vector = await self.embedder.embed_one(query)
        scores = thread_scores(records, vector, item_words(query), words_weight=WORDS_WEIGHT)
        ranked = sorted(zip(scores, records, strict=True), key=lambda sr: (-sr[0], sr[1].id))[:limit]
        return [thread_model(r, score=round(s, 4)) for s, r in ranked]

    async def thread(self, thread_id: str) -> Thread:
        """One topic thread with its members in time order (forgotten memories left out)."""
        found = await self.store.threads(self.agent_id, ids=[thread_id.strip()], limit=1)
        if not found:
            raise NotFoundError(f"no thread with id {thread_id!r}")
        order = await self.store.thread_members(self.agent_id, found[0].id)
        memories = await self.store.get_many(self.agent_id, [mid for mid, _ in order])
        members = [thread_member(memories[mid]) for mid, _ in order if mid in memories]
        return thread_model(found[0], members=members)

    # -- events ------------------------------------------------------------------
    def event_worker(self, *, worker_id: str | None = None, batch: int = 10) -> EventWorker:
        """A worker for this agent's outbox events, with the configured lease and retries."""
        s = self.settings
        return EventWorker(
            self.pipeline_context(),
            worker_id=worker_id,
            lease=timedelta(seconds=s.event_lease_seconds),
            max_attempts=s.event_max_attempts,
            retry_base=timedelta(seconds=s.event_retry_seconds),
            batch=batch,
        )

    async def run_pipeline(self, stop: asyncio.Event, *, worker: EventWorker | None = None) -> None:
        """Run outbox events and end idle sessions until ``stop`` is set (the in-process worker
        and `nous worker`)."""
        last_sweep = 0.0
        timeout = self.settings.session_timeout_minutes * 60

        async def tick() -> None:
            nonlocal last_sweep
            now = time.monotonic()
            if timeout and now - last_sweep >= min(60.0, timeout / 2):
                last_sweep = now
                await self.end_idle_sessions()

        worker = worker or self.event_worker()
        await worker.run(stop, poll_seconds=self.settings.event_poll_seconds, tick=tick)

    async def end_idle_sessions(self, *, now: datetime | None = None) -> list[SessionEnd]:
        """End every live session idle for NOUS_SESSION_TIMEOUT_MINUTES, as ``end_session`` would
        (so each is summarised by the pipeline). Safe to run from several processes: a session
        is ended once."""
        minutes = self.settings.session_timeout_minutes
        if not minutes:
            return []
        cutoff = shifted(as_utc(now) if now is not None else utcnow(), -timedelta(minutes=minutes))
        ended: list[SessionEnd] = []
        for state in await self.store.sessions(self.agent_id, ended=False, idle_before=cutoff, limit=1000):
            done = await self.cognitive.end_session(
                state.session_id, at=state.last_active_at, actor="timeout"
            )
            if done.ended_now:
                ended.append(done)
        return ended

    def pipeline_context(self) -> PipelineContext:
        """What event handlers work with: this agent's repository, write path and language model."""
        repo = self._need()
        return PipelineContext(repo, self.heart.write_path, self._llm or OfflineProvider())

    async def llm_usage(self) -> list[LLMUsage]:
        """Language-model calls and tokens so far, per provider, model and purpose."""
        return await self.store.llm_usage(self.agent_id)

    async def process_events(self, *, max_events: int | None = None) -> WorkerReport:
        """Run the due outbox events now, until none is left (or ``max_events`` were handled)."""
        return await self.event_worker().drain(max_events=max_events)

    async def events(self, *, status: str | EventStatus | None = None, limit: int = 100) -> list[Event]:
        """The agent's outbox events, newest first."""
        parsed = enum_value(EventStatus, status, field="status")
        validate_limit_and_window(limit, None, None)
        return await self.store.events(self.agent_id, status=parsed, limit=limit)

    async def event_counts(self) -> dict[EventStatus, int]:
        """How many of the agent's events are pending, running, done and dead."""
        return await self.store.event_counts(self.agent_id)

    async def retry_event(self, event_id: str) -> Event:
        """Revive a dead event: pending again, due now, its attempts reset."""
        if not isinstance(event_id, str) or not event_id.strip():
            raise InvalidInputError("event_id must be a non-empty string", field="event_id")
        event_id = event_id.strip()
        (revived,) = await self.store.apply([RetryEvent(self.agent_id, event_id, utcnow())])
        (event,) = await self.store.events(self.agent_id, event_id=event_id, limit=1)
        if not revived and event.status in (EventStatus.DONE, EventStatus.RUNNING):
            raise ConflictError(
                f"event {event_id} is {event.status.value}: only a dead or pending one is retried"
            )
        return event

    async def check_similar(
        self,
        content: str,
        kind: str | MemoryKind = MemoryKind.FACT,
        *,
        user_id: str | None = None,
        subject: str | None = None,
    ) -> SimilarityCheck:
        """What storing ``content`` as ``kind`` would find: close memories and a recommendation
        (``duplicate_found`` / ``similar_found`` / ``unique``). Nothing is written."""
        self._need()
        text = validate_content(content, field="content", max_bytes=self.settings.max_content_bytes)
        parsed = enum_value(MemoryKind, kind, field="kind")
        assert parsed is not None
        return await self.heart.write_path.check_similar(text, parsed, user_id=user_id, subject=subject)

    async def recall_recent(
        self,
        *,
        limit: int = 10,
        kinds: Sequence[str | MemoryKind] | str | None = ("episode",),
        hours: float | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
    ) -> list[Memory]:
        """The most recent memories by when they happened, whatever their topic (closed episodes
        included): the last ``hours`` (default NOUS_RECENT_HOURS, 48), or since ``since``; with
        ``user_id``, that user's and the agent's shared ones. Episodes still running in other
        sessions are left out: they are those conversations' own business until they end."""
        if hours is not None:
            if isinstance(hours, bool) or not isinstance(hours, int | float) or not 0 < hours <= 24 * 3650:
                raise InvalidInputError("hours must be a positive number of hours", field="hours")
            if since is not None:
                raise InvalidInputError("give hours or since, not both", field="hours")
        if since is None:
            reference = as_utc(until) if isinstance(until, datetime) else utcnow()
            span = timedelta(hours=hours if hours is not None else self.settings.recent_hours)
            earliest = datetime.min.replace(tzinfo=UTC)  # a span reaching before year 1 starts there
            since = reference - span if reference - earliest > span else earliest
        validate_limit_and_window(limit, since, until)
        found = await self._need().query(
            kinds=parse_kinds(kinds),
            limit=limit + 20,
            since=since,
            until=until,
            session_id=session_id,
            user_id=user_id,
            shared=user_id is not None,
        )
        return [m for m in found if not (isinstance(m, Episode) and m.running_elsewhere(session_id))][:limit]

    # -- conversations -------------------------------------------------------------
    async def ingest(
        self,
        source: Path | str | Conversation,
        *,
        fmt: str = "auto",
        user_id: str | None = None,
        progress: Callable[[int], None] | None = None,
        on_parsed: Callable[[Conversation], None] | None = None,
        actor: str = "api",
    ) -> IngestReport:
        """Store a multi-session conversation (a file path, JSON text or parsed ``Conversation``):
        one episode per session, one retrievable turn per message. Bad files store nothing."""
        if isinstance(source, Conversation):
            conversation = source
        else:
            text = source
            if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("{")):
                try:
                    text = Path(source).read_bytes().decode("utf-8", errors="strict")
                except OSError as exc:
                    raise InvalidInputError(f"cannot read {source}: {exc.strerror}") from None
                except UnicodeDecodeError as exc:
                    raise InvalidInputError(f"{source} is not valid UTF-8: {exc}") from None
                except ValueError as exc:  # a path with a NUL character
                    raise InvalidInputError(f"cannot read {source!r}: {exc}") from None
            conversation = parse_conversation(str(text), fmt=fmt)
        if on_parsed:
            on_parsed(conversation)
        return await ingest_conversation(
            self._need(),
            conversation,
            sessions=self.heart.sessions,
            user_id=user_id,
            progress=progress,
            actor=actor,
        )

    # -- export / import ----------------------------------------------------------
    async def export_lines(self, vectors: bool = False) -> AsyncIterator[str]:
        """This agent's memories and edges as JSON Lines; ``vectors``: with each memory's stored
        embedding, so that ``import_jsonl(..., vectors=True)`` need not embed again."""
        async for line in export_lines(self._need(), with_vectors=vectors):
            yield line

    async def export_jsonl(self, path: Path | str, vectors: bool = False) -> int:
        """Write this agent's memories and edges to a JSONL file (``vectors``: as in
        ``export_lines``); returns lines written."""
        count = 0
        with Path(path).open("w", encoding="utf-8") as out:
            async for line in self.export_lines(vectors):
                out.write(line + "\n")
                count += 1
        return count

    async def import_jsonl(
        self,
        source: Path | str | IO[str],
        progress: Callable[[int], None] | None = None,
        on_parsed: Callable[[int], None] | None = None,
        vectors: bool = False,
        actor: str = "api",
    ) -> int:
        """Import an export file (validated whole first); returns how many memories were new.

        What the store already has (a memory by its id, an edge) is left as it is, so importing a
        file again changes nothing: ``on_parsed`` is told how many memories the file holds, and
        the difference from the answer is how many were already present.

        ``vectors``: reuse the embeddings an export made with ``vectors=True`` carries, where the
        file names this store's embedding model and the text is unchanged, instead of embedding
        again. Only for files you trust: a stored vector is reused by every agent for its text."""
        if isinstance(source, str | Path):
            try:
                with Path(source).open(encoding="utf-8") as stream:
                    lines = read_lines(stream)
            except OSError as exc:
                raise InvalidInputError(f"cannot read {source}: {exc.strerror}") from None
            except InvalidInputError:  # not UTF-8
                raise
            except ValueError as exc:  # a path with a NUL character
                raise InvalidInputError(f"cannot read {source!r}: {exc}") from None
        else:
            lines = read_lines(source)
        file = read_records(lines)
        repo = self._need()
        foreign = await repo.store.foreign_ids(self.agent_id, memory_ids(file.records))
        memories, edges = parse_records(file.records, self.agent_id, foreign)
        if on_parsed:
            on_parsed(len(memories))
        known = file.vectors_for(repo.embedder.model_name, repo.embedder.dimensions) if vectors else None
        return await import_records(repo, memories, edges, progress, vectors=known, actor=actor)
