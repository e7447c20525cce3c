"""Hybrid recall: dense and keyword candidates fused by reciprocal rank."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from nous._text import keyword_terms, validate_content
from nous.errors import InvalidInputError
from nous.memory import MemoryRepository
from nous.models import MemoryKind, RecallHit
from nous.storage import MemoryQuery

RRF_K = 60
MAX_LIMIT = 1000


@dataclass(slots=True)
class RecallQuery:
    """What to look for and where."""

    text: str
    limit: int = 10
    kinds: tuple[MemoryKind, ...] | None = None
    user_id: str | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_inactive: bool = False
    include_superseded: bool = False


class Retriever:
    """Runs recall queries for one agent."""

    def __init__(self, repo: MemoryRepository) -> None:
        self.repo = repo

    def _scope(self, q: RecallQuery) -> MemoryQuery:
        return MemoryQuery(
            agent_id=self.repo.agent_id,
            kinds=q.kinds,
            user_id=q.user_id,
            session_id=q.session_id,
            since=q.since,
            until=q.until,
            include_inactive=q.include_inactive,
            include_superseded=q.include_superseded,
        )

    async def recall(self, q: RecallQuery) -> list[RecallHit]:
        """Top memories for the query, best first, each with its per-signal scores."""
        text = validate_content(q.text, field="query", max_bytes=self.repo.max_content_bytes)
        if isinstance(q.limit, bool) or not isinstance(q.limit, int) or not 1 <= q.limit <= MAX_LIMIT:
            raise InvalidInputError(f"limit must be an integer from 1 to {MAX_LIMIT}", field="limit")
        if q.since and q.until and q.since >= q.until:
            raise InvalidInputError("since must be before until", field="since")
        scope = self._scope(q)
        pool = max(50, q.limit * 4)
        vector = await self.repo.embedder.embed_one(text)
        dense, keyword = await asyncio.gather(
            self.repo.store.vector_search(scope, vector, pool),
            self.repo.store.keyword_search(scope, keyword_terms(text), pool),
        )
        fused: dict[str, float] = {}
        signals: dict[str, dict[str, float]] = {}
        for name, hits in (("dense", dense), ("keyword", keyword)):
            for rank, hit in enumerate(hits):
                fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (RRF_K + rank + 1)
                signals.setdefault(hit.id, {})[name] = round(hit.score, 6)
                signals[hit.id][f"{name}_rank"] = rank + 1
        top = sorted(fused, key=fused.__getitem__, reverse=True)[: q.limit]
        memories = await self.repo.store.get_many(self.repo.agent_id, top)
        return [
            RecallHit(
                id=i,
                kind=memories[i].kind,
                content=memories[i].content,
                score=round(fused[i], 6),
                signals=signals[i],
                memory=memories[i],
            )
            for i in top
            if i in memories
        ]
