"""The turn loop: ``pre_turn`` before the agent answers, ``post_turn`` after, ``end_session`` at
the end. Everything a session needs between calls is in the store (``heart.sessions``), so a
restart or another process continues it.

pre_turn: resolve a follow-up to its topic → choose the frame → record the user message →
open (or dedup) the session's episode → gather identity, profile, censors, working memory,
recent episodes and one frame-boosted recall → assemble the context within budget.
post_turn: record the reply (turns, tools, characters), store the exchange as two turns of the
session's episode, link the decisions and facts written during the turn to it; what the user asked
to be remembered ("remember that I hate long meetings") becomes a fact at once, through the
dedup write path, not at session end.
end_session: close the episode (or discard it if the session stayed trivial), turn reflection
lines into facts through the dedup write path, and mark the session ended for the event pipeline.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from nous._text import validate_content
from nous._time import as_utc, shifted, utcnow
from nous.brain import Brain
from nous.cognitive.context import SCORE_FLOOR, Context, ContextInputs, build_context
from nous.cognitive.frames import Budget, Frame, get_frame
from nous.cognitive.selection import FrameChoice, FrameSelector, is_greeting
from nous.errors import ConflictError, InvalidInputError
from nous.events.extraction import remembered_facts
from nous.heart import Heart
from nous.heart.identity import Identity
from nous.heart.sessions import EpisodeStart
from nous.language.instructions import message_category
from nous.models import (
    Censor,
    Edge,
    EdgeRelation,
    Episode,
    Fact,
    FactCategory,
    Memory,
    MemoryKind,
    Provenance,
    RecallHit,
    Turn,
    WriteResult,
)
from nous.models.session import IdentitySection, SessionState
from nous.retrieval import RecallQuery, Retriever
from nous.retrieval.timeparse import parse_time_expression
from nous.storage.base import NoteReply, PutEdge, WriteOp

PREVIEW_SESSION = "preview"  # the session id a preview without one reads as (never written)
RETRIEVE_LIMIT = 40  # memories one recall brings for the retrieved sections to choose from
FILL_ITEM_TOKENS = 40  # a short memory (a chat message, a fact) with its date, in tokens
MAX_RETRIEVE_LIMIT = 200
TIMELINE_LIMIT = 12  # steps a covering recall brings for the "In order" section
ALREADY_SAID_TURNS = 4  # the session's last turns: the agent has them, the context leaves them out
FOLLOW_UP = re.compile(
    r"^\s*(tell me more|more|go on|continue|why\??|how so\??|and (then|the other( one)?|that)|what about (it|that|them)"
    r"|elaborate|explain( that| more)?|really\??|such as\??|like what\??|which one\??|and\??)\b",
    re.IGNORECASE,
)
FOLLOW_UP_MAX_WORDS = 6
REFLECTION_MAX_LINES = 20


class TurnResult(BaseModel):
    """What the agent did in a turn: its reply, the tools it used, the memories it wrote."""

    reply: str
    tools_used: list[str] = Field(default_factory=list)
    decision_ids: list[str] = Field(default_factory=list)
    fact_ids: list[str] = Field(default_factory=list)


class TurnContext(Context):
    """The context of a turn plus what pre_turn did to the session."""

    episode_action: str = Field(description="created, already_open, duplicate or not_significant")
    episode_id: str | None = Field(default=None, description="The session's episode, if it has one.")
    duplicate_of: str | None = Field(default=None, description="An existing episode this turn repeats.")
    turn: int = Field(description="The number of this turn in the session (1-based).")


class SessionEnd(BaseModel):
    """How a session ended: its final state, its closed (or discarded) episode, facts learned."""

    session: SessionState
    episode: Episode | None = None
    facts: list[WriteResult] = Field(default_factory=list)
    ended_now: bool = True  # False: the session had already ended (by this call's rivals or earlier)


@dataclass(slots=True)
class _TurnPlan:
    """What a turn's reads decided before anything is written or assembled."""

    session_id: str
    user_id: str | None
    text: str
    query: str  # the text retrieval uses (a follow-up resolved to its topic)
    now: datetime
    follow_up: bool
    choice: FrameChoice
    frame: Frame
    forced: bool
    limits: Budget
    identity: list[IdentitySection]
    censors: list[Censor]
    recap: bool
    as_of: datetime | None = None  # previews only: the store as it stood then
    fill: bool = False  # the caller gave the total: what has something to show takes the room

    @property
    def censor_ids(self) -> list[str]:
        return [c.id for c in self.censors]


def is_follow_up(text: str) -> bool:
    return len(text.split()) <= FOLLOW_UP_MAX_WORDS and bool(FOLLOW_UP.match(text))


class CognitiveLayer:
    """The turn loop of one agent over its heart, brain and retriever."""

    def __init__(
        self,
        heart: Heart,
        brain: Brain,
        retriever: Retriever,
        *,
        recent_hours: float = 48.0,
    ) -> None:
        self.recent_hours = recent_hours
        self.heart = heart
        self.brain = brain
        self.retriever = retriever
        self.repo = heart.sessions.repo
        self.identity = Identity(self.repo)
        self.selector = FrameSelector(self.repo.embedder)

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
        """Everything before the agent answers; returns the context to give it."""
        plan = await self._plan(session_id, user_text, user_id=user_id, frame=frame, budget=budget, at=at)

        async def record() -> tuple[SessionState, EpisodeStart]:
            state = await self.heart.sessions.note_user(
                plan.session_id,
                plan.text,
                user_id=plan.user_id,
                frame=plan.frame.id,
                active_censors=plan.censor_ids,
                topic=None if plan.follow_up or plan.choice.greeting else plan.text,
                at=plan.now,
            )
            episode = await self.heart.sessions.start_episode(
                state, plan.text, frame=plan.frame.id, censors=plan.censor_ids, at=plan.now, actor=actor
            )
            return state, episode

        (state, episode), context = await asyncio.gather(record(), self._assemble(plan))
        self.repo.note_recalled(
            [i.id for s in context.sections if s.name != "recent" for i in s.items if i.id]
        )
        return TurnContext(
            **dict(context),  # its fields as they are: the sections are not dumped and validated again
            episode_action=episode.action.value,
            episode_id=episode.episode_id,
            duplicate_of=episode.duplicate_of,
            turn=state.turn_count + 1,
        )

    async def preview(
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
        """The context ``pre_turn`` would build for this message, writing nothing: no session, no
        turn, no episode, no recall review. A preview never changes what the next one sees. With
        ``as_of``, the store as it stood at that time."""
        plan = await self._plan(
            session_id if session_id is not None else PREVIEW_SESSION,
            user_text,
            user_id=user_id,
            frame=frame,
            budget=budget,
            at=at,
            preview=True,
        )
        plan.as_of = None if as_of is None else as_utc(as_of)
        return await self._assemble(plan)

    async def _plan(
        self,
        session_id: str,
        user_text: str,
        *,
        user_id: str | None,
        frame: str | None,
        budget: int | None,
        at: datetime | None,
        preview: bool = False,
    ) -> _TurnPlan:
        """Validate the message and decide the frame, from reads only."""
        session_id = _session_id(session_id)
        user_id = _user_id(user_id)
        text = validate_content(user_text)
        _fits_as_turn("user", text, self.repo.max_content_bytes, "user_text")
        forced = get_frame(frame) if frame is not None else None
        limits_override = budget
        now = as_utc(at) if at is not None else utcnow()  # a naive time is UTC
        reads = asyncio.gather(
            self.heart.sessions.find(session_id),
            self.identity.sections(),
            self.heart.censors.active(user_id=user_id),
        )
        if is_greeting(text):  # small talk is not embedded
            prior, identity, censors = await reads
        else:  # the message's vector (frame and recall read it) is computed while the reads run
            (prior, identity, censors), _ = await asyncio.gather(reads, self.repo.embedder.embed_one(text))
        if prior is not None and prior.ended and not preview:
            raise ConflictError(f"session {session_id!r} has ended; start a new one")
        if prior is not None and prior.user_id and prior.user_id != user_id:
            user_id = prior.user_id  # a session belongs to the user it started with
            censors = await self.heart.censors.active(user_id=user_id)  # the censors binding that user
        follow_up = prior is not None and prior.topic is not None and is_follow_up(text)
        query = f"{prior.topic} {text}" if follow_up and prior and prior.topic else text
        # initiation only opens a session: "prior" is the session with a message already recorded
        choice = await self.selector.select(query, has_identity=bool(identity), first_turn=prior is None)
        chosen = forced or get_frame(choice.frame)
        return _TurnPlan(
            session_id=session_id,
            user_id=user_id,
            text=text,
            query=query,
            now=now,
            follow_up=follow_up,
            choice=choice,
            frame=chosen,
            forced=forced is not None,
            limits=_budget(chosen.budget, limits_override),
            fill=limits_override is not None,
            identity=identity,
            censors=censors,
            recap=parse_time_expression(query, now).recap,
        )

    async def _assemble(self, plan: _TurnPlan) -> Context:
        """Gather what the context shows (all reads) and build it within the frame's budgets."""
        greeting = plan.choice.greeting and not plan.forced

        async def hits() -> tuple[list[RecallHit], list[RecallHit]]:
            """The best matches and, for a question that asks for an order, a summary or
            everything so far, its covering set (the "In order" section), from one search."""
            if greeting or not plan.limits.retrieves:
                return [], []
            query = RecallQuery(
                text=plan.query,
                limit=retrieve_limit(plan.limits.total) if plan.fill else RETRIEVE_LIMIT,
                user_id=plan.user_id,
                frame=plan.frame.id,
                active_censors=tuple(plan.censor_ids),
                now=plan.now,
                as_of=plan.as_of,
            )
            return await self.retriever.recall_with_timeline(query, TIMELINE_LIMIT)

        async def profile() -> list[Fact]:
            return await self.identity.user_profile(plan.user_id) if plan.user_id else []

        facts, told, wm, recent, (found, timeline), said = await asyncio.gather(
            profile(),
            self.identity.standing_instructions(plan.user_id, about=plan.query, before=plan.now),
            self.heart.working_memory.get(plan.session_id),
            self._recent_episodes(plan.user_id, plan.session_id, plan.now),
            hits(),
            self._already_said(plan.session_id),
        )
        warnings = [i.content for i in wm.items if i.kind == "censor_warning"]
        replaced = await self._replaced(found)
        return build_context(
            ContextInputs(
                session_id=plan.session_id,
                frame=plan.frame,
                frame_confidence=1.0 if plan.forced else plan.choice.confidence,
                query=plan.query,
                greeting=greeting,
                recap=plan.recap,
                budget=plan.limits,
                fill=plan.fill,
                identity=plan.identity,
                profile=facts,
                instructions=told,
                censors=plan.censors,
                warnings=warnings,
                working_memory=wm,
                recent=recent,
                hits=found,
                timeline=timeline,
                replaced=replaced,
                already_said=said,
                user_id=plan.user_id,
                score_floor=0.0 if plan.fill else SCORE_FLOOR,  # a chosen total is filled
            )
        )

    async def _replaced(self, hits: list[RecallHit]) -> dict[str, Memory]:
        """For each recalled fact that superseded another, the fact it replaced (newest edge)."""
        facts = [h.id for h in hits if h.kind == MemoryKind.FACT]
        if not facts:
            return {}
        edges = await self.repo.store.edges(self.repo.agent_id, facts)
        wanted = set(facts)
        pairs = {
            e.source_id: e.target_id
            for e in edges
            if e.relation == EdgeRelation.SUPERSEDES and e.source_id in wanted
        }
        found = await self.repo.store.get_many(self.repo.agent_id, list(pairs.values()))
        return {new: found[old] for new, old in pairs.items() if old in found}

    async def _recent_episodes(self, user_id: str | None, session_id: str, now: datetime) -> list[Memory]:
        """Episodes of the last ``recent_hours`` before ``now`` (spec 004: 48 hours), this session's
        own and those still running in other sessions left out."""
        found = await self.repo.query(
            kinds=(MemoryKind.EPISODE,),
            user_id=user_id,
            shared=True,
            since=shifted(now, -timedelta(hours=self.recent_hours)),
            until=now,
            limit=12,
        )
        return [
            e
            for e in found
            if e.session_id != session_id and not (isinstance(e, Episode) and e.running_elsewhere(session_id))
        ]

    async def _already_said(self, session_id: str) -> list[str]:
        turns = await self.repo.query(
            kinds=(MemoryKind.TURN,), session_id=session_id, limit=ALREADY_SAID_TURNS
        )
        return [t.content for t in turns]

    async def post_turn(
        self,
        session_id: str,
        result: TurnResult | str,
        *,
        at: datetime | None = None,
        actor: str = "api",
    ) -> SessionState:
        """Record the agent's reply: counters, the exchange as two turns, links to what it wrote."""
        session_id = _session_id(session_id)
        outcome = TurnResult(reply=result) if isinstance(result, str) else result
        reply = validate_content(outcome.reply)
        _fits_as_turn("assistant", reply, self.repo.max_content_bytes, "reply")
        now = as_utc(at) if at is not None else utcnow()  # a naive time is UTC
        before = await self.heart.sessions.get(session_id)
        episode_id = before.episode_id
        turns = [
            self._turn(before, role, content, episode_id, at)
            for role, content, at in (
                ("user", before.last_user_text, before.last_active_at),
                ("assistant", reply, now),
            )
            if content
        ]
        # The reply is counted in the transaction that stores the turns: a turn that cannot be
        # stored (a reply too long with its "assistant: " prefix) left a turn counted, unwritten.
        ops: list[WriteOp] = [
            NoteReply(self.repo.agent_id, session_id, len(reply), sorted(set(outcome.tools_used)), now)
        ]
        if episode_id is not None:
            for memory_id in [*(t.id for t in turns), *outcome.decision_ids, *outcome.fact_ids]:
                ops.append(
                    PutEdge(
                        Edge(
                            source_id=memory_id,
                            target_id=episode_id,
                            relation=EdgeRelation.PART_OF,
                            agent_id=self.repo.agent_id,
                        )
                    )
                )
        if len(turns) == 2:
            ops.append(
                PutEdge(
                    Edge(
                        source_id=turns[1].id,
                        target_id=turns[0].id,
                        relation=EdgeRelation.FOLLOWS,
                        agent_id=self.repo.agent_id,
                    )
                )
            )
        await self.repo.create_many(turns, actor=actor, extra_ops=ops)
        if before.last_user_text and turns and turns[0].role == "user":
            await self._remember(before, before.last_user_text, turns[0], actor)
        return await self.heart.sessions.get(session_id)

    async def _remember(self, state: SessionState, text: str, turn: Turn, actor: str) -> list[WriteResult]:
        """Store what ``text`` (the user's message, stored as ``turn``) asks to be remembered, as
        facts about the user linked to the session's episode."""
        results: list[WriteResult] = []
        for candidate in remembered_facts(text, user_id=state.user_id, at=turn.occurred_at):
            result = await self.heart.facts.learn(
                candidate.text,
                subject=candidate.subject,
                category=candidate.category,
                source="remember",
                user_id=state.user_id,
                session_id=state.session_id,
                frame=state.frame,
                censors=state.active_censors or None,
                provenance=Provenance(
                    source="remember",
                    session_id=state.session_id,
                    episode_id=state.episode_id,
                    turn_ids=[turn.id],
                    actor=actor,
                ),
                actor=actor,
            )
            results.append(result)
            if state.episode_id is not None and result.id:
                edge = Edge(
                    source_id=result.id,
                    target_id=state.episode_id,
                    relation=EdgeRelation.PART_OF,
                    agent_id=self.repo.agent_id,
                )
                await self.repo.store.apply([PutEdge(edge)])
        return results

    def _turn(
        self, state: SessionState, role: str, content: str, episode_id: str | None, at: datetime
    ) -> Turn:
        return Turn(
            agent_id=self.repo.agent_id,
            user_id=state.user_id,
            session_id=state.session_id,
            role=role,
            speaker=role,
            content=f"{role}: {content}",
            category=message_category(role, content),
            episode_id=episode_id,
            occurred_at=at,
            encoded_frame=state.frame,
            encoded_censors=state.active_censors or None,
            provenance=Provenance(source="turn", session_id=state.session_id, episode_id=episode_id),
        )

    async def end_session(
        self,
        session_id: str,
        *,
        reflection: str | None = None,
        at: datetime | None = None,
        actor: str = "api",
    ) -> SessionEnd:
        """End the session; each line of ``reflection`` becomes a lesson fact (deduplicated)."""
        session_id = _session_id(session_id)
        state, episode, ended_now = await self.heart.sessions.end(
            session_id, reflection=reflection, at=None if at is None else as_utc(at), actor=actor
        )
        facts: list[WriteResult] = []
        for line in _lines(reflection) if ended_now else []:
            facts.append(
                await self.heart.facts.learn(
                    line,
                    category=FactCategory.LESSON,
                    source="reflection",
                    user_id=state.user_id,
                    session_id=session_id,
                    frame=state.frame,
                    censors=state.active_censors or None,
                    actor=actor,
                )
            )
        return SessionEnd(session=state, episode=episode, facts=facts, ended_now=ended_now)


def _lines(reflection: str | None) -> list[str]:
    if not reflection:
        return []
    lines = [re.sub(r"^\s*([-*•]|\d+[.)])\s*", "", line).strip() for line in reflection.splitlines()]
    return [line for line in lines if len(line) >= 8][:REFLECTION_MAX_LINES]


def _session_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 200:
        raise InvalidInputError(
            "session_id must be a non-empty string of at most 200 characters", field="session_id"
        )
    # Checked before the session row is written: a control character or a lone surrogate was
    # refused only by the episode written after it, leaving a session no later turn could use.
    return validate_content(session_id, field="session_id")


def _fits_as_turn(role: str, text: str, max_bytes: int, field: str) -> None:
    """Refuse a message that could not be stored as its turn ("role: text"): accepted, it made
    every later post_turn of the session fail."""
    size = len(f"{role}: {text}".encode())
    if size > max_bytes:
        raise InvalidInputError(
            f"{field} is {size} bytes as a turn (with '{role}: '); the limit is {max_bytes}", field=field
        )


def _user_id(user_id: str | None) -> str | None:
    """The user id as a memory would accept it (checked before anything is written)."""
    if user_id is None:
        return None
    if not isinstance(user_id, str) or len(user_id) > 200:
        raise InvalidInputError("user_id must be a string of at most 200 characters", field="user_id")
    if user_id:
        validate_content(user_id, field="user_id")
    return user_id


MIN_BUDGET = 200  # tokens: below this a context holds hardly one memory with its date


def retrieve_limit(total: int) -> int:
    """How many memories a recall brings for a context of ``total`` tokens the caller chose: enough
    short ones to fill it (``FILL_ITEM_TOKENS`` each), never fewer than ``RETRIEVE_LIMIT``."""
    return max(RETRIEVE_LIMIT, min(MAX_RETRIEVE_LIMIT, total // FILL_ITEM_TOKENS))


def _budget(frame_budget: Budget, total: int | None) -> Budget:
    """The frame's budgets, with the total overridden if asked. The fixed sections take what they
    use within their own ceilings and the retrieved ones share the rest (``build_context``), so
    any total from ``MIN_BUDGET`` up holds what fits."""
    if total is None:
        return frame_budget
    if isinstance(total, bool) or not isinstance(total, int):
        raise InvalidInputError("budget must be a whole number of tokens", field="budget")
    if total < MIN_BUDGET:
        raise InvalidInputError(f"budget must be at least {MIN_BUDGET} tokens (got {total})", field="budget")
    return frame_budget.model_copy(update={"total": total})
