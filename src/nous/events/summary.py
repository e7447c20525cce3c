"""Episode summaries: the structured schema, the decision context, and the language-model path.

The schema bounds every field, so an absurd reply (an empty title, a 5,000-word summary, 200
candidate facts) fails validation, gets one repair request, and otherwise fails the event (which
is retried, then dead-lettered) instead of landing in the store.
"""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from nous.events.context import PipelineContext
from nous.events.transcript import truncate_transcript
from nous.llm import ChatMessage, complete_structured
from nous.models import Decision, EdgeRelation, Episode, Memory, MemoryKind, Turn
from nous.storage import MemoryQuery

log = logging.getLogger(__name__)

Outcome = Literal["resolved", "partial", "unresolved", "informational"]
MAX_SUMMARY_WORDS = 250
MAX_CANDIDATE_FACTS = 20


class EpisodeSummary(BaseModel):
    """What a finished conversation leaves behind."""

    model_config = ConfigDict(extra="ignore")

    title: str = Field(min_length=3, max_length=120)
    summary: str = Field(min_length=20, max_length=2500)
    key_points: list[str] = Field(default_factory=list, max_length=10)  # reusable lessons
    outcome: Outcome
    outcome_rationale: str = Field(default="", max_length=500)
    topics: list[str] = Field(default_factory=list, max_length=10)
    candidate_facts: list[str] = Field(default_factory=list, max_length=MAX_CANDIDATE_FACTS)

    @field_validator("summary")
    @classmethod
    def _bounded(cls, value: str) -> str:
        words = len(value.split())
        if words > MAX_SUMMARY_WORDS:
            raise ValueError(f"summary has {words} words; write 100-150")
        return value.strip()

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("title is empty")
        return value.strip()

    @field_validator("key_points", "topics", "candidate_facts")
    @classmethod
    def _items(cls, values: list[str]) -> list[str]:
        return [v.strip() for v in values if isinstance(v, str) and 3 <= len(v.strip()) <= 500]


SYSTEM_PROMPT = """You summarise one finished conversation of an AI agent for its long-term memory.
Reply with one JSON object with exactly these keys:
{"title": "<5-10 word descriptive title>",
 "summary": "<100-150 word prose summary>",
 "key_points": ["<reusable lesson: what to remember next time, not what happened>"],
 "outcome": "<resolved|partial|unresolved|informational>",
 "outcome_rationale": "<1 sentence explaining the outcome>",
 "topics": ["<topic>"],
 "candidate_facts": ["<a standalone fact worth storing, naming who it is about>"]}
Outcomes: resolved = the goal was reached or the question answered; partial = some progress,
something left open; unresolved = the problem remains; informational = an exchange of
information or chat with no problem to solve. Candidate facts are few, specific and lasting
(preferences, plans, events in people's lives, technical choices), each understandable alone,
written in the third person with names and absolute dates. Do not invent anything."""


async def decision_context(ctx: PipelineContext, episode: Episode) -> str:
    """The decisions made during the episode (linked to it, or recorded in its session), as lines
    for the summariser; empty when there are none or they cannot be read."""
    try:
        repo = ctx.repo
        edges = await repo.store.edges(repo.agent_id, [episode.id])
        ids = [e.source_id for e in edges if e.relation == EdgeRelation.PART_OF and e.target_id == episode.id]
        found = await repo.store.get_many(repo.agent_id, ids)
        decisions = [d for d in found.values() if isinstance(d, Decision) and of_episode_user(d, episode)]
        if episode.session_id:
            in_session = await repo.store.query(
                MemoryQuery(
                    agent_id=repo.agent_id,
                    kinds=(MemoryKind.DECISION,),
                    session_id=episode.session_id,
                    limit=50,
                )
            )
            seen = {d.id for d in decisions}
            decisions += [
                d
                for d in in_session
                if isinstance(d, Decision) and of_episode_user(d, episode) and d.id not in seen
            ]
    except Exception as exc:
        log.warning("decision context for episode %s unavailable: %s", episode.id, exc)
        return ""
    if not decisions:
        return ""
    lines = []
    for d in sorted(decisions, key=lambda d: d.occurred_at):
        reasons = "; ".join(r.text for r in d.reasons[:3])
        line = f"- {d.content} (confidence {d.confidence:.2f}, outcome {d.outcome.value})"
        lines.append(line + (f" because {reasons}" if reasons else ""))
    return "Decisions made during this episode:\n" + "\n".join(lines)


def of_episode_user(memory: Memory, episode: Episode) -> bool:
    """Whether ``memory`` may go into ``episode``'s summary: its user's, or the agent's shared.
    What is gathered by session id is checked by user too, so one user's words never reach another
    user's summary, whatever session id they were stored under."""
    return memory.user_id in (None, episode.user_id)


def transcript_of(turns: list[Turn]) -> str:
    return "\n\n".join(t.content for t in turns)


async def session_turns(ctx: PipelineContext, episode: Episode) -> list[Turn]:
    """The episode's turns (those of its session, its user's or shared), in order; none for an
    episode of no session."""
    if not episode.session_id:
        return []
    repo = ctx.repo
    found = await repo.store.query(
        MemoryQuery(
            agent_id=repo.agent_id,
            kinds=(MemoryKind.TURN,),
            session_id=episode.session_id,
            limit=10_000,
            include_inactive=True,
        )
    )
    turns = (t for t in found if isinstance(t, Turn) and of_episode_user(t, episode))
    return sorted(turns, key=lambda t: t.occurred_at)


async def summarize_with_llm(ctx: PipelineContext, episode: Episode, turns: list[Turn]) -> EpisodeSummary:
    """The language model's structured summary (LLMError / LLMOutputError when it cannot give one)."""
    context = await decision_context(ctx, episode)
    prompt = (
        f"Conversation started {episode.started_at:%Y-%m-%d %H:%M} UTC"
        + (f" between {', '.join(episode.participants)}" if episode.participants else "")
        + ".\n\n"
        + (context + "\n\n" if context else "")
        + "Transcript:\n"
        + truncate_transcript(transcript_of(turns))
    )
    return await complete_structured(
        ctx.llm,
        [ChatMessage(role="system", content=SYSTEM_PROMPT), ChatMessage(role="user", content=prompt)],
        EpisodeSummary,
        max_tokens=1200,
        on_call=ctx.usage_sink("episode_summary"),
    )
