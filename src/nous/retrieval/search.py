"""Hybrid recall over every memory type.

Pipeline: parse time expressions, recap and recency intent → dense and keyword candidate pools
(filtered by scope and time window) → reciprocal-rank fusion → session strength and graph
evidence → the linear re-ranker over the head (``rerank.py``) → lifecycle, frame and censor
multipliers → recap → per-type floors → near-duplicate removal. Every hit carries the signals
that put it there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from dataclasses import replace
from datetime import datetime, timedelta

import numpy as np

from nous._patterns import pattern_matches
from nous._text import keyword_terms, validate_content
from nous._time import as_utc, shifted, utcnow
from nous.errors import InvalidInputError
from nous.language.names import proper_names
from nous.memory import MemoryRepository
from nous.memory.lifecycle import rank_factor
from nous.models import Censor, EdgeRelation, Memory, MemoryKind, RecallHit
from nous.retrieval import rerank
from nous.retrieval.candidates import (
    FEATURE_INDEX,
    Candidate,
    GraphEvidence,
    Pools,
    Ranked,
    Run,
    in_scope,
    is_current,
    nothing_close,
    raw_score,
    scaled,
)
from nous.retrieval.intent import asks_to_cover, describes_unnamed, query_intent, second_step
from nous.retrieval.query import (
    RecallQuery,
    asks_about_recency,
    validate_limit_and_window,
    validate_min_score,
)
from nous.retrieval.timeparse import ParsedQuery, TimeWindow, parse_time_expression
from nous.retrieval.weights import DEFAULT_WEIGHTS, RetrievalWeights, preset
from nous.storage import MemoryQuery, ScoredId
from nous.storage.base import CandidateInfo

# Seconds a censor's pattern may take on the question when recall asks whether it fires: a
# pattern that runs out of time ranks as not firing (the censor check itself fails closed).
FIRES_TIMEOUT = 0.05


def cosine_search_query(repo: MemoryRepository, kinds: tuple[MemoryKind, ...] | None) -> MemoryQuery:
    """Scope for direct-cosine lookups (dedup): active, current memories of the given kinds."""
    return MemoryQuery(agent_id=repo.agent_id, kinds=kinds)


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
        """Top memories for the query, best first, each with its per-signal scores (a covering
        set: oldest first, see ``_cover``). A question that describes someone or something
        instead of naming them is answered in two steps (``_two_steps``)."""
        hits = await self._recall(q)
        if not hits or not self._in_two_steps(q):
            return hits
        return await self._two_steps(q, hits)

    def _weights_of(self, q: RecallQuery) -> RetrievalWeights:
        """The weights a query runs with: its preset's, else the retriever's."""
        return preset(q.preset) if q.preset is not None else self.weights

    def _in_two_steps(self, q: RecallQuery) -> bool:
        return (
            self._weights_of(q).boosts
            and isinstance(q.text, str)
            and describes_unnamed(q.text)
            and not self._covers(q)
        )

    async def _two_steps(self, q: RecallQuery, hits: list[RecallHit]) -> list[RecallHit]:
        """ "Where did the friend who went to the concert eat?": the best memory for the whole
        question names who that is ("Priya went to the concert..."); a second recall asks after
        the names with the words that memory does not answer ("Priya where did friend who eat").
        Its hits take every other place after the best one, the first step's keep the rest (a
        second step that misread the question costs half the places, never the best match)."""
        best = hits[0]
        names = proper_names(best.content, besides=q.text)
        if not names:
            return hits
        second = await self._recall(replace(q, text=second_step(q.text, best.content, names)))
        tagged = [h.model_copy(update={"signals": {**h.signals, "second_step": 1.0}}) for h in second]
        merged: dict[str, RecallHit] = {best.id: best}
        sources = [iter(tagged), iter(hits[1:])]  # turn about, each its next hit not yet placed
        while sources and len(merged) < q.limit:
            for source in list(sources):
                hit = next((h for h in source if h.id not in merged), None)
                if hit is None:
                    sources.remove(source)
                else:
                    merged[hit.id] = hit
        return list(merged.values())[: q.limit]

    async def recall_with_timeline(
        self, q: RecallQuery, timeline_limit: int
    ) -> tuple[list[RecallHit], list[RecallHit]]:
        """The best matches (as ``recall`` with ``cover=False``) and, for a question that asks for
        an order, a summary or everything so far, its covering set of up to ``timeline_limit``
        (else none), both ranked from one search."""
        q = replace(q, cover=False)
        timeline = self._covers(replace(q, cover=None))
        ranked = await self._ranked(q)
        if ranked is None:
            return [], []
        best = await self._hits(
            await self._diversify(ranked.candidates, q.limit, ranked.run.weights), ranked.run, q
        )
        covering = (
            await self._hits(
                await self._cover(ranked.candidates, timeline_limit, ranked.run.memories, ranked.run.weights),
                ranked.run,
                q,
            )
            if timeline
            else []
        )
        if best and self._in_two_steps(q):
            best = await self._two_steps(q, best)
        return best, covering

    async def _recall(self, q: RecallQuery) -> list[RecallHit]:
        cover = self._covers(q)
        ranked = await self._ranked(q)
        if ranked is None:
            return []
        run, w = ranked.run, ranked.run.weights
        if cover:
            chosen = await self._cover(ranked.candidates, q.limit, run.memories, w)
        else:
            chosen = await self._diversify(ranked.candidates, q.limit, w)
        return await self._hits(chosen, run, q)

    async def _ranked(self, q: RecallQuery) -> Ranked | None:
        """Every candidate scored, best first, above the floor and ``min_score`` (None: nothing
        comes near the question)."""
        wide = self._start_wide(q)
        try:
            run = await self._collect(q)
            if run.window is not None:
                for c in run.candidates.values():
                    c.signal("time_window", 1.0)
                if run.weights.boosts:
                    await self._outside_window(run, q, await wide if wide is not None else None)
        finally:
            if wide is not None and not wide.done():  # the window was empty: the wide search is not read
                wide.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await wide
        w, candidates, memories = run.weights, run.candidates, run.memories
        if q.min_score > 0 and w.rerank and not run.parsed.recap and nothing_close(candidates.values(), w):
            return None  # no memory shares a word with the question or comes near it in meaning
        self._context_boosts(candidates, memories, q)
        if run.parsed.recap:
            await self._recap(candidates, memories, q, run.window, run.now)
        ranked = self._floor(sorted(candidates.values(), key=lambda c: c.score, reverse=True), memories, w)
        return Ranked(run, [c for c in ranked if round(c.score, 6) >= q.min_score])  # as the hit reports it

    async def _hits(self, chosen: list[Candidate], run: Run, q: RecallQuery) -> list[RecallHit]:
        """The chosen candidates as hits, with their memories and signals as they stand now."""
        full = {
            **run.loaded,
            **await self.repo.store.get_many(
                self.repo.agent_id, [c.id for c in chosen if c.id not in run.loaded]
            ),
        }
        return [
            RecallHit(
                id=c.id,
                kind=full[c.id].kind,
                content=full[c.id].content,
                score=round(c.score, 6),
                signals=c.rounded_signals(),
                occurred_at=full[c.id].occurred_at,
                current=is_current(full[c.id], q.as_of),
                memory=full[c.id],
            )
            for c in chosen
            if c.id in full
        ]

    def _covers(self, q: RecallQuery) -> bool:
        """Whether recall returns a covering set: as asked, or (None) when the question asks for
        an order, a summary, a change over time or everything so far — and is not a recap, which
        brings the latest conversations first instead."""
        if q.cover is not None:
            if not isinstance(q.cover, bool):
                raise InvalidInputError("cover must be true, false or null", field="cover")
            return q.cover
        if not (isinstance(q.text, str) and asks_to_cover(q.text)):
            return False
        return not parse_time_expression(q.text, as_utc(q.now or utcnow())).recap

    async def rerank_features(self, q: RecallQuery) -> list[tuple[Memory, np.ndarray]]:
        """The head of the base ranking with its re-ranker features (for fitting the weights)."""
        run = await self._collect(q, keep_features=True)
        return [(run.loaded[i], x) for i, x in run.features if i in run.loaded]

    # -- steps ----------------------------------------------------------------------
    async def _collect(self, q: RecallQuery, *, keep_features: bool = False) -> Run:
        """Validate, search, fuse and re-rank: everything before the context multipliers."""
        text = self._validate(q)
        # Naive times are UTC, as everywhere in Nous (a naive ``since`` next to a parsed window's
        # aware one was a TypeError; a naive ``now`` was read as local time).
        q = replace(
            q,
            since=None if q.since is None else as_utc(q.since),
            until=None if q.until is None else as_utc(q.until),
        )
        w = self._weights_of(q)
        now = as_utc(q.now or utcnow())
        parsed = parse_time_expression(text, now) if q.parse_time else ParsedQuery(text, None, False)
        window = await self._resolve_window(parsed.window, q, now)
        scope = self._scope(q, window)
        # Inside a window the time words are left out of the keyword search ("May" would match
        # every mention of May); meaning and the re-ranker read the whole question.
        pools = await self._search(text, scope, w, keyword_text=parsed.text if window else text)
        if not pools.candidates and window is not None and q.since is None and q.until is None:
            window, scope = None, self._scope(q, None)  # nothing in the window: search everything
            pools = await self._search(text, scope, w)
        run = Run(w, now, parsed, window, pools.candidates, pools.memories, intent=query_intent(text))
        run.candidates = {i: c for i, c in run.candidates.items() if i in run.memories}
        session_strength = self._session_strength(run.candidates, run.memories, w) if w.boosts else {}
        graph = (
            await self._graph_evidence(run.candidates, run.memories, scope, w)
            if w.boosts
            else GraphEvidence({}, {})
        )
        if w.rerank:
            await self._rerank(run, pools, text, session_strength, graph, keep_features, q.user_id)
        else:
            for c in run.candidates.values():
                c.score = raw_score(c, w)
        if w.boosts and (parsed.recap or asks_about_recency(text)):
            self._recency(run)
        return run

    def _start_wide(self, q: RecallQuery) -> asyncio.Task[Run] | None:
        """The search of the whole question without its time window (``_outside_window``),
        started beside the windowed one when the question's words name a window: the two read
        the store at the same time instead of one after the other."""
        w = self._weights_of(q)
        if not (q.parse_time and w.boosts):
            return None
        text = self._validate(q)
        if parse_time_expression(text, as_utc(q.now or utcnow())).window is None:
            return None
        return asyncio.create_task(self._collect(replace(q, parse_time=False)))

    async def _outside_window(self, run: Run, q: RecallQuery, wide: Run | None = None) -> None:
        """A time window read from the question's words narrows the search, but not blindly: words
        can look like a time and not be one ("who looks after the BACS file?", "is it in April now
        instead of March?"). The question is also searched whole, without the window (``wide``,
        if already done); what that finds outside the window competes with its odds cut to
        ``outside_window``, so only a much stronger match than anything inside the window can
        pass it."""
        if wide is None:
            wide = await self._collect(replace(q, parse_time=False))
        window = run.window
        assert window is not None
        for cid, c in wide.candidates.items():
            if cid in run.candidates:
                continue
            at = wide.memories[cid].occurred_at
            if (window.since and at < window.since) or (window.until and at >= window.until):
                c.score = scaled(c.score, run.weights.outside_window)
                c.signal("outside_window", run.weights.outside_window)
            run.candidates[cid] = c
            run.memories[cid] = wide.memories[cid]
        run.loaded = {**wide.loaded, **run.loaded}

    def _recency(self, run: Run) -> None:
        """Questions about what is current: newer memories get up to ``recency`` more score,
        in proportion to their place between the oldest and newest of the head. Not applied
        to any other question: an answer is not better for being recent."""
        head = sorted(run.candidates.values(), key=lambda c: c.score, reverse=True)[
            : run.weights.rerank_depth
        ]
        times = [run.memories[c.id].occurred_at for c in head]
        if len(times) < 2 or min(times) == max(times):
            return
        oldest, span = min(times), (max(times) - min(times)).total_seconds()
        for c in head:
            share = (run.memories[c.id].occurred_at - oldest).total_seconds() / span
            if share > 0:
                c.score = scaled(c.score, 1.0 + run.weights.recency * share)
                c.signal("recency", share)

    def _validate(self, q: RecallQuery) -> str:
        text = validate_content(q.text, field="query", max_bytes=self.repo.max_content_bytes)
        validate_limit_and_window(q.limit, q.since, q.until)
        for name in ("now", "as_of"):
            if getattr(q, name) is not None and not isinstance(getattr(q, name), datetime):
                raise InvalidInputError(f"{name} must be a datetime", field=name)
        if q.preset is not None:
            preset(q.preset)
        validate_min_score(q.min_score)
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
            shared=q.shared,
            session_id=q.session_id,
            since=since,
            until=until,
            include_inactive=q.include_inactive,
            include_superseded=q.include_superseded,
            as_of=q.as_of,
            where=q.where,
        )

    async def _resolve_window(
        self, window: TimeWindow | None, q: RecallQuery, now: datetime
    ) -> TimeWindow | None:
        """Turn 'before/after <event>' into dates by recalling the event itself."""
        if window is None or window.anchor is None:
            return window
        anchor_q = RecallQuery(
            text=window.anchor,
            limit=1,
            kinds=q.kinds,
            user_id=q.user_id,
            now=now,
            as_of=q.as_of,
            parse_time=False,
            cover=False,
        )
        hits = await self.recall(anchor_q)
        if not hits:
            return None
        at = hits[0].memory.occurred_at
        if window.anchor_direction == "after":
            return replace(window, since=at)
        return replace(window, until=at)

    async def _search(
        self, text: str, scope: MemoryQuery, w: RetrievalWeights, *, keyword_text: str | None = None
    ) -> Pools:
        """Dense and keyword pools fused by reciprocal rank, with the candidates' descriptions
        (``keyword_text``, if given, is what the keyword side searches).

        Each side describes its hits as soon as its search returns, overlapping the other search.
        """
        store, agent_id = self.repo.store, self.repo.agent_id
        pools = Pools()

        async def described(hits: list[ScoredId]) -> tuple[list[ScoredId], dict[str, CandidateInfo]]:
            return hits, await store.describe(agent_id, [h.id for h in hits])

        async def dense_side() -> tuple[list[ScoredId], dict[str, CandidateInfo]]:
            if not w.dense:
                return [], {}
            pools.query_vector = await self.repo.embedder.embed_one(text)
            hits = await store.vector_search(scope, pools.query_vector, w.pool)
            knowledge = tuple(k for k in (scope.kinds or MemoryKind) if k != MemoryKind.TURN)
            if len(hits) == w.pool and w.kind_pool and knowledge and w.boosts:
                # The pool is full: conversation turns may have crowded out every other kind.
                seen = {h.id for h in hits}
                more = await store.vector_search(
                    replace(scope, kinds=knowledge), pools.query_vector, w.kind_pool
                )
                hits = hits + [h for h in more if h.id not in seen]
            return await described(hits)

        async def keyword_side() -> tuple[list[ScoredId], dict[str, CandidateInfo]]:
            if not w.keyword:
                return [], {}
            terms = keyword_terms(text if keyword_text is None else keyword_text)
            return await described(await store.keyword_search(scope, terms, w.pool))

        (dense, dense_info), (keyword, keyword_info) = await asyncio.gather(dense_side(), keyword_side())
        pools.memories = {**dense_info, **keyword_info}
        for rank, hit in enumerate(dense):  # knowledge found past the full pool ranks past its end
            c = pools.candidates.setdefault(hit.id, Candidate(hit.id))
            c.base += 1.0 / (w.rrf_k + rank + 1)
            c.signal("dense", hit.score)
            c.signal("dense_rank", rank + 1)
            pools.cosine[hit.id] = hit.score
        for rank, hit in enumerate(keyword):
            c = pools.candidates.setdefault(hit.id, Candidate(hit.id))
            c.base += 1.0 / (w.rrf_k + rank + 1)
            c.signal("keyword", hit.score)
            c.signal("keyword_rank", rank + 1)
        return pools

    def _session_strength(
        self, candidates: dict[str, Candidate], memories: dict[str, CandidateInfo], w: RetrievalWeights
    ) -> dict[str, float]:
        """Per session, the sum of its best base scores relative to the strongest session (0..1)."""
        by_session: dict[str, list[float]] = defaultdict(list)
        for c in candidates.values():
            session = memories[c.id].session_id
            if session:
                by_session[session].append(c.base)
        if len(by_session) < 2:
            return {}
        strength = {s: sum(sorted(v, reverse=True)[: w.group_top]) for s, v in by_session.items()}
        best = max(strength.values()) or 1.0
        return {s: v / best for s, v in strength.items()}

    async def _graph_evidence(
        self,
        candidates: dict[str, Candidate],
        memories: dict[str, CandidateInfo],
        scope: MemoryQuery,
        w: RetrievalWeights,
    ) -> GraphEvidence:
        """Neighbours (over edges of any relation) of the best memories, with a share of their
        relative strength (0..1), and the turns two ``follows`` steps from a best one (the same
        speaker's next or previous message, across the other's reply); both join the candidates."""
        if not candidates:
            return GraphEvidence({}, {})
        seeds = sorted(candidates.values(), key=lambda c: c.base, reverse=True)[: w.graph_seeds]
        top = seeds[0].base or 1.0
        seed_score = {c.id: c.base / top for c in seeds}
        edges = await self.repo.store.edges(self.repo.agent_id, list(seed_score))
        evidence: dict[str, float] = defaultdict(float)
        ones: dict[str, set[str]] = defaultdict(set)  # a seed -> the turns one follows-step away
        for e in edges:
            for a, b in ((e.source_id, e.target_id), (e.target_id, e.source_id)):
                if a in seed_score:
                    evidence[b] = max(evidence[b], seed_score[a] * min(1.0, e.weight))
                    if e.relation == EdgeRelation.FOLLOWS:
                        ones[a].add(b)
        via: dict[str, set[str]] = defaultdict(set)  # a turn one step from seeds -> those seeds
        for seed, near in ones.items():
            for mid in near:
                via[mid].add(seed)
        two_steps: dict[str, set[str]] = defaultdict(set)  # a turn two follows-steps from seeds -> those
        for e in await self.repo.store.edges(self.repo.agent_id, list(via)) if via else []:
            if e.relation != EdgeRelation.FOLLOWS:
                continue
            for a, b in ((e.source_id, e.target_id), (e.target_id, e.source_id)):
                for seed in via.get(a, ()):
                    if b != seed and b not in ones[seed] and b not in seed_score:
                        two_steps[b].add(seed)
        wanted = set(evidence) | set(two_steps)
        missing = [i for i in wanted if i not in memories]
        if missing:
            memories.update(await self.repo.store.describe(self.repo.agent_id, missing))
        if scope.where is not None and wanted:  # the metadata filter is the store's to apply
            passing = {
                m.id
                for m in await self.repo.store.query(replace(scope, ids=tuple(wanted), limit=len(wanted)))
            }
            wanted &= passing
        out = GraphEvidence({}, {})
        for mid in wanted:
            memory = memories.get(mid)
            if memory is None or not in_scope(memory, scope):
                continue
            candidates.setdefault(mid, Candidate(mid))
            if mid in evidence:
                out.neighbours[mid] = evidence[mid]
            if mid in two_steps:
                out.two_steps[mid] = {seed: seed_score[seed] for seed in two_steps[mid]}
        return out

    async def _rerank(
        self,
        run: Run,
        pools: Pools,
        query: str,
        session_strength: dict[str, float],
        graph: GraphEvidence,
        keep_features: bool,
        user_id: str | None,
    ) -> None:
        """Score the head of the base ranking (plus graph neighbours) with the linear re-ranker;
        the rest keep their order below it."""
        w, candidates, memories = run.weights, run.candidates, run.memories
        ordered = sorted(candidates.values(), key=lambda c: c.base, reverse=True)
        head = ordered[: w.rerank_depth]
        head_ids = {c.id for c in head}
        head += [candidates[i] for i in graph.neighbours if i not in head_ids][: w.graph_seeds * 4]
        head_ids = {c.id for c in head}
        head += [candidates[i] for i in graph.two_steps if i not in head_ids]
        head_ids = {c.id for c in head}
        # The best few of every kind join the head: a kind with few members (one decision among
        # thousands of conversation turns) is judged by the re-ranker, not cut by the fused rank.
        per_kind: dict[MemoryKind, int] = defaultdict(int)
        for c in ordered:
            kind = memories[c.id].kind
            if per_kind[kind] < w.per_kind and c.id not in head_ids:
                head.append(c)
            per_kind[kind] += 1
        loaded = await self.repo.store.get_many(self.repo.agent_id, [c.id for c in head])
        run.loaded = loaded
        head = [c for c in head if c.id in loaded]
        cosine = dict(pools.cosine)
        unscored = [c.id for c in head if c.id not in cosine]
        if unscored and pools.query_vector is not None:
            for mid, vec in (await self.repo.store.vectors(self.repo.agent_id, unscored)).items():
                cosine[mid] = float(vec @ pools.query_vector)
        facts = []
        for rank, c in enumerate(head):
            memory, info = loaded[c.id], memories[c.id]
            facts.append(
                rerank.CandidateFacts(
                    rrf=c.base,
                    rank=rank,
                    cosine=cosine.get(c.id, 0.0),
                    content=memory.keyword_text(),
                    context=memory.keyword_context(),
                    session_strength=session_strength.get(info.session_id or "", 0.0),
                    graph=graph.neighbours.get(c.id, 0.0),
                    continues=_continues(memory, loaded, graph.two_steps.get(c.id)),
                    speaker=getattr(memory, "speaker", None),
                    role=getattr(memory, "role", None),
                    kind_match=run.intent.matches(memory.kind, memory.category),
                    kind=memory.kind.value,
                    own=memory.user_id is not None and memory.user_id == user_id,
                    fires=isinstance(memory, Censor)
                    and pattern_matches(memory.trigger_pattern, query, timeout=FIRES_TIMEOUT) is True,
                )
            )
        terms = {rerank.stem(t) for t in keyword_terms(query)}
        matrix = rerank.feature_matrix(facts, terms, query, w.rerank_depth)
        scores = rerank.score(matrix)
        floor = float(scores.min()) if len(scores) else 1.0
        best_base = ordered[0].base if ordered and ordered[0].base > 0 else 1.0
        for c in candidates.values():  # the tail stays in base order, below the head
            c.score = floor * 0.5 * c.base / best_base
        for c, s, x in zip(head, scores, matrix, strict=True):
            c.score = float(s)
            c.signal("rerank", float(s))
            if x[FEATURE_INDEX["session"]]:
                c.signal("session", float(x[FEATURE_INDEX["session"]]))
            if x[FEATURE_INDEX["graph"]]:
                c.signal("graph", float(x[FEATURE_INDEX["graph"]]))
            if x[FEATURE_INDEX["kind_match"]]:
                c.signal("kind_match", 1.0)
            if x[FEATURE_INDEX["fires"]]:
                c.signal("fires", 1.0)
            if x[FEATURE_INDEX["continues"]]:
                c.signal("continues", float(x[FEATURE_INDEX["continues"]]))
            if keep_features:
                run.features.append((c.id, x))

    def _context_boosts(
        self, candidates: dict[str, Candidate], memories: dict[str, CandidateInfo], q: RecallQuery
    ) -> None:
        """Lifecycle, frame and censor overlap (multiplicative)."""
        w = self._weights_of(q)
        active = set(q.active_censors or ())
        for c in candidates.values():
            memory = memories[c.id]
            fade = rank_factor(memory.lifecycle)
            if fade < 1.0:  # weak, dormant and archived memories rank lower but stay retrievable
                c.score = scaled(c.score, fade)
                c.signal("lifecycle", fade)
            if q.frame and memory.encoded_frame == q.frame:
                c.score = scaled(c.score, w.frame)
                c.signal("frame_boost", w.frame)
            encoded = set(memory.encoded_censors or ())
            if active and encoded:
                boost = 1.0 + w.censor * len(encoded & active) / len(encoded | active)
                if boost > 1.0:
                    c.score = scaled(c.score, boost)
                    c.signal("censor_boost", boost)
        if q.include_superseded and q.as_of is None:
            self._below_successors(candidates, memories, w)

    @staticmethod
    def _below_successors(
        candidates: dict[str, Candidate], memories: dict[str, CandidateInfo], w: RetrievalWeights
    ) -> None:
        """Asked for the history too, a replaced memory still never ranks above what replaced it:
        just below its successor when that is among the results, faded otherwise."""
        for c in candidates.values():
            successor = memories[c.id].superseded_by
            if successor is None:
                continue
            if successor in candidates:
                c.score = min(c.score, candidates[successor].score * 0.99)
            else:
                c.score = scaled(c.score, w.superseded)
            c.signal("superseded", 1.0)

    async def _recap(
        self,
        candidates: dict[str, Candidate],
        memories: dict[str, CandidateInfo],
        q: RecallQuery,
        window: TimeWindow | None,
        now: datetime,
    ) -> None:
        """'What did we talk about?': the latest episodes by time go first, whatever their topic."""
        w = self.weights
        if q.kinds is not None and MemoryKind.EPISODE not in q.kinds:
            return
        since = window.since if window and window.since else shifted(now, -timedelta(days=w.recap_days))
        until = window.until if window and window.until else None
        recent = await self.repo.store.query(
            MemoryQuery(
                agent_id=self.repo.agent_id,
                kinds=(MemoryKind.EPISODE,),
                user_id=q.user_id,
                shared=q.shared,
                since=since,
                until=until,
                as_of=q.as_of,
                include_inactive=q.include_inactive,
                where=q.where,
                limit=w.recap_max,
            )
        )
        top = min(1.0, max((c.score for c in candidates.values()), default=0.0))
        for rank, episode in enumerate(recent):
            memories[episode.id] = CandidateInfo.of(episode)
            c = candidates.setdefault(episode.id, Candidate(episode.id))
            # Above everything else, in order of time, and still a share of 1.
            c.score = top + (1.0 - top) * (w.recap_max - rank) / (w.recap_max + 1)
            c.signal("recap", rank + 1)

    def _floor(
        self, ranked: list[Candidate], memories: dict[str, CandidateInfo], w: RetrievalWeights
    ) -> list[Candidate]:
        """Drop memories that only the dense search found, with a cosine below their type's floor
        (a memory of the kind the question asks for is kept: "what did we decide?" shares neither
        words nor much meaning with the decision it asks for)."""
        floors = w.min_cosine
        out = []
        for c in ranked:
            s = c.signals or {}
            dense_only = "dense" in s and not s.keys() & {"keyword", "graph", "recap", "kind_match"}
            if dense_only and s["dense"] < floors.get(memories[c.id].kind, 0.0):
                continue
            out.append(c)
        return out

    async def _cover(
        self, ranked: list[Candidate], limit: int, memories: dict[str, CandidateInfo], w: RetrievalWeights
    ) -> list[Candidate]:
        """A covering set for a question whose evidence is spread over time: the strong results
        (the best ``limit * cover_depth`` scoring at least ``cover_floor`` of the best, a repeated
        line once) in time order, cut into ``limit`` consecutive stretches holding equal shares
        of their total score, and the best of each: one per step of the story rather than the
        most similar few, oldest first. Weighing the stretches by score keeps a weak line from
        taking a step of its own. (Chosen leave-one-out: docs/retrieval.md, "Covering recall".)"""
        if not ranked:
            return []
        top = ranked[0].score
        pool = [c for c in ranked[: limit * w.cover_depth] if c.score >= top * w.cover_floor]
        pool = await self._diversify(pool, len(pool), w)  # a repeated line is one step, not several
        pool.sort(key=lambda c: memories[c.id].occurred_at)
        steps = min(limit, len(pool))
        weights = [max(c.score, 1e-9) for c in pool]
        total, before = sum(weights), 0.0
        stretches: list[list[Candidate]] = [[] for _ in range(steps)]
        for c, weight in zip(pool, weights, strict=True):  # a memory's stretch: where its middle falls
            stretches[min(steps - 1, int((before + weight / 2) / total * steps))].append(c)
            before += weight
        chosen = [max(stretch, key=lambda c: c.score) for stretch in stretches if stretch]
        for step, c in enumerate(chosen):
            c.signal("cover", step + 1)
        return chosen

    async def _diversify(self, ranked: list[Candidate], limit: int, w: RetrievalWeights) -> list[Candidate]:
        """Skip results nearly identical to a better one (greedy, cosine over stored vectors)."""
        head = ranked[: limit * 3]
        vectors = await self.repo.store.vectors(self.repo.agent_id, [c.id for c in head])
        chosen: list[Candidate] = []
        kept: list[np.ndarray] = []
        for c in head:
            vec = vectors.get(c.id)
            if vec is not None and kept and float(np.max(np.stack(kept) @ vec)) > w.duplicate_cosine:
                continue
            chosen.append(c)
            if vec is not None:
                kept.append(vec)
            if len(chosen) == limit:
                break
        return chosen


def _continues(memory: Memory, loaded: dict[str, Memory], seeds: dict[str, float] | None) -> float:
    """The strength of the best of the best memories whose speaker goes on (or had begun) in this
    turn, two turns away across the other's reply ("Check out my painting!" ... "I painted it
    after my visit to the centre"); 0 when it is no such turn."""
    speaker = getattr(memory, "speaker", None)
    if not seeds or speaker is None or speaker == getattr(memory, "role", None):
        return 0.0  # a user or an assistant known by its role alone: see docs/retrieval.md
    return max(
        (
            strength
            for seed, strength in seeds.items()
            if getattr(loaded.get(seed), "speaker", None) == speaker
        ),
        default=0.0,
    )
