"""Sessions: when a conversation earns an episode (spec 000 phases A and B).

Per session, in memory (spec D4: ephemeral, reset each session), Nous tracks turns, tools
used, characters exchanged and explicit "remember this" requests. Episodes are made here,
for live turns and for conversation ingestion alike:

- **Significance** (deferred, spec D1): the first turn always opens an episode; a later turn
  opens one when the conversation has gone on, used tools, grown past 200 characters or
  asked to remember something. At session end an episode that stayed trivial (one turn,
  no tools, under 200 characters) is soft-deleted (``active=False``, restorable).
- **Duplicates** (spec B): before an episode opens, its summary is compared by pure cosine
  with episodes that started within 48 hours of it — closed ones included (the reference
  only looked at open episodes, a bug). Above 0.85 no episode is created; the caller gets
  the existing one's id to link to, and never an id to close (spec R-P0-2). If embedding
  fails the check is skipped and the episode is created (spec test 12).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from nous._time import utcnow
from nous.errors import EmbeddingError
from nous.heart.episodes import Episodes
from nous.memory import MemoryRepository
from nous.models import Episode, EpisodeOutcome, MemoryKind
from nous.storage import MemoryQuery

MIN_CONTENT_LENGTH = 200  # combined user + assistant characters for a significant exchange
# Completed turns before the current one that make a conversation "multi-turn". The spec's
# tests fix it: turn 2 of a short chat without tools opens no episode (test 2), turn 3 does
# (test 4). Its R-note setting of 1 would contradict test 2.
MIN_TURNS_WITHOUT_TOOLS = 2
DUPLICATE_EPISODE_COSINE = 0.85
DUPLICATE_EPISODE_WINDOW = timedelta(hours=48)
SUMMARY_CHARS = 200
REMEMBER_PHRASES = ("remember this", "remember that", "don't forget", "do not forget", "save this")


@dataclass
class SessionMetadata:
    """Signals of one session's significance."""

    turn_count: int = 0  # completed turns (incremented after each reply)
    tools_used: set[str] = field(default_factory=set)
    total_user_chars: int = 0
    total_assistant_chars: int = 0
    has_explicit_remember: bool = False

    @property
    def total_chars(self) -> int:
        return self.total_user_chars + self.total_assistant_chars

    def is_trivial(self) -> bool:
        """One turn at most, no tools, little said: not worth an episode."""
        return (
            self.turn_count <= 1
            and not self.tools_used
            and not self.has_explicit_remember
            and self.total_chars < MIN_CONTENT_LENGTH
        )


def asks_to_remember(text: str) -> bool:
    lowered = text.lower().replace("’", "'")
    return any(phrase in lowered for phrase in REMEMBER_PHRASES)


def should_create_episode(meta: SessionMetadata | None) -> bool:
    """Whether the current turn should open an episode (spec A2)."""
    if meta is None or meta.turn_count == 0:
        return True  # first turn: always (discarded at the end if it stays trivial)
    if meta.has_explicit_remember or meta.tools_used:
        return True
    if meta.turn_count >= MIN_TURNS_WITHOUT_TOOLS:
        return True
    return meta.total_chars >= MIN_CONTENT_LENGTH


def metadata_of(messages: list[tuple[str, str]]) -> SessionMetadata:
    """Metadata of a whole recorded session, from (role, text) pairs (a turn = two messages)."""
    meta = SessionMetadata(turn_count=len(messages) // 2)
    for role, text in messages:
        if role == "user":
            meta.total_user_chars += len(text)
        else:
            meta.total_assistant_chars += len(text)
        meta.has_explicit_remember = meta.has_explicit_remember or asks_to_remember(text)
    return meta


class EpisodeAction(StrEnum):
    CREATED = "created"
    DUPLICATE = "duplicate"
    NOT_SIGNIFICANT = "not_significant"
    ALREADY_OPEN = "already_open"


@dataclass(frozen=True, slots=True)
class EpisodeStart:
    """What happened when a turn asked for an episode."""

    action: EpisodeAction
    episode_id: str | None = None  # the new (or already open) episode
    duplicate_of: str | None = None  # an existing episode to link to; never to be closed by the caller
    similarity: float | None = None


class Sessions:
    """Session metadata, significance and episode dedup for one agent."""

    def __init__(self, repo: MemoryRepository, episodes: Episodes) -> None:
        self.repo = repo
        self.episodes = episodes
        self._meta: dict[str, SessionMetadata] = {}
        self._open: dict[str, str] = {}  # session id -> open episode id

    def metadata(self, session_id: str) -> SessionMetadata | None:
        return self._meta.get(session_id)

    def open_episode(self, session_id: str) -> str | None:
        return self._open.get(session_id)

    def note_user(self, session_id: str, text: str) -> SessionMetadata:
        """Record a user message (before the reply)."""
        meta = self._meta.setdefault(session_id, SessionMetadata())
        meta.total_user_chars += len(text)
        if asks_to_remember(text):
            meta.has_explicit_remember = True
        return meta

    def note_reply(self, session_id: str, text: str, tools: list[str] | None = None) -> SessionMetadata:
        """Record the assistant's reply, completing a turn."""
        meta = self._meta.setdefault(session_id, SessionMetadata())
        meta.turn_count += 1
        meta.total_assistant_chars += len(text)
        meta.tools_used.update(tools or ())
        return meta

    async def find_duplicate_episode(
        self, summary: str, *, around: datetime | None = None, user_id: str | None = None
    ) -> tuple[str, float] | None:
        """An episode started within 48 h of ``around`` whose summary is > 0.85 cosine to this one.

        Closed episodes count; soft-deleted (trivial) ones do not. An embedding failure
        means no duplicate: the episode gets created (a duplicate beats a lost memory).
        """
        around = around or utcnow()
        try:
            vector = await self.repo.embedder.embed_one(summary[:SUMMARY_CHARS])
        except EmbeddingError:
            return None
        scope = MemoryQuery(
            agent_id=self.repo.agent_id,
            kinds=(MemoryKind.EPISODE,),
            user_id=user_id,
            since=around - DUPLICATE_EPISODE_WINDOW,
            until=around + DUPLICATE_EPISODE_WINDOW,
        )
        hits = await self.repo.store.vector_search(scope, vector, 1)
        if hits and hits[0].score > DUPLICATE_EPISODE_COSINE:
            return hits[0].id, hits[0].score
        return None

    async def begin_turn(
        self,
        session_id: str,
        user_input: str,
        *,
        frame: str | None = None,
        user_id: str | None = None,
        at: datetime | None = None,
        actor: str = "api",
    ) -> EpisodeStart:
        """Track the user's message and open an episode if the session has earned one."""
        meta = self.note_user(session_id, user_input)
        if session_id in self._open:
            return EpisodeStart(EpisodeAction.ALREADY_OPEN, episode_id=self._open[session_id])
        if not should_create_episode(meta):
            return EpisodeStart(EpisodeAction.NOT_SIGNIFICANT)
        summary = user_input[:SUMMARY_CHARS]
        duplicate = await self.find_duplicate_episode(summary, around=at, user_id=user_id)
        if duplicate is not None:
            return EpisodeStart(EpisodeAction.DUPLICATE, duplicate_of=duplicate[0], similarity=duplicate[1])
        episode = await self.episodes.start(
            summary,
            trigger="user_message",
            frame=frame,
            session_id=session_id,
            user_id=user_id,
            started_at=at,
            actor=actor,
        )
        self._open[session_id] = episode.id
        return EpisodeStart(EpisodeAction.CREATED, episode_id=episode.id)

    async def end_session(
        self, session_id: str, *, reflection: str | None = None, actor: str = "api"
    ) -> Episode | None:
        """Close the session's episode, or soft-delete it if the session stayed trivial."""
        episode_id = self._open.pop(session_id, None)
        meta = self._meta.pop(session_id, None)
        if episode_id is None:
            return None
        if meta is not None and meta.is_trivial():
            discarded = await self.repo.forget(episode_id, actor=actor)
            assert isinstance(discarded, Episode)
            return discarded
        lessons = [reflection[:500]] if reflection else None
        return await self.episodes.end(
            episode_id, outcome=EpisodeOutcome.SUCCESS, lessons=lessons, actor=actor
        )
