"""MemoryRepository: validated, embedded, audited reads and writes for one agent.

Every write is one ``Store.apply`` call, i.e. one transaction, carrying the
memory rows, their edges and their audit rows together. If the embedding
provider fails, the memory is still stored (embedding pending) and
``backfill_embeddings`` embeds it later: a duplicate is better than a lost memory.
A long memory gets a vector per chunk of its text besides its main one (``Embedder.embed_memories``).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from pydantic import ValidationError

from nous._text import validate_content
from nous._time import as_utc, utcnow
from nous.embeddings import Embedded, Embedder
from nous.errors import (
    ConflictError,
    EmbeddingError,
    InvalidInputError,
    NotFoundError,
    NousError,
    StaleWriteError,
)
from nous.language.instructions import INSTRUCTION, message_category
from nous.memory import lifecycle
from nous.memory.cas import KeyedLocks, with_retries
from nous.memory.outbox import memory_events
from nous.models import (
    Edge,
    EdgeRelation,
    HistoryAction,
    HistoryEntry,
    Memory,
    MemoryKind,
    Turn,
)
from nous.storage import MemoryQuery, Store, WriteOp
from nous.storage.base import AddHistory, PurgeMemory, PutEdge, PutMemory, SetEmbedding, SetLifecycle
from nous.storage.codec import content_hash

log = logging.getLogger(__name__)
M = TypeVar("M", bound=Memory)
IMMUTABLE_FIELDS = frozenset({"id", "agent_id", "created_at"})
SYMMETRIC_RELATIONS = frozenset({EdgeRelation.RELATES_TO, EdgeRelation.CONTRADICTS})
# Updates of one memory in this process take turns, per store (agents' views of a store share it).
_UPDATE_TURNS: weakref.WeakKeyDictionary[Store, KeyedLocks] = weakref.WeakKeyDictionary()


def invalid_from_pydantic(exc: ValidationError) -> InvalidInputError:
    """Turn a pydantic error into Nous's typed error, naming the first bad field."""
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or None
    return InvalidInputError(f"{field or 'input'}: {first.get('msg', 'invalid value')}", field=field)


def build(cls: type[M], **fields: Any) -> M:
    """Construct a model, raising InvalidInputError instead of pydantic's error."""
    try:
        return cls(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        raise invalid_from_pydantic(exc) from None


def _check_strings(value: Any, path: str, max_bytes: int) -> None:
    if isinstance(value, str):
        if value:
            validate_content(value, field=path, max_bytes=max_bytes)
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_strings(v, f"{path}.{k}", max_bytes)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_strings(v, f"{path}[{i}]", max_bytes)


class MemoryRepository:
    """Reads and writes memories of one agent."""

    def __init__(self, store: Store, embedder: Embedder, *, agent_id: str, max_content_bytes: int) -> None:
        self.store = store
        self.embedder = embedder
        self.agent_id = agent_id
        self.max_content_bytes = max_content_bytes
        self._recalled: dict[str, None] = {}  # reviews waiting to be written (write-behind)
        self._flushing: asyncio.Task[None] | None = None

    # -- validation & embedding ---------------------------------------------------
    def validate(self, memory: Memory) -> None:
        """Reject content and text fields Nous must not store."""
        memory.content = validate_content(memory.content, max_bytes=self.max_content_bytes)
        dump = memory.model_dump(exclude={"content"})
        for name, value in dump.items():
            _check_strings(value, name, self.max_content_bytes)
        if memory.agent_id != self.agent_id:
            raise InvalidInputError(f"memory belongs to agent {memory.agent_id!r}, not {self.agent_id!r}")
        if "stability" not in memory.model_fields_set:
            memory.stability = lifecycle.initial_stability(memory.kind)

    async def embed(
        self, memories: Sequence[Memory], *, known: Mapping[str, np.ndarray] | None = None
    ) -> tuple[list[Embedded | None], list[str]]:
        """Vectors (None when the provider failed) and content hashes, reusing stored vectors and
        ``known`` ones (content hash -> this model's vector, e.g. an import's)."""
        hashes = [content_hash(m) for m in memories]
        if not memories:
            return [], hashes
        texts = [m.embedding_text() for m in memories]
        model = self.embedder.model_name
        given = {h: known[h] for h in hashes if known and h in known}
        try:
            stored = await self.store.embeddings_by_hash([h for h in hashes if h not in given], model)
            vectors = {**stored, **given}
            chunked = [
                h
                for h, t in zip(hashes, texts, strict=True)
                if h in vectors and len(self.embedder.split(t)) > 1
            ]
            known_chunks = await self.store.chunks_by_hash(chunked, model) if chunked else {}
            embedded = await self.embedder.embed_memories(texts, vectors, known_chunks)
        except EmbeddingError as exc:
            log.warning(
                "embedding failed, storing %d memories with embedding pending: %s", len(memories), exc
            )
            return [None] * len(memories), hashes
        return list(embedded), hashes

    def put_ops(self, memory: Memory, embedded: Embedded | None, hash_: str) -> PutMemory:
        return PutMemory(
            memory=memory,
            content_hash=hash_,
            embedding=None if embedded is None else embedded.vector,
            embedding_model=None if embedded is None else self.embedder.model_name,
            chunks=None if embedded is None else embedded.chunks,
        )

    def audit(
        self,
        memory_id: str,
        action: HistoryAction,
        *,
        old: dict[str, Any] | None = None,
        new: dict[str, Any] | None = None,
        actor: str = "api",
    ) -> AddHistory:
        return AddHistory(
            HistoryEntry(
                memory_id=memory_id,
                agent_id=self.agent_id,
                action=action,
                old_value=old,
                new_value=new,
                actor=actor,
            )
        )

    # -- writes ------------------------------------------------------------------
    async def create(
        self,
        memory: M,
        *,
        actor: str = "api",
        embedded: Embedded | None = None,
        extra_ops: Sequence[WriteOp] = (),
        action: HistoryAction = HistoryAction.CREATE,
    ) -> M:
        """Store a new memory (and any extra ops) in one transaction; ``embedded``: its vectors,
        if already computed."""
        await self.create_many(
            [memory],
            actor=actor,
            extra_ops=extra_ops,
            action=action,
            embedded=None if embedded is None else [embedded],
        )
        return memory

    async def create_many(
        self,
        memories: Sequence[Memory],
        *,
        actor: str = "api",
        extra_ops: Sequence[WriteOp] = (),
        action: HistoryAction = HistoryAction.CREATE,
        embedded: Sequence[Embedded | None] | None = None,
    ) -> None:
        """Store several memories in one transaction, embedding them in one batch (unless
        ``embedded`` gives their vectors; None for one stores it with its embedding pending)."""
        for memory in memories:
            self.validate(memory)
        if embedded is None:
            vecs, hashes = await self.embed(memories)
        else:
            vecs, hashes = list(embedded), [content_hash(m) for m in memories]
        ops: list[WriteOp] = []
        for memory, vec, h in zip(memories, vecs, hashes, strict=True):
            ops.append(self.put_ops(memory, vec, h))
            ops.append(self.audit(memory.id, action, new=memory.model_dump(mode="json"), actor=actor))
            ops.extend(memory_events(None, memory))
        ops.extend(extra_ops)
        await self.store.apply(ops)

    async def update(
        self,
        memory_id: str,
        changes: dict[str, Any] | Callable[[Memory], dict[str, Any]],
        *,
        actor: str = "api",
        action: HistoryAction = HistoryAction.UPDATE,
        extra_ops: Sequence[WriteOp] = (),
        kind: MemoryKind | None = None,
    ) -> Memory:
        """Apply field changes to a memory, audited; re-embeds only if its text changed.

        The row is replaced only if nobody changed it since it was read (compare-and-swap on
        ``updated_at``); otherwise the change is computed again from a fresh read, so a concurrent
        update in another process is never lost. A change that depends on the current value (a
        counter) is given as a function of the memory, so each retry computes it afresh. Updates
        of one memory in this process take turns, so only other processes' writes cause retries."""
        turns = _UPDATE_TURNS.setdefault(self.store, KeyedLocks())
        async with turns.hold(memory_id):
            return await with_retries(
                lambda: self._update_once(memory_id, changes, actor, action, extra_ops, kind)
            )

    async def _update_once(
        self,
        memory_id: str,
        change: dict[str, Any] | Callable[[Memory], dict[str, Any]],
        actor: str,
        action: HistoryAction,
        extra_ops: Sequence[WriteOp],
        kind: MemoryKind | None,
    ) -> Memory:
        current = await self.get(memory_id, kind=kind)
        changes = change(current) if callable(change) else change
        bad = set(changes) & IMMUTABLE_FIELDS
        if bad:
            raise InvalidInputError(f"cannot change {', '.join(sorted(bad))}", field=sorted(bad)[0])
        unknown = set(changes) - set(type(current).model_fields)
        if unknown:
            raise InvalidInputError(
                f"{current.kind.value} has no field {sorted(unknown)[0]!r}", field=sorted(unknown)[0]
            )
        try:
            updated = type(current).model_validate(
                {**current.model_dump(), **changes, "updated_at": utcnow()}
            )
        except ValidationError as exc:
            raise invalid_from_pydantic(exc) from None
        self.validate(updated)
        old_dump, new_dump = current.model_dump(mode="json"), updated.model_dump(mode="json")
        changed = {k for k in new_dump if new_dump[k] != old_dump.get(k) and k != "updated_at"}
        if not changed and not extra_ops:
            return current
        old_hash, new_hash = content_hash(current), content_hash(updated)
        if old_hash == new_hash:
            put = PutMemory(memory=updated, content_hash=new_hash, keep_embedding=True)
        else:
            (embedded,), _ = await self.embed([updated])
            put = self.put_ops(updated, embedded, new_hash)
        put.expect_updated_at = current.updated_at
        await self.store.apply(
            [
                put,
                self.audit(
                    updated.id,
                    action,
                    old={k: old_dump[k] for k in changed},
                    new={k: new_dump[k] for k in changed},
                    actor=actor,
                ),
                *memory_events(current, updated),
                *extra_ops,
            ]
        )
        return updated

    async def forget(self, memory_id: str, *, hard: bool = False, actor: str = "api") -> Memory:
        """Soft-delete (restorable), or with ``hard`` delete the row and its edges for good."""
        memory = await self.get(memory_id, include_inactive=True)
        if hard:
            await self.store.apply(
                [
                    PurgeMemory(memory.id),
                    self.audit(memory.id, HistoryAction.PURGE, old={"kind": memory.kind.value}, actor=actor),
                ]
            )
            return memory
        if not memory.active:
            return memory
        return await self.update(memory.id, {"active": False}, action=HistoryAction.DELETE, actor=actor)

    async def restore(self, memory_id: str, *, actor: str = "api") -> Memory:
        """Undo a soft delete."""
        memory = await self.get(memory_id, include_inactive=True)
        if memory.active:
            return memory
        return await self.update(memory.id, {"active": True}, action=HistoryAction.RESTORE, actor=actor)

    async def link(
        self,
        source_id: str,
        target_id: str,
        relation: EdgeRelation,
        *,
        weight: float = 1.0,
        actor: str = "api",
    ) -> bool:
        """Add a typed edge; False if it already existed (either way round, for symmetric relations)."""
        if source_id == target_id:
            raise InvalidInputError("cannot link a memory to itself")
        found = await self.store.get_many(self.agent_id, [source_id, target_id])
        for mid in (source_id, target_id):
            if mid not in found:
                raise NotFoundError(f"no memory with id {mid!r}")
        if relation in SYMMETRIC_RELATIONS:
            existing = await self.store.edges(self.agent_id, [source_id])
            if any(
                e.relation == relation and {e.source_id, e.target_id} == {source_id, target_id}
                for e in existing
            ):
                return False  # the same undirected link exists (e.g. made by the connect tier)
        try:
            edge = Edge(
                source_id=source_id,
                target_id=target_id,
                relation=relation,
                agent_id=self.agent_id,
                weight=weight,
            )
        except ValidationError as exc:
            raise invalid_from_pydantic(exc) from None
        inserted, _ = await self.store.apply(
            [
                PutEdge(edge),
                self.audit(
                    source_id,
                    HistoryAction.LINK,
                    new={"target_id": target_id, "relation": relation.value},
                    actor=actor,
                ),
            ]
        )
        return inserted

    async def supersede(self, old_id: str, new_id: str, *, actor: str = "api") -> Memory:
        """Mark ``old_id`` as replaced by ``new_id`` (both existing memories of this agent): the
        old one's ``superseded_by`` and ``valid_to``, a ``supersedes`` edge from the new one, and a
        history row, in one transaction — what the write path records when a new fact replaces
        an old one, for a replacement a person spotted. Returns the old memory as it now is."""
        old_full, new_full = await self.resolve_id(old_id), await self.resolve_id(new_id)
        if old_full == new_full:
            raise InvalidInputError("a memory cannot supersede itself", field="by")
        newer = await self.get(new_full)
        if newer.superseded_by == old_full:
            raise InvalidInputError(f"{new_full} is itself superseded by {old_full}", field="by")
        edge = Edge(
            source_id=new_full, target_id=old_full, relation=EdgeRelation.SUPERSEDES, agent_id=self.agent_id
        )
        ends = newer.valid_from or utcnow()
        return await self.update(
            old_full,
            {"superseded_by": new_full, "valid_to": ends},
            action=HistoryAction.SUPERSEDE,
            actor=actor,
            extra_ops=[PutEdge(edge)],
        )

    async def edges(self, memory_id: str) -> list[Edge]:
        """The edges touching a memory (either end), newest first."""
        full = await self.resolve_id(memory_id)
        found = await self.store.edges(self.agent_id, [full])
        return sorted(found, key=lambda e: e.created_at, reverse=True)

    # -- reads -------------------------------------------------------------------
    async def resolve_id(self, memory_id: str) -> str:
        """Full id for an id or a unique prefix of at least 6 characters."""
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise InvalidInputError("id must be a non-empty string", field="id")
        memory_id = memory_id.strip()
        if len(memory_id) >= 36:
            return memory_id
        if len(memory_id) < 6:
            raise NotFoundError(f"no memory with id {memory_id!r} (prefixes need 6+ characters)")
        matches = await self.store.resolve_prefix(self.agent_id, memory_id)
        if not matches:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        if len(matches) > 1:
            raise ConflictError(f"id prefix {memory_id!r} is ambiguous; give more characters")
        return matches[0]

    async def get(
        self, memory_id: str, *, kind: MemoryKind | None = None, include_inactive: bool = True
    ) -> Memory:
        """One memory by id or unique prefix; NotFoundError if absent (or of another kind)."""
        full = await self.resolve_id(memory_id)
        found = (await self.store.get_many(self.agent_id, [full])).get(full)
        if (
            found is None
            or (kind is not None and found.kind != kind)
            or (not include_inactive and not found.active)
        ):
            what = kind.value if kind else "memory"
            raise NotFoundError(f"no {what} with id {memory_id!r}")
        return found

    async def get_typed(self, memory_id: str, cls: type[M]) -> M:
        memory = await self.get(memory_id, kind=cls.kind)
        assert isinstance(memory, cls)
        return memory

    async def query(self, **filters: Any) -> list[Memory]:
        return await self.store.query(MemoryQuery(agent_id=self.agent_id, **filters))

    async def history(self, memory_id: str) -> list[HistoryEntry]:
        """The audit trail of a memory (also after a hard forget, by id or unique prefix)."""
        try:
            full = await self.resolve_id(memory_id)
        except NotFoundError:
            # the memory row is gone (purged) but its history rows remain: resolve against them
            # (an exact id first: "user:bob" is not ambiguous beside "user:bob2")
            full = memory_id.strip()
            if 6 <= len(full) < 36 and not await self.store.history(self.agent_id, full):
                matches = await self.store.resolve_history_prefix(self.agent_id, full)
                if len(matches) > 1:
                    raise ConflictError(f"id prefix {full!r} is ambiguous; give more characters") from None
                full = matches[0] if matches else full
        entries = await self.store.history(self.agent_id, full)
        if not entries:
            raise NotFoundError(f"no history for id {memory_id!r}")
        return entries

    # -- lifecycle ---------------------------------------------------------------
    REVIEW_FLUSH_AT = 64

    def note_recalled(self, ids: Sequence[str]) -> None:
        """Count memories as reviewed because recall brought them back.

        Reviews are written behind: in a background batch once REVIEW_FLUSH_AT are pending,
        so a recall never waits for them, and at ``flush_reviews`` (close, maintain).
        """
        self._recalled.update(dict.fromkeys(ids))
        if len(self._recalled) >= self.REVIEW_FLUSH_AT and (self._flushing is None or self._flushing.done()):
            self._flushing = asyncio.get_running_loop().create_task(self._flush_in_background())

    async def _flush_in_background(self) -> None:
        try:
            await self._write_reviews()
        except NousError as exc:  # bookkeeping only: never fail a recall over it
            log.warning("writing recall reviews failed: %s", exc)

    async def _write_reviews(self) -> int:
        ids, self._recalled = list(self._recalled), {}
        return await self.review(ids) if ids else 0

    async def flush_reviews(self) -> int:
        """Write every pending review now (waits for a background batch first)."""
        if self._flushing is not None:
            await self._flushing
            self._flushing = None
        return await self._write_reviews()

    async def review(self, ids: Sequence[str], *, now: Any = None) -> int:
        """Apply a review to each memory: stability grows, the lifecycle returns to ACTIVE.

        Reviews are bookkeeping, not content changes: they write no history rows and touch
        only the lifecycle columns.
        """
        now = as_utc(now) if now is not None else utcnow()
        found = await self.store.get_many(self.agent_id, list(ids))
        ops: list[WriteOp] = [self._lifecycle_op(m, lifecycle.reviewed(m, now)) for m in found.values()]
        if ops:
            await self.store.apply(ops)
        return len(ops)

    def _lifecycle_op(self, memory: Memory, changes: dict[str, Any]) -> SetLifecycle:
        updated = memory.model_copy(update=changes)
        return SetLifecycle(
            memory_id=memory.id,
            agent_id=self.agent_id,
            lifecycle=updated.lifecycle,
            stability=updated.stability,
            review_count=updated.review_count,
            last_reviewed_at=updated.last_reviewed_at,
        )

    async def decay(
        self,
        *,
        now: Any = None,
        policies: dict[MemoryKind, lifecycle.DecayPolicy] | None = None,
        batch_size: int = 500,
        actor: str = "maintain",
    ) -> dict[str, int]:
        """Move every memory to the lifecycle state its retrievability implies; audited.

        Returns how many memories entered each state.
        """
        now = as_utc(now) if now is not None else utcnow()  # a naive time is UTC, as stored
        policies = policies or lifecycle.DEFAULT_POLICIES
        moved: dict[str, int] = {}
        ops: list[WriteOp] = []
        async for memory in self.store.iter_memories(self.agent_id):
            state = lifecycle.state_for(memory, now, policies[memory.kind])
            if state == memory.lifecycle:
                continue
            ops.append(self._lifecycle_op(memory, {"lifecycle": state}))
            ops.append(
                self.audit(
                    memory.id,
                    HistoryAction.LIFECYCLE,
                    old={"lifecycle": memory.lifecycle.value},
                    new={
                        "lifecycle": state.value,
                        "retrievability": round(lifecycle.current_retrievability(memory, now), 4),
                    },
                    actor=actor,
                )
            )
            moved[state.value] = moved.get(state.value, 0) + 1
            if len(ops) >= batch_size:
                await self.store.apply(ops)
                ops = []
        if ops:
            await self.store.apply(ops)
        return moved

    # -- maintenance -------------------------------------------------------------
    async def backfill_embeddings(
        self, *, batch_size: int = 256, progress: Callable[[int], None] | None = None
    ) -> int:
        """Embed memories stored while the provider was failing, and add chunk vectors to long
        memories stored without them (before chunking existed); returns how many were fixed."""
        fixed = 0
        while True:
            pending = await self.store.missing_embeddings(self.agent_id, batch_size)
            if not pending:
                break
            memories = [m for m, _ in pending]
            embedded = await self.embedder.embed_memories([m.embedding_text() for m in memories])
            results = await self.store.apply(
                [
                    SetEmbedding(m.id, h, e.vector, self.embedder.model_name, chunks=e.chunks)
                    for (m, h), e in zip(pending, embedded, strict=True)
                ]
            )
            fixed += sum(results)
            if progress:
                progress(len(pending))
            if not any(results):
                break
        return fixed + await self._backfill_chunks(batch_size, progress)

    async def mark_instructions(self, *, actor: str = "maintain") -> int:
        """Store as standing instructions (category ``instruction``) the user turns stored before
        turns were marked on arrival: a store ingested by an older version lists none of its
        users' rules in the context. A forgotten turn, or one whose category anyone has changed
        since it was stored, is left as it is. Returns how many turns were marked; a second pass marks none."""
        found = [
            memory.id
            async for memory in self.store.iter_memories(self.agent_id)
            if isinstance(memory, Turn)
            and memory.active
            and memory.category is None
            and message_category(memory.role, memory.said()) == INSTRUCTION
        ]
        marked = 0
        for memory_id in found:
            entries = await self.store.history(self.agent_id, memory_id)
            if any(e.action == HistoryAction.UPDATE and "category" in (e.new_value or {}) for e in entries):
                continue  # somebody changed this turn's category since it was stored: theirs to keep

            def mark(memory: Memory) -> dict[str, Any]:
                return {"category": INSTRUCTION} if memory.category is None else {}

            try:
                updated = await self.update(memory_id, mark, actor=actor, kind=MemoryKind.TURN)
            except NotFoundError:
                continue  # purged since the scan
            marked += updated.category == INSTRUCTION
        return marked

    async def refresh_presentation(self, *, batch_size: int = 256) -> int:
        """Re-embed censors and decisions whose embedded text is no longer what this version
        presents (a censor is now embedded by its reason and pattern words, not its regex): their
        stored vector was made from another text. Content, history and times are unchanged;
        returns how many were re-embedded."""
        fixed, offset = 0, 0
        while True:
            page = await self.query(
                kinds=(MemoryKind.CENSOR, MemoryKind.DECISION),
                include_inactive=True,
                include_superseded=True,
                limit=batch_size,
                offset=offset,
            )
            if not page:
                return fixed
            offset += len(page)
            hashes = [content_hash(m) for m in page]
            known = await self.store.embeddings_by_hash(hashes, self.embedder.model_name)
            stale = [m for m, h in zip(page, hashes, strict=True) if h not in known]
            if not stale:
                continue
            embedded, new_hashes = await self.embed(stale)
            ops: list[WriteOp] = []
            for memory, vec, h in zip(stale, embedded, new_hashes, strict=True):
                if vec is None:
                    continue  # the provider failed: the old vector stays until the next pass
                put = self.put_ops(memory, vec, h)
                put.expect_updated_at = memory.updated_at  # changed meanwhile: the next pass sees it
                ops.append(put)
            for op in ops:
                try:
                    await self.store.apply([op])
                    fixed += 1
                except StaleWriteError:
                    continue

    async def _backfill_chunks(self, batch_size: int, progress: Callable[[int], None] | None) -> int:
        """Chunk vectors for long memories that have none; their main vectors are kept as stored."""
        limit = self.embedder.max_input_chars
        fixed = 0
        while limit:
            pending = await self.store.missing_chunks(self.agent_id, limit, batch_size)
            if not pending:
                break
            stored = await self.store.vectors(self.agent_id, [m.id for m, _ in pending])
            known = {h: stored[m.id] for m, h in pending if m.id in stored}
            embedded = await self.embedder.embed_memories([m.embedding_text() for m, _ in pending], known)
            ops: list[WriteOp] = [
                SetEmbedding(m.id, h, e.vector, self.embedder.model_name, chunks=e.chunks)
                for (m, h), e in zip(pending, embedded, strict=True)
                if e.chunks
            ]
            results = await self.store.apply(ops)
            fixed += sum(results)
            if progress:
                progress(len(pending))
            if not any(results):  # none left (or none that chunking splits): done
                break
        return fixed
