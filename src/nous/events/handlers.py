"""What each kind of event does. A handler reads what it needs and returns the write ops of its
effect; the worker commits them together with the event's 'done' mark, so an effect is applied
once even if a worker dies mid-handler. Handlers must not write on their own."""

from __future__ import annotations

from nous._time import utcnow
from nous.events.context import Handler, PipelineContext
from nous.events.ingest_job import run_ingest
from nous.events.reviewer import review_pending_decisions
from nous.events.summarize import store_candidate_facts, summarize_episode
from nous.events.summary import of_episode_user
from nous.memory import MemoryRepository
from nous.memory.threads import build_threads
from nous.models import Decision, Edge, EdgeRelation, Episode, HistoryAction, MemoryKind
from nous.models.events import Event, EventKind
from nous.storage import MemoryQuery, WriteOp
from nous.storage.base import PutEdge, PutMemory
from nous.storage.codec import content_hash


async def link_decision_to_episode(event: Event, ctx: PipelineContext) -> list[WriteOp]:
    """A decision recorded during a session is part of that session's episode (if it has one and
    the session is the decision's user's, or the decision is the agent's shared one)."""
    repo = ctx.repo
    decision = (await repo.store.get_many(repo.agent_id, [event.subject_id or ""])).get(
        event.subject_id or ""
    )
    if not isinstance(decision, Decision) or not decision.session_id:
        return []
    session = await repo.store.session(repo.agent_id, decision.session_id)
    if session is None or session.episode_id is None or decision.user_id not in (None, session.user_id):
        return []  # no episode, or another user's session: a decision joins only its user's
    return [
        _part_of(repo.agent_id, decision.id, session.episode_id),
        *_set_episode(repo, decision, session.episode_id),
    ]


async def link_episode_decisions(event: Event, ctx: PipelineContext) -> list[WriteOp]:
    """A closed episode gathers the decisions recorded in its session by its user or for the whole
    agent (its summary's context)."""
    repo = ctx.repo
    episode = (await repo.store.get_many(repo.agent_id, [event.subject_id or ""])).get(event.subject_id or "")
    if not isinstance(episode, Episode) or not episode.session_id:
        return []
    decisions = await repo.store.query(
        MemoryQuery(
            agent_id=repo.agent_id,
            kinds=(MemoryKind.DECISION,),
            session_id=episode.session_id,
            include_inactive=True,
            limit=500,
        )
    )
    ops: list[WriteOp] = []
    for d in (d for d in decisions if of_episode_user(d, episode)):
        ops.append(_part_of(repo.agent_id, d.id, episode.id))
        if isinstance(d, Decision):
            ops += _set_episode(repo, d, episode.id)
    return ops


def _set_episode(repo: MemoryRepository, decision: Decision, episode_id: str) -> list[WriteOp]:
    """The decision's ``episode_id``, if not set yet (compare-and-swap: a concurrent change fails
    the event's attempt, which is retried)."""
    if decision.episode_id is not None:
        return []
    updated = decision.model_copy(update={"episode_id": episode_id, "updated_at": utcnow()})
    put = PutMemory(memory=updated, content_hash=content_hash(updated), keep_embedding=True)
    put.expect_updated_at = decision.updated_at
    return [
        put,
        repo.audit(decision.id, HistoryAction.LINK, new={"episode_id": episode_id}, actor="pipeline"),
    ]


def _part_of(agent_id: str, decision_id: str, episode_id: str) -> PutEdge:
    # Inserted unless the same edge exists: running a handler twice changes nothing.
    return PutEdge(
        Edge(agent_id=agent_id, source_id=decision_id, target_id=episode_id, relation=EdgeRelation.PART_OF)
    )


async def thread_memories(event: Event, ctx: PipelineContext) -> list[WriteOp]:
    """Thread the memories not in a topic thread yet (``nous.memory.threads``): whatever event
    follows new memories (a session's end, a new fact or decision) brings them into threads. The
    threading is decided and written under the store's lock for the agent's threads, apart from
    the event's own writes: workers handling other events at the same time wait for it instead of
    deciding from the same state (their attempt would fail and be retried), and as threading is
    idempotent, a retried event finds its memories threaded."""
    async with ctx.repo.store.exclusive(f"threads:{ctx.repo.agent_id}"):
        await build_threads(ctx.repo.store, ctx.repo.agent_id, repair=False)
    return []


HANDLERS: dict[EventKind, list[Handler]] = {
    EventKind.DECISION_RECORDED: [link_decision_to_episode, thread_memories],
    EventKind.EPISODE_CLOSED: [link_episode_decisions, summarize_episode],
    EventKind.EPISODE_SUMMARIZED: [store_candidate_facts, review_pending_decisions],
    EventKind.SESSION_ENDED: [thread_memories],
    EventKind.FACT_WRITTEN: [thread_memories],
    EventKind.INGEST_REQUESTED: [run_ingest],
}


def register_handler(kind: EventKind, handler: Handler) -> None:
    """Add a handler for a kind of event (plugins; each handler's ops join the same transaction)."""
    HANDLERS.setdefault(EventKind(kind), []).append(handler)


def handler_for(kind: EventKind) -> list[Handler]:
    return list(HANDLERS.get(kind, ()))
