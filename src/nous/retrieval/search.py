"""Hybrid recall over every memory type.

Pipeline: parse time expressions and recap intent → dense and keyword candidate
pools (filtered by scope and time window) → score fusion → same-session and graph
neighbour boosts → recency, frame and censor boosts → per-type floors →
near-duplicate removal. Every hit carries the signals that put it there.
"""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np

from nous._text import keyword_terms, validate_content
from nous.errors import InvalidInputError
from nous.memory import MemoryRepository
from nous.memory.lifecycle import rank_factor
from nous.models import MemoryKind, RecallHit
from nous.retrieval.timeparse import ParsedQuery, TimeWindow, parse_time_expression
from nous.retrieval.weights import DEFAULT_WEIGHTS, RetrievalWeights
from nous.storage import MemoryQuery, ScoredId
from nous.storage.base import CandidateInfo

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
    frame: str | None = None
    active_censors: tuple[str, ...] | None = None
    now: datetime | None = None  # reference time for "yesterday", "last week", recency
    parse_time: bool = True


@dataclass(slots=True)
class _Candidate:
    id: str
    score: float = 0.0
    signals: dict[str, float] | None = None

    def signal(self, name: str, value: float) -> None:
        if self.signals is None:
            self.signals = {}
        self.signals[name] = value

    def rounded_signals(self) -> dict[str, float]:
        return {k: round(float(v), 6) for k, v in (self.signals or {}).items()}


def cosine_search_query(repo: MemoryRepository, kinds: tuple[MemoryKind, ...] | None) -> MemoryQuery:
    """Scope for direct-cosine lookups (dedup): active, current memories of the given kinds."""
    return MemoryQuery(agent_id=repo.agent_id, kinds=kinds)


def validate_limit_and_window(limit: object, since: object, until: object) -> None:
    """Check a result limit (1..MAX_LIMIT) and an optional [since, until) window."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(f"limit must be an integer from 1 to {MAX_LIMIT}", field="limit")
    for name, value in (("since", since), ("until", until)):
        if value is not None and not isinstance(value, datetime):
            raise InvalidInputError(f"{name} must be a datetime", field=name)
    if since and until and since >= until:  # type: ignore[operator]
        raise InvalidInputError("since must be before until", field="since")


class Retriever:
    """Runs recall queries for one agent."""

    def __init__(self, repo: MemoryRepository, weights: RetrievalWeights = DEFAULT_WEIGHTS) -> None:
        self.repo = repo
        self.weights = weights

    # -- public ---------------------------------------------------------------------
    async def similar(
        self, text: str, *, kinds: tuple[MemoryKind, ...] | None = None, limit: int = 10
    ) -> list[ScoredId]:
        """Pure cosine neighbours of ``text`` (no fusion, no boosts): for dedup decisions."""
        vector = await self.repo.embedder.embed_one(text)
        return await self.repo.store.vector_search(cosine_search_query(self.repo, kinds), vector, limit)

    async def recall(self, q: RecallQuery) -> list[RecallHit]:
        """Top memories for the query, best first, each with its per-signal scores."""
        text = self._validate(q)
        now = (q.now or datetime.now(UTC)).astimezone(UTC)
        parsed = parse_time_expression(text, now) if q.parse_time else ParsedQuery(text, None, False)
        window = await self._resolve_window(parsed.window, q, now)
        scope = self._scope(q, window)
        candidates, memories = await self._fuse(parsed.text if window else text, scope)
        if not candidates and window is not None and q.since is None and q.until is None:
            window, scope = None, self._scope(q, None)  # nothing in the window: search everything
            candidates, memories = await self._fuse(text, scope)
        candidates = {i: c for i, c in candidates.items() if i in memories}
        self._group_boost(candidates, memories)
        await self._graph_boost(candidates, memories, scope)
        self._context_boosts(candidates, memories, q, now)
        if window is not None:
            for c in candidates.values():
                c.signal("time_window", 1.0)
        if parsed.recap:
            await self._recap(candidates, memories, q, window, now)
        ranked = self._floor(sorted(candidates.values(), key=lambda c: c.score, reverse=True), memories)
        ranked = await self._diversify(ranked, q.limit)
        full = await self.repo.store.get_many(self.repo.agent_id, [c.id for c in ranked])
        return [
            RecallHit(
                id=c.id,
                kind=full[c.id].kind,
                content=full[c.id].content,
                score=round(c.score, 6),
                signals=c.rounded_signals(),
                memory=full[c.id],
            )
            for c in ranked
            if c.id in full
        ]

    # -- steps ----------------------------------------------------------------------
    def _validate(self, q: RecallQuery) -> str:
        text = validate_content(q.text, field="query", max_bytes=self.repo.max_content_bytes)
        validate_limit_and_window(q.limit, q.since, q.until)
        if q.now is not None and not isinstance(q.now, datetime):
            raise InvalidInputError("now must be a datetime", field="now")
        return text

    def _scope(self, q: RecallQuery, window: TimeWindow | None) -> MemoryQuery:
        since, until = q.since, q.until
        if window is not None:
            since = max(filter(None, (since, window.since)), default=None)
            until = min(filter(None, (until, window.until)), default=None)
        return MemoryQuery(
            agent_id=self.repo.agent_id,
            kinds=q.kinds,
            user_id=q.user_id,
            session_id=q.session_id,
            since=since,
            until=until,
            include_inactive=q.include_inactive,
            include_superseded=q.include_superseded,
        )

    async def _resolve_window(
        self, window: TimeWindow | None, q: RecallQuery, now: datetime
    ) -> TimeWindow | None:
        """Turn 'before/after <event>' into dates by recalling the event itself."""
        if window is None or window.anchor is None:
            return window
        anchor_q = RecallQuery(
            text=window.anchor, limit=1, kinds=q.kinds, user_id=q.user_id, now=now, parse_time=False
        )
        hits = await self.recall(anchor_q)
        if not hits:
            return None
        at = hits[0].memory.occurred_at
        if window.anchor_direction == "after":
            return replace(window, since=at)
        return replace(window, until=at)

    async def _fuse(
        self, text: str, scope: MemoryQuery
    ) -> tuple[dict[str, _Candidate], dict[str, CandidateInfo]]:
        """Dense and keyword pools fused by normalised score, with the candidates' descriptions.

        Each side describes its hits as soon as its search returns, overlapping the other search.
        """
        w = self.weights
        store, agent_id = self.repo.store, self.repo.agent_id

        async def described(hits: list[ScoredId]) -> tuple[list[ScoredId], dict[str, CandidateInfo]]:
            return hits, await store.describe(agent_id, [h.id for h in hits])

        async def dense_side() -> tuple[list[ScoredId], dict[str, CandidateInfo]]:
            vector = await self.repo.embedder.embed_one(text)
            return await described(await store.vector_search(scope, vector, w.pool))

        async def keyword_side() -> tuple[list[ScoredId], dict[str, CandidateInfo]]:
            return await described(await store.keyword_search(scope, keyword_terms(text), w.pool))

        (dense, dense_info), (keyword, keyword_info) = await asyncio.gather(dense_side(), keyword_side())
        memories = {**dense_info, **keyword_info}
        candidates: dict[str, _Candidate] = {}
        if dense:
            lo, hi = dense[-1].score, dense[0].score
            span = hi - lo if hi > lo else 1.0
            for rank, hit in enumerate(dense):
                c = candidates.setdefault(hit.id, _Candidate(hit.id))
                c.score += w.dense * ((hit.score - lo) / span if hi > lo else 1.0)
                c.signal("dense", hit.score)
                c.signal("dense_rank", rank + 1)
        if keyword:
            top = keyword[0].score or 1.0
            for rank, hit in enumerate(keyword):
                c = candidates.setdefault(hit.id, _Candidate(hit.id))
                c.score += w.keyword * (hit.score / top)
                c.signal("keyword", hit.score)
                c.signal("keyword_rank", rank + 1)
        return candidates, memories

    def _group_boost(self, candidates: dict[str, _Candidate], memories: dict[str, CandidateInfo]) -> None:
        """Lift memories from the sessions whose memories match best (evidence clusters)."""
        w = self.weights
        if not candidates or w.group <= 0:
            return
        by_session: dict[str, list[float]] = defaultdict(list)
        for c in candidates.values():
            session = memories[c.id].session_id
            if session:
                by_session[session].append(c.score)
        if len(by_session) < 2:
            return
        strength = {s: sum(sorted(v, reverse=True)[: w.group_top]) for s, v in by_session.items()}
        best_session = max(strength.values()) or 1.0
        best = max(c.score for c in candidates.values())
        for c in candidates.values():
            session = memories[c.id].session_id
            if session:
                bonus = w.group * best * strength[session] / best_session
                c.score += bonus
                c.signal("group", bonus)

    async def _graph_boost(
        self, candidates: dict[str, _Candidate], memories: dict[str, CandidateInfo], scope: MemoryQuery
    ) -> None:
        """Neighbours (over edges of any relation) of the best memories get a share of their score."""
        w = self.weights
        if not candidates or w.graph <= 0:
            return
        seeds = sorted(candidates.values(), key=lambda c: c.score, reverse=True)[: w.graph_seeds]
        seed_score = {c.id: c.score for c in seeds}
        edges = await self.repo.store.edges(self.repo.agent_id, list(seed_score))
        bonus: dict[str, float] = defaultdict(float)
        for e in edges:
            for a, b in ((e.source_id, e.target_id), (e.target_id, e.source_id)):
                if a in seed_score:
                    bonus[b] += w.graph * seed_score[a] * e.weight
        missing = [i for i in bonus if i not in memories]
        if missing:
            memories.update(await self.repo.store.describe(self.repo.agent_id, missing))
        for mid, value in bonus.items():
            memory = memories.get(mid)
            if memory is None or not _in_scope(memory, scope):
                continue
            c = candidates.setdefault(mid, _Candidate(mid))
            c.score += value
            c.signal("graph", value)

    def _context_boosts(
        self,
        candidates: dict[str, _Candidate],
        memories: dict[str, CandidateInfo],
        q: RecallQuery,
        now: datetime,
    ) -> None:
        """Recency (additive); lifecycle, frame and censor overlap (multiplicative, spec 003)."""
        w = self.weights
        if not candidates:
            return
        best = max(c.score for c in candidates.values())
        active = set(q.active_censors or ())
        for c in candidates.values():
            memory = memories[c.id]
            age_days = max(0.0, (now - memory.occurred_at).total_seconds() / 86400)
            recency = w.recency * best * math.pow(0.5, age_days / w.recency_half_life_days)
            if recency > 1e-6:
                c.score += recency
                c.signal("recency", recency)
            fade = rank_factor(memory.lifecycle)
            if fade < 1.0:  # weak, dormant and archived memories rank lower but stay retrievable
                c.score *= fade
                c.signal("lifecycle", fade)
            if q.frame and memory.encoded_frame == q.frame:
                c.score *= w.frame
                c.signal("frame_boost", w.frame)
            encoded = set(memory.encoded_censors or ())
            if active and encoded:
                boost = 1.0 + w.censor * len(encoded & active) / len(encoded | active)
                if boost > 1.0:
                    c.score *= boost
                    c.signal("censor_boost", boost)

    async def _recap(
        self,
        candidates: dict[str, _Candidate],
        memories: dict[str, CandidateInfo],
        q: RecallQuery,
        window: TimeWindow | None,
        now: datetime,
    ) -> None:
        """'What did we talk about?': the latest episodes by time go first, whatever their topic."""
        w = self.weights
        if q.kinds is not None and MemoryKind.EPISODE not in q.kinds:
            return
        since = window.since if window and window.since else now - timedelta(days=w.recap_days)
        until = window.until if window and window.until else None
        recent = await self.repo.store.query(
            MemoryQuery(
                agent_id=self.repo.agent_id,
                kinds=(MemoryKind.EPISODE,),
                user_id=q.user_id,
                since=since,
                until=until,
                include_inactive=q.include_inactive,
                limit=w.recap_max,
            )
        )
        top = max((c.score for c in candidates.values()), default=1.0)
        for rank, episode in enumerate(recent):
            memories[episode.id] = CandidateInfo.of(episode)
            c = candidates.setdefault(episode.id, _Candidate(episode.id))
            c.score = max(c.score, top) + top * (w.recap_max - rank) / w.recap_max
            c.signal("recap", rank + 1)

    def _floor(self, ranked: list[_Candidate], memories: dict[str, CandidateInfo]) -> list[_Candidate]:
        """Drop memories that only the dense search found, with a cosine below their type's floor."""
        floors = self.weights.min_cosine
        out = []
        for c in ranked:
            s = c.signals or {}
            dense_only = "dense" in s and not s.keys() & {"keyword", "graph", "recap"}
            if dense_only and s["dense"] < floors.get(memories[c.id].kind, 0.0):
                continue
            out.append(c)
        return out

    async def _diversify(self, ranked: list[_Candidate], limit: int) -> list[_Candidate]:
        """Skip results nearly identical to a better one (greedy, cosine over stored vectors)."""
        head = ranked[: limit * 3]
        vectors = await self.repo.store.vectors(self.repo.agent_id, [c.id for c in head])
        chosen: list[_Candidate] = []
        kept: list[np.ndarray] = []
        for c in head:
            vec = vectors.get(c.id)
            if (
                vec is not None
                and kept
                and float(np.max(np.stack(kept) @ vec)) > self.weights.duplicate_cosine
            ):
                continue
            chosen.append(c)
            if vec is not None:
                kept.append(vec)
            if len(chosen) == limit:
                break
        return chosen


def _in_scope(memory: CandidateInfo, scope: MemoryQuery) -> bool:
    """Whether a memory reached by an edge passes the query's filters."""
    if scope.kinds and memory.kind not in scope.kinds:
        return False
    if not scope.include_inactive and not memory.active:
        return False
    if not scope.include_superseded and memory.superseded_by is not None:
        return False
    for name in ("user_id", "session_id"):
        wanted = getattr(scope, name)
        if wanted is not None and getattr(memory, name) != wanted:
            return False
    if scope.since and memory.occurred_at < scope.since:
        return False
    return not (scope.until and memory.occurred_at >= scope.until)
