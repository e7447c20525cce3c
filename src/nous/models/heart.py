"""Heart: what the agent remembers — facts, episodes, procedures, censors, working memory."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from nous._text import pattern_words
from nous._time import as_utc, utcnow
from nous.models.base import Memory, MemoryKind


class FactCategory(StrEnum):
    PREFERENCE = "preference"
    TECHNICAL = "technical"
    PERSON = "person"
    TOOL = "tool"
    CONCEPT = "concept"
    RULE = "rule"
    EVENT = "event"
    LESSON = "lesson"
    OTHER = "other"


class Fact(Memory):
    """Something known: a preference, a technical detail, a person, a rule."""

    kind: ClassVar[MemoryKind] = MemoryKind.FACT

    source: str | None = Field(default=None, max_length=500)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0, allow_inf_nan=False)
    confirmation_count: int = Field(default=0, ge=0)
    replaces: str | None = Field(
        default=None, description="What the fact it superseded said (searchable beside its own words)."
    )

    def keyword_context(self) -> str | None:
        """The words of the fact it replaced: "when is the hash table assignment due?" finds "the
        A3 deadline was pushed back" through "Assignment 3 (hash tables) is due ..."."""
        return self.replaces


class CompressionTier(StrEnum):
    RAW = "raw"
    COMPRESSED = "compressed"
    FOSSIL = "fossil"


class EpisodeOutcome(StrEnum):
    SUCCESS = "success"
    PARTIAL = "partial"
    FAILURE = "failure"
    ABANDONED = "abandoned"
    ONGOING = "ongoing"
    # Nothing was asked to be solved: people told things (a summary's "informational"); calling
    # that a success contradicted the episode's own structured summary.
    INFORMATIONAL = "informational"


class Episode(Memory):
    """Something that happened: a conversation, a task, a session."""

    kind: ClassVar[MemoryKind] = MemoryKind.EPISODE

    title: str | None = Field(default=None, max_length=500)
    summary: str | None = None
    structured_summary: dict[str, Any] | None = None
    frame_used: str | None = Field(default=None, max_length=100)
    trigger: str | None = Field(default=None, max_length=500)
    started_at: datetime = Field(default_factory=utcnow)
    ended_at: datetime | None = None
    outcome: EpisodeOutcome = EpisodeOutcome.ONGOING
    lessons: list[str] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    compression_tier: CompressionTier = CompressionTier.RAW
    opening: str | None = Field(
        default=None,
        max_length=2000,
        description="How the conversation began (its first message, clipped): a repeat of it is "
        "recognised by this, whatever the summary later says.",
    )

    @field_validator("started_at", "ended_at")
    @classmethod
    def _utc_times(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None  # naive is UTC, as for every memory time

    def running_elsewhere(self, session_id: str | None) -> bool:
        """Still open in a session other than ``session_id``: that conversation's own business
        until it ends (recent tiers and lists leave it out)."""
        return self.ended_at is None and self.session_id is not None and self.session_id != session_id

    def embedding_text(self) -> str:
        parts = [self.title or "", self.summary or "", self.content]
        return "\n".join(dict.fromkeys(p for p in parts if p))


class Procedure(Memory):
    """How to do something: goals, core patterns, tools, concepts and a track record."""

    kind: ClassVar[MemoryKind] = MemoryKind.PROCEDURE

    name: str = Field(min_length=1, max_length=300)
    domain: str | None = Field(default=None, max_length=100)
    goals: list[str] = Field(default_factory=list)
    core_patterns: list[str] = Field(default_factory=list)
    core_tools: list[str] = Field(default_factory=list)
    core_concepts: list[str] = Field(default_factory=list)
    notes: str | None = None
    activation_count: int = Field(default=0, ge=0)
    success_count: int = Field(default=0, ge=0)
    failure_count: int = Field(default=0, ge=0)

    @property
    def effectiveness(self) -> float | None:
        """Share of recorded uses that succeeded; None before any outcome."""
        total = self.success_count + self.failure_count
        return self.success_count / total if total else None

    def embedding_text(self) -> str:
        parts = [self.name, self.content, *self.goals, *self.core_patterns]
        return "\n".join(dict.fromkeys(p for p in parts if p))


class CensorAction(StrEnum):
    """What a censor does when it fires (``CENSOR_ACTION_EFFECTS`` says it in words)."""

    WARN = "warn"
    BLOCK = "block"
    ABSOLUTE = "absolute"


# What each action does, in the words every surface shows (CLI help, REST and MCP schemas, the
# inspector): one place, so none of them can leave an action out.
CENSOR_ACTION_EFFECTS: dict[CensorAction, str] = {
    CensorAction.WARN: "go ahead, with a warning; becomes block after its escalation threshold of firings",
    CensorAction.BLOCK: "stop, unless the caller overrides it (then it is a warning); never escalates",
    CensorAction.ABSOLUTE: "always stop: no override lifts it (reported as block); set by a person only",
}


def censor_actions_text() -> str:
    """``warn (…), block (…) or absolute (…)``: every action with what it does."""
    parts = [f"{a.value} ({CENSOR_ACTION_EFFECTS[a]})" for a in CensorAction]
    return ", ".join(parts[:-1]) + " or " + parts[-1]


class Censor(Memory):
    """Something not to do: a trigger pattern and what happens when it fires."""

    kind: ClassVar[MemoryKind] = MemoryKind.CENSOR

    trigger_pattern: str = Field(min_length=1, max_length=2000)
    action: CensorAction = Field(
        default=CensorAction.WARN, description=f"What happens when it fires: {censor_actions_text()}."
    )
    reason: str | None = None
    domain: str | None = Field(default=None, max_length=100)
    activation_count: int = Field(default=0, ge=0, description="How many times it has fired.")
    escalation_threshold: int = Field(
        default=3, ge=1, description="Firings after which a warn censor becomes block (warn only)."
    )
    false_positive_count: int = Field(default=0, ge=0, description="Activations reported as wrong.")

    def embedding_text(self) -> str:
        """Its reason and the words its pattern spells out: a question meets a censor by what it is
        about ("force-push over main") and why, never by regex syntax."""
        words = pattern_words(self.trigger_pattern)
        return "\n".join(p for p in (self.reason or "", words) if p) or self.trigger_pattern


class Turn(Memory):
    """One message of a conversation, kept verbatim and retrievable."""

    kind: ClassVar[MemoryKind] = MemoryKind.TURN

    role: str = Field(default="user", max_length=50)
    speaker: str | None = Field(default=None, max_length=200)
    episode_id: str | None = None
    context: str | None = Field(default=None, description="Neighbouring turns, for keyword search.")

    def keyword_context(self) -> str | None:
        """The neighbouring turns (their openings, bounded at ingestion)."""
        return self.context

    def keyword_text(self) -> str:
        """The turn's own words; its neighbours are indexed apart (``keyword_context``)."""
        return self.content

    def embedding_text(self) -> str:
        """``Speaker said, "text"`` when the speaker is named: measured better than ``Speaker: text``
        for dense recall (LoCoMo recall_all@10 0.450 -> 0.496). When the speaker is only the role
        (``user``, ``assistant``: an agent's own chats), the text alone: a role label is not
        something a question asks about (long chats recall_any@10 0.756 -> 0.800;
        scripts/probe_embedding_text.py)."""
        prefix = f"{self.speaker}: " if self.speaker else ""
        if not prefix or not self.content.startswith(prefix):
            return self.content
        text = self.content[len(prefix) :]
        if self.speaker == self.role:
            return text
        return f'{self.speaker} said, "{text}"'

    def said(self) -> str:
        """The words said, without the ``speaker: `` or ``role: `` label a stored turn starts with."""
        for prefix in (f"{self.speaker}: " if self.speaker else None, f"{self.role}: "):
            if prefix and self.content.startswith(prefix):
                return self.content[len(prefix) :]
        return self.content


class WorkingMemoryItem(BaseModel):
    """One item the agent is currently attending to."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, max_length=10_000)
    kind: str = "note"
    memory_id: str | None = None
    relevance: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False)
    added_at: datetime = Field(default_factory=utcnow)
    frame: str | None = Field(default=None, description="The session's frame when it was added.")
    censors: list[str] = Field(default_factory=list, description="Censors active when it was added.")


class WorkingMemory(BaseModel):
    """Per-session scratch state: current task, frame, focus items, open threads."""

    model_config = ConfigDict(extra="forbid")

    MAX_ITEMS: ClassVar[int] = 20

    agent_id: str
    session_id: str
    current_task: str | None = None
    frame: str | None = None
    items: list[WorkingMemoryItem] = Field(default_factory=list)
    open_threads: list[str] = Field(default_factory=list)
    updated_at: datetime = Field(default_factory=utcnow)

    def focus(self, item: WorkingMemoryItem) -> None:
        """Add an item, evicting the least relevant ones beyond ``MAX_ITEMS``."""
        self.items = [i for i in self.items if i.content != item.content] + [item]
        if len(self.items) > self.MAX_ITEMS:
            self.items.sort(key=lambda i: (i.relevance, i.added_at), reverse=True)
            self.items = self.items[: self.MAX_ITEMS]
