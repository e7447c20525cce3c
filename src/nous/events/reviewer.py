"""The decision reviewer: proposes outcomes for pending decisions from what was said later.

When a conversation has been summarised, each pending decision recorded *before* it is checked
against the conversation's turns: a turn that talks about the decision (enough of its content
words) and says how it went ("worked", "was a mistake", "rolled back"...) yields a proposal with
the sentence quoted as its reason. With a language model configured, the model judges the same
turns instead. A proposal is only a proposal: it is stored on the decision and shown by
``nous proposals`` until a user or an agent accepts or rejects it; nothing is resolved silently.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from nous._time import utcnow
from nous.events.context import PipelineContext
from nous.events.extraction import sentences
from nous.events.summary import session_turns
from nous.language.lexicon import STOP_WORDS
from nous.llm import ChatMessage, complete_structured
from nous.models import Decision, Episode, HistoryAction, MemoryKind, Turn
from nous.models.brain import Outcome, OutcomeProposal
from nous.models.events import Event
from nous.storage import MemoryQuery, WriteOp
from nous.storage.codec import content_hash

MIN_OVERLAP = 0.3  # share of a decision's content words a sentence must mention to be about it
MAX_PENDING = 50  # pending decisions checked per conversation (the most recent)
_SUCCESS = re.compile(
    r"\b(worked|works (?:great|well|fine)|paid off|was the right (?:call|choice)|glad (?:we|i) "
    r"(?:chose|picked|went with|did)|solved|fixed it|went (?:well|smoothly)|success(?:ful)?)\b",
    re.IGNORECASE,
)
_FAILURE = re.compile(
    r"\b(didn't work|did not work|was a mistake|regret|rolled (?:it )?back|reverted|backfired|"
    r"broke (?:everything|production|prod)|failed|went badly|wrong (?:call|choice)|had to undo)\b",
    re.IGNORECASE,
)
_PARTIAL = re.compile(r"\b(partly|partially|mixed results|somewhat worked|half worked|some issues)\b", re.I)
_WORD = re.compile(r"[a-z0-9]+")


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and len(w) > 2}


def rule_proposal(decision: Decision, turns: list[Turn]) -> OutcomeProposal | None:
    """A proposal from outcome language in a sentence about the decision, or None."""
    wanted = _content(decision.content)
    if not wanted:
        return None
    for turn in turns:
        for sentence in sentences(turn.content):
            about = len(wanted & _content(sentence)) / len(wanted)
            if about < MIN_OVERLAP:
                continue
            outcome = (
                Outcome.FAILURE
                if _FAILURE.search(sentence)
                else Outcome.PARTIAL
                if _PARTIAL.search(sentence)
                else Outcome.SUCCESS
                if _SUCCESS.search(sentence)
                else None
            )
            if outcome is not None:
                return OutcomeProposal(
                    outcome=outcome, reason=sentence[:500], source="rules", evidence_ids=[turn.id]
                )
    return None


class _Judgement(BaseModel):
    outcome: Literal["success", "partial", "failure", "unknown"]
    reason: str = Field(default="", max_length=500)


REVIEW_PROMPT = """You review an AI agent's earlier decision against a later conversation.
Say whether the conversation shows how the decision turned out. Reply with one JSON object:
{"outcome": "success|partial|failure|unknown", "reason": "<one sentence quoting the evidence>"}
Answer "unknown" unless the conversation clearly says how it went."""


async def review_pending_decisions(event: Event, ctx: PipelineContext) -> list[WriteOp]:
    """On ``episode.summarized``: proposals for earlier pending decisions this conversation speaks to."""
    repo = ctx.repo
    episode = (await repo.store.get_many(repo.agent_id, [event.subject_id or ""])).get(event.subject_id or "")
    if not isinstance(episode, Episode):
        return []
    pending = [
        d
        for d in await repo.store.query(
            MemoryQuery(
                agent_id=repo.agent_id,
                kinds=(MemoryKind.DECISION,),
                user_id=episode.user_id,
                until=episode.started_at,
                limit=MAX_PENDING * 4,
            )
        )
        if isinstance(d, Decision) and d.outcome == Outcome.PENDING and d.proposal is None
    ][-MAX_PENDING:]
    if not pending:
        return []
    turns = await session_turns(ctx, episode)
    ops: list[WriteOp] = []
    for decision in pending:
        if decision.session_id and decision.session_id == episode.session_id:
            continue  # its own conversation says how it was made, not how it turned out
        proposal = rule_proposal(decision, turns)
        if proposal is None and ctx.llm.available and _mentions(decision, turns):
            judged = await complete_structured(
                ctx.llm,
                [
                    ChatMessage(role="system", content=REVIEW_PROMPT),
                    ChatMessage(
                        role="user",
                        content=f"Decision ({decision.occurred_at:%Y-%m-%d}): {decision.content}\n\n"
                        "Later conversation:\n" + "\n".join(t.content for t in turns)[:6000],
                    ),
                ],
                _Judgement,
                max_tokens=200,
                on_call=ctx.usage_sink("decision_review"),
            )
            if judged.outcome != "unknown":
                proposal = OutcomeProposal(
                    outcome=Outcome(judged.outcome),
                    reason=judged.reason or "judged by the model",
                    source="llm",
                )
        if proposal is None:
            continue
        proposal.episode_id = episode.id
        updated = decision.model_copy(update={"proposal": proposal, "updated_at": utcnow()})
        put = repo.put_ops(updated, None, content_hash(updated))
        put.keep_embedding = True
        put.expect_updated_at = decision.updated_at
        ops += [
            put,
            repo.audit(
                decision.id,
                HistoryAction.UPDATE,
                new={"proposal": proposal.model_dump(mode="json")},
                actor="reviewer",
            ),
        ]
    return ops


def _mentions(decision: Decision, turns: list[Turn]) -> bool:
    wanted = _content(decision.content)
    return bool(wanted) and any(len(wanted & _content(t.content)) / len(wanted) >= MIN_OVERLAP for t in turns)
