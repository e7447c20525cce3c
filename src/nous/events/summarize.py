"""The handlers that turn a closed episode into a summary, and its summary into facts.

``episode.closed`` → the episode gets its structured summary (language model when configured,
the offline summariser otherwise), is re-embedded so recall finds it by its summary, and an
``episode.summarized`` event carrying the candidate facts is written in the same transaction.
``episode.summarized`` → each candidate fact goes through the duplicate-checking write path (a
duplicate confirms, an update supersedes), one event step per fact; when a summary brings none
and a language model is configured, the model extracts them from the transcript instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from nous._time import as_utc, utcnow
from nous.errors import InvalidInputError, StepDoneError
from nous.events.category import categorize
from nous.events.context import PipelineContext
from nous.events.extraction import MIN_CONTENT_WORDS, CandidateFact, content_words, user_name
from nous.events.known import prior
from nous.events.offline_summary import offline_summary
from nous.events.summary import EpisodeSummary, session_turns, summarize_with_llm, transcript_of
from nous.events.transcript import truncate_transcript
from nous.heart.facts import check_fact_content
from nous.llm import ChatMessage, complete_structured
from nous.memory import lifecycle
from nous.models import Episode, EpisodeOutcome, Fact, FactCategory, HistoryAction, Memory, Provenance, Turn
from nous.models.events import Event, EventKind
from nous.storage import WriteOp
from nous.storage.base import EmitEvent, EventStep
from nous.storage.codec import content_hash

log = logging.getLogger(__name__)
SOURCE = "extraction"
_OUTCOMES = {
    "resolved": EpisodeOutcome.SUCCESS,
    "informational": EpisodeOutcome.INFORMATIONAL,
    "partial": EpisodeOutcome.PARTIAL,
    "unresolved": EpisodeOutcome.FAILURE,
}


@dataclass(slots=True)
class Speakers:
    """Who talked: the people (not an assistant) by the name facts use, and each one's subject."""

    people: set[str] = field(default_factory=set)
    subjects: dict[str, str] = field(default_factory=dict)  # name in the text -> subject
    to_assistant: bool = False  # someone talked to an assistant


def person_name(turn: Turn, user_id: str | None) -> tuple[str, str]:
    """(name in the text, subject) of a person's turn. One person has one subject: the user id
    when the conversation has one (a speaker named like it, "Alice" for "alice", is that user:
    their facts are all under "alice"), else a named speaker's name; an unnamed user is their user
    id (named in the text when it reads as a name: "lena" -> "Lena"), else "the user"."""
    speaker = turn.speaker if turn.speaker and turn.speaker != turn.role else None
    if speaker and user_id and speaker.casefold() == user_id.casefold():
        return speaker, user_id
    if speaker:
        return speaker, speaker
    return user_name(user_id)


def _messages(
    turns: list[Turn], user_id: str | None = None
) -> tuple[list[tuple[str, str, list[str]]], Speakers]:
    """(speaker, text, message ids) per turn, and who the people are."""
    out: list[tuple[str, str, list[str]]] = []
    who = Speakers()
    for t in turns:
        if t.role == "user":
            speaker, subject = person_name(t, user_id)
            who.people.add(speaker)
            who.subjects[speaker] = subject
        else:
            speaker = t.speaker or t.role
            who.to_assistant = who.to_assistant or t.role == "assistant"
        out.append((speaker, t.said(), t.provenance.turn_ids or [t.id]))
    return out, who


async def summarize_episode(event: Event, ctx: PipelineContext) -> list[WriteOp]:
    repo = ctx.repo
    found = (await repo.store.get_many(repo.agent_id, [event.subject_id or ""])).get(event.subject_id or "")
    if not isinstance(found, Episode) or not found.active or found.ended_at is None:
        return []  # gone, discarded as trivial, or reopened: nothing to summarise
    turns = await session_turns(ctx, found)
    if not turns:
        return []
    messages, who = _messages(turns, found.user_id)
    facts: list[CandidateFact]
    if ctx.llm.available:
        summary = await summarize_with_llm(ctx, found, turns)
        facts = [CandidateFact(text=f, subject="") for f in summary.candidate_facts]
        source = "llm"
    else:
        at = found.started_at
        summary, facts = await offline_summary(
            repo.embedder,
            messages,
            people=who.people,
            participants=found.participants,
            at=at,
            to_assistant=who.to_assistant,
        )
        for f in facts:
            f.subject = who.subjects.get(f.subject, f.subject)
        source = "offline"
    structured = {**summary.model_dump(), "source": source}
    updated = found.model_copy(
        update={
            "title": summary.title,
            "summary": summary.summary,
            "structured_summary": structured,
            "lessons": summary.key_points or found.lessons,
            "outcome": _OUTCOMES[summary.outcome],
            "updated_at": utcnow(),
        }
    )
    (embedded,), _ = await repo.embed([updated])
    put = repo.put_ops(updated, embedded, content_hash(updated))
    put.expect_updated_at = found.updated_at  # a concurrent change fails this attempt; it is retried
    payload: dict[str, Any] = {
        "source": source,
        "candidate_facts": [_fact_payload(f) for f in facts],
    }
    return [
        put,
        repo.audit(
            found.id,
            HistoryAction.UPDATE,
            old={"title": found.title, "summary": found.summary},
            new={"title": updated.title, "summary": updated.summary, "source": source},
            actor="pipeline",
        ),
        EmitEvent(
            Event(
                agent_id=repo.agent_id,
                kind=EventKind.EPISODE_SUMMARIZED,
                subject_id=found.id,
                payload=payload,
            )
        ),
    ]


def _fact_payload(f: CandidateFact) -> dict[str, Any]:
    return {
        "text": f.text,
        "subject": f.subject or None,
        "category": f.category,
        "turn_ids": f.turn_ids,
        "occurred_at": f.occurred_at.isoformat() if f.occurred_at else None,
    }


class _ExtractedFacts(BaseModel):
    facts: list[str] = Field(default_factory=list, max_length=20)


EXTRACT_PROMPT = """Extract the lasting facts from this conversation for an AI agent's long-term
memory: preferences, plans, events in people's lives, technical choices. Each fact stands alone,
names who it is about, uses absolute dates, and is not a greeting, an opinion of the moment or
advice. Few and specific; none if nothing lasting was said. Reply with one JSON object:
{"facts": ["<fact>", ...]}"""


async def store_candidate_facts(event: Event, ctx: PipelineContext) -> list[WriteOp]:
    """Store the summary's candidate facts (or, with a language model and none given, the model's
    own extraction) through the write path, each with its event step."""
    repo = ctx.repo
    episode = (await repo.store.get_many(repo.agent_id, [event.subject_id or ""])).get(event.subject_id or "")
    if not isinstance(episode, Episode):
        return []
    raw = event.payload.get("candidate_facts") or []
    candidates = [c for c in raw if isinstance(c, dict) and isinstance(c.get("text"), str)]
    if not candidates and ctx.llm.available:
        turns = await session_turns(ctx, episode)
        if turns:
            extracted = await complete_structured(
                ctx.llm,
                [
                    ChatMessage(role="system", content=EXTRACT_PROMPT),
                    ChatMessage(role="user", content=truncate_transcript(transcript_of(turns))),
                ],
                _ExtractedFacts,
                max_tokens=800,
                on_call=ctx.usage_sink("fact_extraction"),
            )
            candidates = [{"text": f} for f in extracted.facts]
    for i, c in enumerate(candidates):
        step = EventStep(event.id, f"fact:{i}")
        try:
            check_fact_content(c["text"])
            if len(content_words(c["text"])) < MIN_CONTENT_WORDS:  # a model's "Likes tea." too
                raise InvalidInputError(f"under {MIN_CONTENT_WORDS} content words", field="content")
            fact = _fact(c, episode, repo.agent_id)
            known = await prior(ctx, fact)
            if known.restated is not None:
                await _confirm(ctx, known.restated, fact, step)
                continue
            await ctx.write_path.store(
                fact, actor="pipeline", dedup=known.dedup, supersedes=known.supersedes, extra_ops=[step]
            )
        except StepDoneError:
            continue  # stored by an earlier attempt of this event
        except (InvalidInputError, ValueError) as exc:  # the same validation as any write
            log.info("candidate fact %r of episode %s rejected: %s", c["text"][:80], episode.id, exc)
    return []


def _fact(c: dict[str, Any], episode: Episode, agent_id: str) -> Fact:
    """A candidate as a fact of the episode: its scope, time, frame and censors."""
    occurred = c.get("occurred_at")
    at = as_utc(datetime.fromisoformat(occurred)) if isinstance(occurred, str) else episode.started_at
    category = c.get("category")
    if category not in {m.value for m in FactCategory}:
        category = categorize(c["text"])
    return Fact(
        agent_id=agent_id,
        content=c["text"],
        subject=c.get("subject") or None,
        category=category,
        source=SOURCE,
        user_id=episode.user_id,
        session_id=episode.session_id,
        occurred_at=at,
        valid_from=at,
        encoded_frame=episode.encoded_frame or episode.frame_used,
        encoded_censors=list(episode.encoded_censors) if episode.encoded_censors else None,
        provenance=Provenance(
            source=SOURCE,
            session_id=episode.session_id,
            episode_id=episode.id,
            turn_ids=[str(t) for t in c.get("turn_ids") or []],
            actor="pipeline",
        ),
    )


async def _confirm(ctx: PipelineContext, fact_id: str, restatement: Fact, step: EventStep) -> None:
    """A restatement of a stored fact confirms and reviews it, as a duplicate write does; the new
    wording goes into its history."""

    def confirmed(current: Memory) -> dict[str, Any]:
        changes: dict[str, Any] = dict(lifecycle.reviewed(current, utcnow()))
        if isinstance(current, Fact):
            changes["confirmation_count"] = current.confirmation_count + 1
        return changes

    repo = ctx.repo
    await repo.update(
        fact_id,
        confirmed,
        action=HistoryAction.CONFIRM,
        actor="pipeline",
        extra_ops=[
            repo.audit(
                fact_id, HistoryAction.CONFIRM, new={"restated_as": restatement.content}, actor="pipeline"
            ),
            step,
        ],
    )


def summary_of(episode: Episode) -> EpisodeSummary | None:
    """The episode's structured summary, if it has one."""
    data = episode.structured_summary
    if not data or "title" not in data:
        return None
    return EpisodeSummary.model_validate(data)
