"""Store a parsed conversation: one episode per session, one turn memory per message.

Ids are derived from the conversation, session and message ids, so ingesting the
same file again skips what is already stored and resumes an interrupted run. A session's
stored id is built from its user as well (``ingested_session_key``): it is that user's alone.
Each session is one transaction (episode, turns and their edges together).

Episodes go through the same rules as live sessions (``nous.heart.sessions``): a session
that stayed trivial gets its episode soft-deleted, and a session whose opening matches an
episode from within 48 hours (cosine > 0.85) makes no new episode; its turns are linked
to the existing one. Turns are always stored: they are the memories.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from pydantic import BaseModel, ValidationError

from nous._time import shifted, utcnow
from nous.embeddings import Embedded
from nous.heart.sessions import SUMMARY_CHARS as OPENING_CHARS
from nous.heart.sessions import Sessions, discard_reason, says_something_lasting, state_of
from nous.ingest.formats import Conversation, ConversationMessage, ConversationSession
from nous.language.instructions import message_category
from nous.language.topics import conversation_title
from nous.memory import MemoryRepository
from nous.memory.outbox import session_ended_event
from nous.memory.repository import invalid_from_pydantic
from nous.models import Edge, EdgeRelation, Episode, EpisodeOutcome, HistoryAction, Memory, Provenance, Turn
from nous.storage.base import PutEdge, PutSession, WriteOp

_NAMESPACE = uuid.UUID("5b0c6c0e-8f1e-4e55-9d7e-6e6f75730002")
TURN_SPACING = timedelta(seconds=30)
PROGRESS_SLICE = 16  # memories embedded between two progress reports


class IngestReport(BaseModel):
    """What an ingestion stored."""

    conversation_id: str
    sessions: int
    sessions_skipped: int
    turns: int
    episode_ids: list[str]
    episodes_merged: int = 0  # sessions linked to an earlier, near-identical episode
    episodes_trivial: int = 0  # sessions whose episode was soft-deleted as trivial
    discarded: list[str] = []  # "<session id>: <why>" for each of them


NEIGHBOUR_CHARS = 400  # at most this much of each neighbour goes into a turn's keyword context


def _clip(text: str, limit: int = NEIGHBOUR_CHARS) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def _neighbours(messages: list[ConversationMessage], i: int) -> str | None:
    """The opening of the turns just before and after message ``i`` (its question and its reply).

    Bounded: a short question beside a 4,000-character reply must not become a long document
    whose own words are a small share of it.
    """
    around = [m for m in messages[max(0, i - 1) : i + 2] if m is not messages[i]]
    return "\n".join(f"{m.name or m.role}: {_clip(m.content)}" for m in around) or None


def _id(agent_id: str, *parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join((agent_id, *parts))))


SESSION_KEY_CHARS = 200  # a stored session id is at most this long (``Memory.session_id``)


def ingested_session_key(user_id: str | None, conversation_id: str, session_id: str) -> str:
    """The stored session id of an ingested session: ``@<len>:<user>:<len>:<conversation>:<session>``
    (the user empty for the agent's own ingest).

    The lengths make it one-to-one in (user, conversation, session), so no conversation or session
    id spells another user's ingested session; and it starts with ``@`` where a user-bound key's
    live session starts with ``~`` (``Caller.session_key``), so no ingest reaches a live session
    of any user. One too long to store is named by a digest instead (``@#<sha256>``, which no
    readable key spells: those have a digit after the ``@``)."""
    user = user_id or ""
    key = f"@{len(user)}:{user}:{len(conversation_id)}:{conversation_id}:{session_id}"
    if len(key) <= SESSION_KEY_CHARS:
        return key
    return "@#" + hashlib.sha256(key.encode()).hexdigest()


def _session_title(session: ConversationSession) -> str:
    """A session's episode title: what it is about, as the offline summary titles it (the
    session-ended event may retitle it later, from a language model's summary), never "a
    conversation"."""
    said = [(m.name or m.role, m.content) for m in session.messages]
    people = {m.name or m.role for m in session.messages if m.role == "user"}
    speakers = list(dict.fromkeys(m.name or m.role for m in session.messages))
    return conversation_title(said, people=people) or (
        f"Conversation between {', '.join(speakers)} ({session.id})"
    )


def _session_memories(
    repo: MemoryRepository,
    conversation: Conversation,
    session: ConversationSession,
    episode_id: str,
    link_to: str,
    scope: tuple[str, ...],
    user_id: str | None,
    started: datetime,
    title: str,
) -> tuple[Episode, list[Turn], list[WriteOp]]:
    """A session's episode (titled ``title``, see ``_session_title``) and turns (linked to
    ``link_to``) and the edges between them; an InvalidInputError names a field no memory may hold."""
    agent = repo.agent_id
    session_key = ingested_session_key(user_id, conversation.id, session.id)
    try:
        speakers = list(dict.fromkeys(m.name or m.role for m in session.messages))
        turns: list[Turn] = []
        ops: list[WriteOp] = []
        for i, message in enumerate(session.messages):
            speaker = message.name or message.role
            turn = Turn(
                id=_id(*scope, conversation.id, session.id, message.id),
                agent_id=agent,
                user_id=user_id,
                session_id=session_key,
                content=f"{speaker}: {message.content}",
                role=message.role,
                speaker=speaker,
                category=message_category(message.role, message.content),
                episode_id=link_to,
                context=_neighbours(session.messages, i),
                occurred_at=message.occurred_at or shifted(started, i * TURN_SPACING),
                provenance=Provenance(
                    source=f"ingest:{conversation.source_format}",
                    session_id=session_key,
                    episode_id=link_to,
                    turn_ids=[message.id],
                ),
            )
            ops.append(
                PutEdge(
                    Edge(source_id=turn.id, target_id=link_to, relation=EdgeRelation.PART_OF, agent_id=agent)
                )
            )
            if turns:
                ops.append(
                    PutEdge(
                        Edge(
                            source_id=turn.id,
                            target_id=turns[-1].id,
                            relation=EdgeRelation.FOLLOWS,
                            agent_id=agent,
                        )
                    )
                )
            turns.append(turn)
        episode = Episode(
            id=episode_id,
            agent_id=agent,
            user_id=user_id,
            session_id=session_key,
            content=title,
            title=title,
            started_at=started,
            occurred_at=started,
            ended_at=turns[-1].occurred_at if turns else started,
            outcome=EpisodeOutcome.SUCCESS,
            participants=speakers,
            trigger="conversation ingestion",
            opening=session.messages[0].content[:OPENING_CHARS] if session.messages else None,
            provenance=Provenance(source=f"ingest:{conversation.source_format}", session_id=session_key),
        )
    except ValidationError as exc:
        raise invalid_from_pydantic(exc) from None
    return episode, turns, ops


async def ingest_conversation(
    repo: MemoryRepository,
    conversation: Conversation,
    *,
    sessions: Sessions | None = None,
    user_id: str | None = None,
    progress: Callable[[int], None] | None = None,
    actor: str = "api",
) -> IngestReport:
    """Store every session of the conversation that is not stored yet; ``progress`` is called
    with the number of turns processed, a few at a time as they are embedded (a skipped
    session's all at once); each session is written once its last turn is. ``actor`` signs the
    audit rows."""
    agent = repo.agent_id
    # A user's conversation ids are its own: two users of one agent may both ingest "c1", and
    # neither is skipped as a re-run of the other's (the ids of the agent's own are unchanged).
    scope = (agent, f"user\x1e{user_id}") if user_id is not None else (agent,)
    episode_ids = [_id(*scope, conversation.id, s.id) for s in conversation.sessions]
    # A session merged into an earlier, near-identical episode stores no episode of its own: its
    # first turn tells that it was stored, so a re-run skips it too.
    first_turns = [
        _id(*scope, conversation.id, s.id, s.messages[0].id) if s.messages else None
        for s in conversation.sessions
    ]
    found = await repo.store.get_many(agent, [*episode_ids, *filter(None, first_turns)])
    existing = {
        episode_id
        for episode_id, first in zip(episode_ids, first_turns, strict=True)
        if episode_id in found or first in found
    }
    stored_sessions = stored_turns = skipped = merged = trivial = 0
    discarded: list[str] = []
    base_time = utcnow()
    # Every memory the file makes is checked before any is written: a bad message in a late
    # session must not leave the earlier sessions stored (a bad file stores nothing).
    titles: dict[str, str] = {}  # the key phrases of a long session take a while: found once
    for session, episode_id in zip(conversation.sessions, episode_ids, strict=True):
        if episode_id not in existing:
            started = session.started_at or base_time
            titles[episode_id] = _session_title(session)
            episode, turns, _ = _session_memories(
                repo,
                conversation,
                session,
                episode_id,
                episode_id,
                scope,
                user_id,
                started,
                titles[episode_id],
            )
            for memory in (episode, *turns):
                repo.validate(memory)
    for session, episode_id in zip(conversation.sessions, episode_ids, strict=True):
        if episode_id in existing:
            skipped += 1
            if progress:
                progress(len(session.messages))
            continue
        started = session.started_at or base_time
        session_key = ingested_session_key(user_id, conversation.id, session.id)
        opening = session.messages[0].content if session.messages else ""
        duplicate = (
            await sessions.find_duplicate_episode(opening, around=started, user_id=user_id)
            if sessions is not None and opening
            else None
        )
        link_to = duplicate[0] if duplicate else episode_id
        episode, turns, ops = _session_memories(
            repo, conversation, session, episode_id, link_to, scope, user_id, started, titles[episode_id]
        )
        # The session ends exactly as a live one does: its row is written ended, for the event
        # pipeline to pick up; a trivial one has its episode kept but out of recall.
        said = [(m.role, m.content) for m in session.messages]
        state = state_of(agent, session_key, said, started)
        state.user_id, state.episode_id = user_id, None if duplicate else episode_id
        state.last_active_at = state.ended_at = episode.ended_at or started
        ops.append(PutSession(state))
        ops.append(session_ended_event(agent, session_key))  # only if the row was new
        if duplicate:
            merged += 1
        elif state.is_trivial() and not says_something_lasting(said):
            episode.active = False  # kept, restorable, but out of recall
            trivial += 1
            reason = discard_reason(state)
            discarded.append(f"{session.id}: {reason}")
            ops.append(repo.audit(episode.id, HistoryAction.DELETE, new={"discarded": reason}, actor=actor))
        memories: list[Memory] = [*([] if duplicate else [episode]), *turns]
        # Embedding is most of the time a session takes: it runs a slice at a time so progress
        # moves per turn on a long session, and the session is still written in one transaction.
        embedded: list[Embedded | None] = []
        for start in range(0, len(memories), PROGRESS_SLICE):
            vectors, _ = await repo.embed(memories[start : start + PROGRESS_SLICE])
            embedded += vectors
            if progress:
                progress(sum(isinstance(m, Turn) for m in memories[start : start + PROGRESS_SLICE]))
        await repo.create_many(memories, actor=actor, extra_ops=ops, embedded=embedded)
        stored_sessions += 1
        stored_turns += len(turns)
    return IngestReport(
        conversation_id=conversation.id,
        sessions=stored_sessions,
        sessions_skipped=skipped,
        turns=stored_turns,
        episode_ids=episode_ids,
        episodes_merged=merged,
        episodes_trivial=trivial,
        discarded=discarded,
    )
