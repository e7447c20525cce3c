"""The context engine: what the agent sees before a turn, within its frame's token budgets.

Sections, in order: identity, user profile, active censors (and warnings), frame instructions,
working memory, recent conversations (titles and times of the latest episodes; first among the
retrieved sections for a recap), "In order" (for a question that asks for an order, a summary or
everything so far: a dated timeline of a covering recall, with half of the episodes' and turns'
budgets), then retrieved decisions, facts, procedures, episodes and conversation turns. Each section is filled best first within its own budget, and the whole is cut
to the frame's total, from the last section up, counted with a real tokenizer on the final text.
Every item left out is reported with its reason. The context serves the asker: the current
question never comes back as a memory, and a conversation that is not the asking user's is shown
only when it scores as relevant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from pydantic import BaseModel, Field

from nous._memo import TextMemo
from nous._sequences import spread
from nous._tokens import clip_and_count, count_tokens
from nous.cognitive.frames import Budget, Frame
from nous.models import (
    Censor,
    Decision,
    Episode,
    EpisodeOutcome,
    Fact,
    Memory,
    MemoryKind,
    Procedure,
    RecallHit,
    Turn,
    WorkingMemory,
)
from nous.models.session import IdentitySection

# A retrieved item shows at most this many tokens (~800 characters): a long reply is represented
# by its opening, and more items fit.
ITEM_MAX_TOKENS = 200
# A decision shows its reasons and outcome too: "why did we ...?" is answered by them.
DECISION_MAX_TOKENS = 350
# Retrieved items whose relevance (0..1) is below this are left out. Lower than recall's default
# minimum (0.03): the budgets bound what a context shows, and a missed answer costs more than a
# line. Measured on LoCoMo 30 + a long chat (`nous bench context`): evidence in the context 0.778 at
# 0.01, 0.697 at 0.05, 0.788 with no floor; tokens p50 1,894 / 697 / 2,019. A caller who chose the
# total (``pre_turn(budget=...)``) has said how much to spend: there is no floor then (the layer
# passes 0), and the next best memories fill what the floor left empty (docs/cognitive.md).
SCORE_FLOOR = 0.01
# Conversation turns and episodes that are not the asking user's (another user's are never
# recalled; these are the agent's shared ones, such as an ingested chat) need the relevance recall
# itself requires by default (``recall_min_score``): they are shown when they answer the question,
# not as filler under a floor meant for the user's own memories. Without a user, every memory is
# the agent's and SCORE_FLOOR applies.
OTHERS_SCORE_FLOOR = 0.05
# A question about the asker ("what do you know about me?"): someone else's conversation cannot
# answer it, however its words match ("let me know", "user registration"), so none is shown.
ABOUT_THE_ASKER = re.compile(r"\b(about|of) (me|myself)\b", re.IGNORECASE)
# Two items whose word sets overlap this much (Jaccard) are near-duplicates; the weaker is dropped.
DUPLICATE_JACCARD = 0.85
RECENT_EPISODES = 5
# A step of the "In order" timeline shows at most this many tokens: the timeline's worth is its
# many steps in order, each recognisable, not any one step whole.
TIMELINE_ITEM_TOKENS = 80
SECTION_GAP = 2  # tokens of the blank line between two sections

SECTION_OF_KIND: dict[MemoryKind, str] = {
    MemoryKind.DECISION: "decisions",
    MemoryKind.FACT: "facts",
    MemoryKind.PROCEDURE: "procedures",
    MemoryKind.EPISODE: "episodes",
    MemoryKind.TURN: "turns",
}
TITLES = {
    "identity": "Who you are",
    "user_profile": "About the user",
    "censors": "Do not",
    "frame": "Frame",
    "working_memory": "Working memory",
    "recent": "Recent conversations",
    "in_order": "In order",
    "decisions": "Past decisions",
    "facts": "Facts",
    "procedures": "Procedures",
    "episodes": "Related episodes",
    "turns": "From earlier conversations",
}
_WORD = re.compile(r"\w+")
_WORDS: TextMemo[frozenset[str]] = TextMemo(1024)  # a memory's words, for the overlap checks


class DropReason(StrEnum):
    BUDGET = "budget"  # the section's own budget was full
    TOTAL = "total_budget"  # cut to keep the whole context within the frame's total
    DUPLICATE = "duplicate"  # a near-duplicate of an item already included
    SCORE_FLOOR = "score_floor"  # scored below the relevance floor
    ALREADY_SAID = "already_said"  # in the session's last turns, which the agent already has
    SUPERSEDED = "superseded"  # replaced by a newer version
    QUESTION = "question"  # the current question itself, or a near-identical earlier one by the user


class ContextItem(BaseModel):
    """One item of a section: a memory (``id``) or a fixed line (``id`` None)."""

    id: str | None = None
    kind: str
    text: str
    tokens: int
    score: float | None = None


class DroppedItem(BaseModel):
    id: str | None = None
    reason: DropReason


class ContextSection(BaseModel):
    name: str
    title: str
    tokens: int
    budget: int
    items: list[ContextItem] = Field(default_factory=list)
    dropped: list[DroppedItem] = Field(default_factory=list)


class Context(BaseModel):
    """The assembled context of a turn and how it was made."""

    session_id: str
    frame: str
    frame_confidence: float
    greeting: bool
    recap: bool
    query: str = Field(description="The text retrieval used (a follow-up is resolved to its topic).")
    text: str
    tokens: int
    budget: int
    sections: list[ContextSection]

    def section(self, name: str) -> ContextSection | None:
        return next((s for s in self.sections if s.name == name), None)

    def included_ids(self) -> list[str]:
        return [i.id for s in self.sections for i in s.items if i.id is not None]


@dataclass
class ContextInputs:
    """Everything the engine assembles from (gathered by the cognitive layer)."""

    session_id: str
    frame: Frame
    frame_confidence: float
    query: str
    greeting: bool = False
    recap: bool = False
    budget: Budget | None = None  # overrides the frame's budgets
    identity: Sequence[IdentitySection] = ()
    profile: Sequence[Fact] = ()
    instructions: Sequence[Memory] = ()  # the user's standing instructions, closest to the question first
    censors: Sequence[Censor] = ()
    warnings: Sequence[str] = ()
    working_memory: WorkingMemory | None = None
    recent: Sequence[Memory] = ()
    hits: Sequence[RecallHit] = ()
    timeline: Sequence[RecallHit] = ()  # a covering recall, in time order ("In order" section)
    replaced: Mapping[str, Memory] = field(default_factory=dict)  # a hit's id -> what it superseded
    score_floor: float = SCORE_FLOOR
    already_said: Sequence[str] = ()  # texts of the session's last turns
    user_id: str | None = None  # the asking user: others' turns and episodes must be relevant
    fill: bool = False  # the caller chose the total: sections with something share all the room


def _words(text: str) -> frozenset[str]:
    return _WORDS.get(text, _word_set)


def _word_set(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


_ROLE = re.compile(r"^\s*[\w .'-]{1,40}:\s+")


def _spoken(memory: Memory) -> str:
    """A turn's text without its "role: " prefix; any other memory's content."""
    return _ROLE.sub("", memory.content, count=1) if isinstance(memory, Turn) else memory.content


def _echoes(memory: Memory, question: frozenset[str], text: str) -> bool:
    """Whether ``memory`` is the question being asked: a turn with the same text, a user's turn
    near-identical to it (an earlier asking of the same question is not an answer to it), or an
    episode with no summary yet whose content is that asking (a conversation is titled by its first
    message until it is summarised)."""
    if isinstance(memory, Episode) and not memory.summary:
        return _near_duplicate(_words(memory.content), [question])
    if not isinstance(memory, Turn):
        return False
    spoken = _spoken(memory)
    if spoken.strip().casefold() == text.strip().casefold():
        return True
    return memory.role == "user" and _near_duplicate(_words(spoken), [question])


def _when(memory: Memory) -> str:
    at = memory.occurred_at or memory.created_at
    return at.strftime("%Y-%m-%d %H:%M")


def _render(memory: Memory, replaced: Memory | None = None) -> str:
    """A retrieved memory as the agent reads it: its time, its text verbatim (so it can be quoted),
    and what makes it usable on its own — a decision's outcome and reasons, an episode's summary
    and outcome, a procedure's name, and for a fact that replaced another, what it replaced."""
    when = f"[{_when(memory)}]"
    if isinstance(memory, Decision):
        status = f"outcome: {memory.outcome.value}"
        if memory.outcome_note:
            status += f" ({memory.outcome_note})"
        lines = [f"{when} Decided: {memory.content} — {status}; confidence {memory.confidence:.1f}"]
        if memory.reasons:
            lines.append("  Because: " + "; ".join(f"{r.text} ({r.type.value})" for r in memory.reasons))
        if memory.context:
            lines.append(f"  Context: {memory.context}")
        return "\n".join(lines)
    if isinstance(memory, Episode):
        body = memory.title or memory.content
        if memory.summary and memory.summary != body:
            body = f"{body} — {memory.summary}"
        if memory.outcome not in (
            EpisodeOutcome.ONGOING,
            EpisodeOutcome.SUCCESS,
            EpisodeOutcome.INFORMATIONAL,
        ):
            body += f" (outcome: {memory.outcome.value})"
        return f"{when} {body}"
    if isinstance(memory, Procedure):
        return f"{when} {memory.name}: {memory.content}"
    if replaced is not None:
        return f'{when} {memory.content} (current; it replaced "{replaced.content}" of {_when(replaced)})'
    return f"{when} {memory.content}"


class _Filler:
    """Fills one section within its budget, recording what it leaves out."""

    def __init__(self, name: str, budget: int) -> None:
        self.section = ContextSection(name=name, title=TITLES[name], tokens=0, budget=budget)
        self.header = count_tokens(f"## {TITLES[name]}\n")

    def add(
        self,
        text: str,
        *,
        kind: str,
        id_: str | None = None,
        score: float | None = None,
        max_tokens: int = ITEM_MAX_TOKENS,
    ) -> bool:
        text, tokens = clip_and_count(text, max_tokens if id_ is not None else None)
        tokens += 1  # the newline
        overhead = 0 if self.section.items else self.header
        if self.section.tokens + overhead + tokens > self.section.budget:
            self.section.dropped.append(DroppedItem(id=id_, reason=DropReason.BUDGET))
            return False
        self.section.items.append(ContextItem(id=id_, kind=kind, text=text, tokens=tokens, score=score))
        self.section.tokens += overhead + tokens
        return True

    def drop(self, id_: str | None, reason: DropReason) -> None:
        self.section.dropped.append(DroppedItem(id=id_, reason=reason))


def render(sections: Sequence[ContextSection]) -> str:
    parts = []
    for s in sections:
        if s.items:
            parts.append(f"## {s.title}\n" + "\n".join(i.text for i in s.items))
    return "\n\n".join(parts)


def build_context(inputs: ContextInputs) -> Context:
    """Assemble the context; it never exceeds the total budget."""
    budget = inputs.budget or inputs.frame.budget
    profile = _profile(inputs, budget.user_profile)
    fixed = [
        _identity(inputs, budget.identity),
        profile,
        _censors(inputs, budget.censors),
        _frame(inputs, budget.frame),
        _working_memory(inputs, budget.working_memory),
    ]
    # a section has something to show when one of its hits clears the floor: a weak episode at the
    # end of the hits must not take a share of the room from the turns that answer
    present = {
        SECTION_OF_KIND[h.kind]
        for h in (*inputs.hits, *inputs.timeline)
        if h.kind in SECTION_OF_KIND and h.score >= _floor(inputs, h.memory)
    }
    if inputs.recent:  # a recap shows the latest conversations with the episodes' budget too
        present |= {"recent", "episodes"} if inputs.recap else {"recent"}
    budget = _room_left(budget, fixed, present, fill=inputs.fill)
    recent, shown = _recent(inputs, budget.recent + (budget.episodes if inputs.recap else 0))
    in_order: list[ContextSection] = []
    if inputs.timeline and not inputs.greeting:
        budget, section = _in_order(inputs, budget, shown)
        in_order.append(section)
    # what the profile shows is not shown again; what did not fit there may be retrieved
    shown |= {item.id for item in profile.items if item.id}
    retrieved = [] if inputs.greeting else _retrieved(inputs, budget, shown)
    sections = [
        *fixed,
        *([recent] if inputs.recap else []),
        *in_order,
        *retrieved,
        *([] if inputs.recap else [recent]),
    ]
    sections = [s for s in sections if s.budget > 0 or s.items or s.dropped]
    text, tokens = _within_total(sections, budget.total)
    return Context(
        session_id=inputs.session_id,
        frame=inputs.frame.id,
        frame_confidence=inputs.frame_confidence,
        greeting=inputs.greeting,
        recap=inputs.recap,
        query=inputs.query,
        text=text,
        tokens=tokens,
        budget=budget.total,
        sections=sections,
    )


# the sections filled from recall, in their order; with the recent conversations, those sharing the room
RECALLED = ("decisions", "facts", "procedures", "episodes", "turns")
RETRIEVED = ("recent", *RECALLED)


def _room_left(
    budget: Budget, fixed: Sequence[ContextSection], present: set[str], *, fill: bool = False
) -> Budget:
    """``budget`` with the retrieved sections' budgets shrunk when they would not fit in what the
    fixed sections left of the total: a fixed section takes what it used, not its ceiling, and a
    retrieved section with nothing to show (``present`` names those that have something) takes
    nothing, so a small total still holds evidence. The sections that have something share the
    room in proportion to their ceilings, never above them."""
    used = sum(s.tokens for s in fixed) + SECTION_GAP * sum(1 for s in fixed if s.items)
    room = max(0, budget.total - used)
    if not fill and sum(getattr(budget, name) for name in RETRIEVED) <= room:
        return budget
    wanted = sum(getattr(budget, name) for name in RETRIEVED if name in present)
    share = (room / wanted if fill else min(1.0, room / wanted)) if wanted else 0.0
    return budget.model_copy(
        update={name: int(getattr(budget, name) * share) if name in present else 0 for name in RETRIEVED}
    )


def _within_total(sections: list[ContextSection], total: int) -> tuple[str, int]:
    """Drop items from the last section up until the rendered text fits ``total`` tokens; the
    text and its tokens."""
    text = render(sections)
    tokens = count_tokens(text)
    while tokens > total:
        victim = next((s for s in reversed(sections) if s.items), None)
        if victim is None:
            return "", 0
        # Drop about as many items as the excess needs (at least one), then measure again.
        excess = tokens - total
        while victim.items and excess > 0:
            item = victim.items.pop()
            victim.tokens -= item.tokens
            excess -= item.tokens
            victim.dropped.append(DroppedItem(id=item.id, reason=DropReason.TOTAL))
        if not victim.items:
            victim.tokens = 0
        text = render(sections)
        tokens = count_tokens(text)
    return text, tokens


def _identity(inputs: ContextInputs, budget: int) -> ContextSection:
    f = _Filler("identity", budget)
    for s in inputs.identity:
        f.add(f"{s.section.capitalize()}: {s.content}", kind="identity")
    return f.section


def _profile(inputs: ContextInputs, budget: int) -> ContextSection:
    """The user's standing instructions first (how to answer, quoted as said, with the day), then
    their preference and person facts."""
    f = _Filler("user_profile", budget)
    for told in inputs.instructions:
        said = told.said() if isinstance(told, Turn) else told.content
        f.add(
            f"- Standing instruction ({told.occurred_at:%Y-%m-%d}): {said}", kind=told.kind.value, id_=told.id
        )
    for fact in inputs.profile:
        if fact.superseded_by is not None:
            f.drop(fact.id, DropReason.SUPERSEDED)
        else:
            f.add(f"- {fact.content}", kind="fact", id_=fact.id)
    return f.section


def _censors(inputs: ContextInputs, budget: int) -> ContextSection:
    f = _Filler("censors", budget)
    for warning in inputs.warnings:
        f.add(f"WARNING: {warning}", kind="warning")
    order = {"absolute": 0, "block": 1, "warn": 2}
    for c in sorted(inputs.censors, key=lambda c: order.get(c.action.value, 3)):
        # The reason first: a model reads it; the pattern says what triggers it.
        text = f"{c.reason} (pattern: {c.trigger_pattern})" if c.reason else f"pattern: {c.trigger_pattern}"
        f.add(f"- [{c.action.value}] {text}", kind="censor", id_=c.id)
    return f.section


def _frame(inputs: ContextInputs, budget: int) -> ContextSection:
    f = _Filler("frame", budget)
    frame = inputs.frame
    f.add(f"{frame.name}: {frame.instructions}", kind="frame")
    return f.section


def _working_memory(inputs: ContextInputs, budget: int) -> ContextSection:
    f = _Filler("working_memory", budget)
    wm = inputs.working_memory
    if wm is None:
        return f.section
    if wm.current_task:
        f.add(f"Current task: {wm.current_task}", kind="task")
    for item in sorted(wm.items, key=lambda i: i.relevance, reverse=True):
        f.add(f"- {item.content}", kind=item.kind, id_=item.memory_id)
    for thread in wm.open_threads:
        f.add(f"Open thread: {thread}", kind="thread")
    return f.section


def _recent(inputs: ContextInputs, budget: int) -> tuple[ContextSection, set[str]]:
    f = _Filler("recent", budget)
    shown: set[str] = set()
    for memory in list(inputs.recent)[:RECENT_EPISODES]:
        title = memory.title if isinstance(memory, Episode) and memory.title else memory.content[:80]
        if f.add(f"- [{_when(memory)}] {title}", kind=memory.kind.value, id_=memory.id):
            shown.add(memory.id)
    return f.section, shown


def _in_order(inputs: ContextInputs, budget: Budget, shown: set[str]) -> tuple[Budget, ContextSection]:
    """The "In order" section: the covering recall's memories as a dated timeline, oldest first,
    each clipped to TIMELINE_ITEM_TOKENS; it may take half of the episodes' and turns' budgets,
    and what it leaves of that half is theirs again (the budget left for them is returned). When
    the steps do not all fit, the most that fit are shown spread over the whole span, the first
    and the last kept, so a small budget still tells the story to its end. What it shows joins
    ``shown``, so no later section repeats it."""
    episodes, turns = budget.episodes // 2, budget.turns // 2
    f = _Filler("in_order", episodes + turns)
    question = _words(inputs.query)
    kept: list[frozenset[str]] = []
    steps: list[tuple[RecallHit, str, int]] = []  # each step with its line and the line's tokens
    for hit in sorted(inputs.timeline, key=lambda h: h.memory.occurred_at):
        memory = hit.memory
        words = _words(memory.content)
        if hit.id in shown or _near_duplicate(words, kept):
            f.drop(hit.id, DropReason.DUPLICATE)
        elif _echoes(memory, question, inputs.query):
            f.drop(hit.id, DropReason.QUESTION)
        elif getattr(memory, "superseded_by", None) is not None:
            f.drop(hit.id, DropReason.SUPERSEDED)
        elif hit.score < _floor(inputs, memory):
            f.drop(hit.id, DropReason.SCORE_FLOOR)
        else:
            line = "- " + " ".join(_render(memory).split())  # one line per step, whatever its layout
            steps.append((hit, line, clip_and_count(line, TIMELINE_ITEM_TOKENS)[1] + 1))
            kept.append(words)
    most = len(steps)
    while most and f.header + sum(t for _, _, t in spread(steps, most)) > f.section.budget:
        most -= 1
    chosen = {hit.id for hit, _, _ in spread(steps, most)}
    for hit, line, _ in steps:
        if hit.id not in chosen:
            f.drop(hit.id, DropReason.BUDGET)
        elif f.add(
            line, kind=hit.kind.value, id_=hit.id, score=round(hit.score, 4), max_tokens=TIMELINE_ITEM_TOKENS
        ):
            shown.add(hit.id)
    unused = max(0, episodes + turns - f.section.tokens - (SECTION_GAP if f.section.items else 0))
    back = unused * episodes // (episodes + turns) if episodes + turns else 0
    left = budget.model_copy(
        update={"episodes": budget.episodes - episodes + back, "turns": budget.turns - turns + unused - back}
    )
    return left, f.section


def _retrieved(inputs: ContextInputs, budget: Budget, shown: set[str]) -> list[ContextSection]:
    """The retrieved sections, filled twice: what a section leaves of its share (one weak episode
    in a share of hundreds of tokens) goes to the sections that ran out of room, in proportion to
    their shares, up to their ceilings (up to the whole room when the caller chose the total)."""
    budgets = {name: getattr(budget, name) for name in RECALLED}
    sections = _fill_retrieved(inputs, budgets, shown)
    full = [s.name for s in sections if any(d.reason == DropReason.BUDGET for d in s.dropped)]
    spare = sum(s.budget - s.tokens for s in sections if s.name not in full)
    if not full or spare <= 0:
        return sections
    ceilings = inputs.budget or inputs.frame.budget
    shares = sum(budgets[name] for name in full) or len(full)
    for name in full:
        grown = budgets[name] + spare * (budgets[name] or 1) // shares
        budgets[name] = grown if inputs.fill else min(grown, max(budgets[name], getattr(ceilings, name)))
    for s in sections:
        if s.name not in full:
            budgets[s.name] = s.tokens
    return _fill_retrieved(inputs, budgets, shown)


def _fill_retrieved(inputs: ContextInputs, budgets: dict[str, int], shown: set[str]) -> list[ContextSection]:
    fillers = {name: _Filler(name, b) for name, b in budgets.items()}
    said = [_words(t) for t in inputs.already_said]
    question = _words(inputs.query)
    kept: list[frozenset[str]] = []
    for hit in inputs.hits:
        name = SECTION_OF_KIND.get(hit.kind)
        if name is None:
            continue
        f, memory = fillers[name], hit.memory
        words = _words(memory.content)
        if hit.id in shown:
            f.drop(hit.id, DropReason.DUPLICATE)  # already in the user's profile or the recent tier
        elif _echoes(memory, question, inputs.query):
            f.drop(hit.id, DropReason.QUESTION)
        elif hit.kind == MemoryKind.EPISODE and memory.session_id == inputs.session_id:
            f.drop(hit.id, DropReason.ALREADY_SAID)  # this very conversation
        elif getattr(memory, "superseded_by", None) is not None:
            f.drop(hit.id, DropReason.SUPERSEDED)
        elif hit.score < _floor(inputs, memory):
            f.drop(hit.id, DropReason.SCORE_FLOOR)
        elif _near_duplicate(words, said):
            f.drop(hit.id, DropReason.ALREADY_SAID)
        elif _near_duplicate(words, kept):
            f.drop(hit.id, DropReason.DUPLICATE)
        elif f.add(
            _render(memory, inputs.replaced.get(hit.id)),
            kind=hit.kind.value,
            id_=hit.id,
            score=round(hit.score, 4),
            max_tokens=DECISION_MAX_TOKENS if hit.kind == MemoryKind.DECISION else ITEM_MAX_TOKENS,
        ):
            kept.append(words)
    return [fillers[name].section for name in budgets]


def _floor(inputs: ContextInputs, memory: Memory) -> float:
    """The relevance a retrieved memory needs to be shown (OTHERS_SCORE_FLOOR for conversations
    that are not the asking user's)."""
    conversation = memory.kind in (MemoryKind.TURN, MemoryKind.EPISODE)
    if inputs.user_id and conversation and memory.user_id != inputs.user_id:
        return (
            float("inf")
            if ABOUT_THE_ASKER.search(inputs.query)
            else max(inputs.score_floor, OTHERS_SCORE_FLOOR)
        )
    return inputs.score_floor


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)  # the union's size, without building it


def _near_duplicate(words: frozenset[str], others: Sequence[frozenset[str]]) -> bool:
    """Whether ``words`` overlaps one of ``others`` by DUPLICATE_JACCARD or more. Two sets whose
    sizes differ too much cannot (the overlap is at most the smaller over the larger): they are
    passed without intersecting them."""
    for other in others:
        small, large = sorted((len(words), len(other)))
        if small and small / large >= DUPLICATE_JACCARD and _jaccard(words, other) >= DUPLICATE_JACCARD:
            return True
    return False
