"""The write path for dedup-able memories: search before store, then store, link or supersede.

See ``nous.memory.dedup`` for the tiers. Everything a write decides lands in one
transaction: the new memory, the superseded one's ``valid_to`` / ``superseded_by``, the
edges and the audit rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import numpy as np

from nous._time import utcnow
from nous.embeddings import Embedded
from nous.memory import lifecycle
from nous.memory.conflict import ConflictKind, find_conflict, has_change_marker
from nous.memory.dedup import (
    DEDUP_KINDS,
    MAX_MATCHES,
    DedupThresholds,
    SimilarityCheck,
    SimilarMatch,
    Tier,
    agreement_verdict,
    classify,
    cosine,
    needs_agreement,
    recommendation,
    residual_wordings,
    same_matter,
)
from nous.memory.meaning import same_attribute
from nous.memory.repository import MemoryRepository
from nous.models import (
    Edge,
    EdgeRelation,
    Fact,
    HistoryAction,
    Memory,
    MemoryKind,
    WriteResult,
    WriteStatus,
)
from nous.storage import MemoryQuery, ScoredId, WriteOp
from nous.storage.base import PutEdge, PutMemory
from nous.storage.codec import content_hash

REPLACES_CHARS = 2000  # what a fact keeps of the ones it replaced, for keyword search

# Edges to the matches a new memory is linked to. An update match other than the one it
# supersedes is only related: one memory supersedes one other.
_EDGE_FOR_TIER = {
    Tier.CONNECT: EdgeRelation.RELATES_TO,
    Tier.CONTRADICTION: EdgeRelation.CONTRADICTS,
    Tier.UPDATE: EdgeRelation.RELATES_TO,
}


class WritePath:
    """Search-before-store for one agent's repository."""

    def __init__(
        self,
        repo: MemoryRepository,
        thresholds: DedupThresholds | None = None,
        kinds: Sequence[MemoryKind] = DEDUP_KINDS,
    ) -> None:
        self.repo = repo
        self.thresholds = thresholds or DedupThresholds()
        self.kinds = frozenset(kinds)

    async def check_similar(
        self,
        content: str,
        kind: MemoryKind,
        *,
        user_id: str | None = None,
        subject: str | None = None,
        additive: bool = False,
        vector: np.ndarray | None = None,
        exclude_id: str | None = None,
        limit: int = MAX_MATCHES,
        nearest: list[ScoredId] | None = None,
    ) -> SimilarityCheck:
        """Close memories of ``kind`` in the scope, classified against ``content``; writes nothing.
        ``additive``: the content is an event (a changed detail is another event, not an update).
        ``nearest``: the vector search's hits, if already made."""
        if vector is None:
            vector = await self.repo.embedder.embed_one(content)
        if nearest is None:
            nearest = await self._nearest(kind, user_id, vector, limit)
        hits = [h for h in nearest if h.id != exclude_id and h.score >= self.thresholds.connect]
        found = await self.repo.store.get_many(self.repo.agent_id, [h.id for h in hits])
        matches = await self._explicit_updates(content, kind, user_id, subject, vector, {h.id for h in hits})
        for hit in hits:
            existing = found.get(hit.id)
            if existing is None:
                continue
            same_subject = bool(subject) and subject == existing.subject
            # Without a subject on either side, a thing the two statements set ("the on-call
            # rotation" + "changes") stands for it: a changed value of it is an update.
            sets_same = not subject and not existing.subject and same_attribute(content, existing.content)
            tier, conflict = classify(
                hit.score,
                content,
                existing.content,
                self.thresholds,
                same_subject=same_subject or sets_same,
                subject=subject if same_subject else None,
                additive=additive,
            )
            if needs_agreement(tier, hit.score):
                tier = agreement_verdict(tier, await self._agreement(content, existing.content))
            matches.append(
                SimilarMatch(
                    id=existing.id,
                    kind=existing.kind,
                    content=existing.content,
                    similarity=round(hit.score, 6),
                    tier=tier,
                    lifecycle=existing.lifecycle,
                    conflict=f"{conflict.kind.value}: {conflict.detail}" if conflict else None,
                )
            )
        return SimilarityCheck(recommendation=recommendation(matches), matches=matches)

    async def _agreement(self, new_text: str, existing_text: str) -> float | None:
        """Cosine of what the two statements say beyond their shared words (None: nothing beyond)."""
        rest = residual_wordings(new_text, existing_text)
        if rest is None:
            return None
        a, b = await self.repo.embedder.embed_many(list(rest))
        return cosine(a, b)

    async def _explicit_updates(
        self,
        content: str,
        kind: MemoryKind,
        user_id: str | None,
        subject: str | None,
        vector: np.ndarray,
        seen: set[str],
    ) -> list[SimilarMatch]:
        """Memories of the same ``subject`` that ``content`` says have changed ("was pushed back to
        Monday", "no longer"), however differently they are worded: the caller named what the
        statement is about, and it states a change. The most recent such memory is the update's
        target; the cosine (often low: "A3 is due Friday 27 February" / "the A3 deadline was
        pushed back to 2 March" is 0.32) is only reported. The two must speak of the same matter,
        beyond their subject: a content word in common, or a time or number on both sides — a
        subject can be a person, and not every change to a person replaces what else is known."""
        if not subject or not has_change_marker(content):
            return []
        same = await self.repo.query(kinds=(kind,), subject=subject, user_id=user_id, limit=MAX_MATCHES)
        same = [m for m in same if m.id not in seen and m.user_id == user_id]
        vectors = await self.repo.store.vectors(self.repo.agent_id, [m.id for m in same])
        for existing in same:  # newest first
            conflict = find_conflict(content, existing.content)
            if conflict is None or conflict.kind != ConflictKind.TENSE:
                continue
            if not same_matter(content, existing.content, subject):
                continue  # "Alice moved to Berlin" does not replace "Alice prefers green tea"
            vec = vectors.get(existing.id)
            return [
                SimilarMatch(
                    id=existing.id,
                    kind=existing.kind,
                    content=existing.content,
                    similarity=round(float(vec @ vector), 6) if vec is not None else 0.0,
                    tier=Tier.UPDATE,
                    lifecycle=existing.lifecycle,
                    conflict=f"{conflict.kind.value}: {conflict.detail}",
                )
            ]
        return []

    async def store(
        self,
        memory: Memory,
        *,
        actor: str = "api",
        supersedes: str | None = None,
        dedup: bool = True,
        extra_ops: Sequence[WriteOp] = (),
    ) -> WriteResult:
        """Store ``memory`` unless it duplicates one; link, supersede or flag as the matches say.
        ``extra_ops`` join the transaction of whatever is written (a pipeline step's marker)."""
        self.repo.validate(memory)
        if not dedup or memory.kind not in self.kinds:
            if supersedes is None:
                await self.repo.create(memory, actor=actor, extra_ops=extra_ops)
                return WriteResult(status=WriteStatus.CREATED, memory=memory)
            async with self._decision(memory):
                replaced = await self.repo.get(supersedes, kind=memory.kind)
                return await self._create(memory, [], replaced, actor=actor, extra_ops=extra_ops)
        (embedded,), _ = await self.repo.embed([memory])
        if embedded is None:  # the provider failed just now: store it pending, don't ask again
            await self.repo.create_many([memory], actor=actor, embedded=[None], extra_ops=extra_ops)
            return WriteResult(
                status=WriteStatus.CREATED,
                memory=memory,
                warnings=["embedding unavailable: stored without the duplicate check"],
            )
        # Search before store, outside the exclusive section: under it, one vector search checks
        # that the neighbours are still the same (nothing written, changed or forgotten near this
        # memory since); only if they differ are they read and classified again there. A statement of change
        # about a subject is checked under it in full: its matches come from a query by subject.
        check = None
        if not (memory.subject and has_change_marker(memory.content)):
            check = await self._check(memory, embedded.vector)
        async with self._decision(memory):  # read, decide and write as one step
            if check is None:
                check = await self._check(memory, embedded.vector)
            else:
                nearest = await self._nearest(memory.kind, memory.user_id, embedded.vector, MAX_MATCHES)
                if not self._same_neighbours(memory, nearest, check):
                    check = await self._check(memory, embedded.vector, nearest)
            target = await self.repo.get(supersedes, kind=memory.kind) if supersedes else None
            duplicate = check.duplicate
            if duplicate is None or target is not None:
                updates = check.of_tier(Tier.UPDATE)
                if target is None and updates:
                    target = await self.repo.get(updates[0].id)
                links = [
                    m
                    for m in check.matches
                    if m.tier != Tier.DUPLICATE and (target is None or m.id != target.id)
                ]
                return await self._create(
                    memory, links, target, actor=actor, embedded=embedded, extra_ops=extra_ops
                )
        # A duplicate is decided: confirming it is a compare-and-swap update of that memory,
        # which needs no exclusive section (two confirmations at once both count).
        return await self._reinforce(duplicate, memory, actor=actor, extra_ops=extra_ops)

    async def _check(
        self, memory: Memory, vector: np.ndarray, nearest: list[ScoredId] | None = None
    ) -> SimilarityCheck:
        return await self.check_similar(
            memory.content,
            memory.kind,
            user_id=memory.user_id,
            subject=memory.subject,
            additive=memory.category == "event",
            vector=vector,
            exclude_id=memory.id,
            nearest=nearest,
        )

    async def _nearest(
        self, kind: MemoryKind, user_id: str | None, vector: np.ndarray, limit: int
    ) -> list[ScoredId]:
        scope = MemoryQuery(agent_id=self.repo.agent_id, kinds=(kind,), user_id=user_id)
        return await self.repo.store.vector_search(scope, vector, limit, chunks=False)  # whole memories

    def _same_neighbours(self, memory: Memory, nearest: list[ScoredId], check: SimilarityCheck) -> bool:
        """Whether the close memories ``check`` was decided on are still exactly those, with the
        same vectors: a memory written, re-embedded, forgotten or superseded near this one since
        changes the set."""
        now = {
            (h.id, round(h.score, 6))
            for h in nearest
            if h.id != memory.id and h.score >= self.thresholds.connect
        }
        return now == {(m.id, m.similarity) for m in check.matches}

    def _decision(self, memory: Memory) -> AbstractAsyncContextManager[None]:
        """The exclusive section of a search-before-store decision: writers of one agent and kind
        (in any process) decide one at a time, so two cannot both find "no duplicate" and insert
        the same memory, or supersede the same one twice."""
        return self.repo.store.exclusive(f"write:{self.repo.agent_id}:{memory.kind.value}")

    async def _reinforce(
        self, match: SimilarMatch, new: Memory, *, actor: str, extra_ops: Sequence[WriteOp] = ()
    ) -> WriteResult:
        """A duplicate: confirm and review the existing memory; keep the new wording in its history."""
        existing = await self.repo.get(match.id)

        def reinforced(current: Memory) -> dict[str, Any]:  # from the fresh read of each attempt
            changes: dict[str, Any] = dict(lifecycle.reviewed(current, utcnow()))
            if isinstance(current, Fact):
                changes["confirmation_count"] = current.confirmation_count + 1
            return changes

        updated = await self.repo.update(
            existing.id,
            reinforced,
            action=HistoryAction.CONFIRM,
            actor=actor,
            extra_ops=[
                self.repo.audit(
                    existing.id,
                    HistoryAction.CONFIRM,
                    new={"duplicate_content": new.content, "similarity": match.similarity},
                    actor=actor,
                ),
                *extra_ops,
            ],
        )
        return WriteResult(
            status=WriteStatus.DUPLICATE,
            memory=updated,
            existing_id=existing.id,
            similarity=match.similarity,
        )

    async def _create(
        self,
        memory: Memory,
        links: list[SimilarMatch],
        target: Memory | None,
        *,
        actor: str,
        embedded: Embedded | None = None,
        extra_ops: Sequence[WriteOp] = (),
    ) -> WriteResult:
        now = utcnow()
        ops: list[WriteOp] = list(extra_ops)
        for match in links:
            edge = Edge(
                source_id=memory.id,
                target_id=match.id,
                relation=_EDGE_FOR_TIER.get(match.tier, EdgeRelation.RELATES_TO),
                agent_id=self.repo.agent_id,
                weight=match.similarity,
            )
            ops.append(PutEdge(edge))
        warnings = [
            f"possible contradiction with {m.id} ({m.conflict}): {m.content!r}"
            for m in links
            if m.tier == Tier.CONTRADICTION
        ]
        if target is not None:
            if memory.valid_from is None:
                memory.valid_from = now
            if isinstance(memory, Fact) and memory.replaces is None:
                said = [target.content, target.replaces if isinstance(target, Fact) else None]
                memory.replaces = "\n".join(p for p in said if p)[:REPLACES_CHARS]
            old = target.model_copy(
                update={"valid_to": memory.valid_from, "superseded_by": memory.id, "updated_at": now}
            )
            ops.append(
                PutMemory(
                    memory=old,
                    content_hash=content_hash(old),
                    keep_embedding=True,
                    expect_updated_at=target.updated_at,  # not from a stale read
                )
            )
            ops.append(
                self.repo.audit(
                    target.id,
                    HistoryAction.SUPERSEDE,
                    old={"content": target.content, "valid_to": None, "superseded_by": None},
                    new={
                        "valid_to": memory.valid_from.isoformat(),
                        "superseded_by": memory.id,
                        "content": memory.content,
                    },
                    actor=actor,
                )
            )
            ops.append(
                PutEdge(
                    Edge(
                        source_id=memory.id,
                        target_id=target.id,
                        relation=EdgeRelation.SUPERSEDES,
                        agent_id=self.repo.agent_id,
                    )
                )
            )
        await self.repo.create(memory, actor=actor, embedded=embedded, extra_ops=ops)
        if target is not None:
            status = WriteStatus.SUPERSEDED
        elif links:
            status = WriteStatus.CONNECTED
        else:
            status = WriteStatus.CREATED
        return WriteResult(
            status=status,
            memory=memory,
            related_ids=[m.id for m in links],
            superseded_id=target.id if target is not None else None,
            similarity=max((m.similarity for m in links), default=None),
            warnings=warnings,
        )
