"""What kind of memory a question asks for, from its wording.

"What did we decide about X?" wants a decision, "why did we ...?" a decision and its reasons,
"how do I ...?" a procedure, "can I ...?" a censor (or a decision), "what happened ...?" an
episode, "what does Dana prefer ...?" a preference or a fact about a person. The re-ranker reads
the match between a candidate's kind and the question's as one feature (``kind_match``); a question
with no such cue asks for nothing in particular, and every kind competes on its text alone.

The cues are general English, not phrases of any dataset: each is a way people ask for that kind
of memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nous.models import MemoryKind

_DECISION = re.compile(
    r"\b(decid\w*|decision\w*|choos\w*|chose|chosen|pick(ed)?|select(ed)?|settle[d]? on|go(ing)? with|"
    r"went with|opt(ed)? for|agree[d]?( on| to)?|end(ed)? up|plump(ed)? for|land(ed)? on|our call|"
    r"rule(d)? out|instead of|rather than|over the other|what made (us|you|them|him|her))\b",
    re.IGNORECASE,
)
_WHY = re.compile(r"^\s*(remind me )?(why|how come|what('s| is| was) the reason)\b|\bwhy\b", re.IGNORECASE)
_PROCEDURE = re.compile(
    r"\b(how (do|can|should|would) (i|we|you|one|they)|how to|steps?|process|procedure|"
    r"walk (me|us) through|instructions?|checklist|guide|runbook|playbook|"
    r"what (do|should|must|would) (i|we|you) (have to |need to )?(do|check|prepare|know))\b",
    re.IGNORECASE,
)
_PERMISSION = re.compile(
    r"^\s*(so,? |ok,? |okay,? |well,? )?(can|could|may|should|shall) (i|we)\b|"
    r"\b(is it (ok|okay|fine|alright|allowed|safe)|(it's|it is) (ok|okay|fine|alright)|"
    r"(am i|are we|i'm|we're) (allowed|permitted)|any objections?|do (i|we) have permission|mind if)\b",
    re.IGNORECASE,
)
# Asking the agent to act: what it is asked to do may be something it must not do.
_REQUEST = re.compile(r"\b(can|could|would|will) you (please )?\w+|^\s*please\b", re.IGNORECASE)
_EPISODE = re.compile(
    r"\b(what happened|happen(ed)? (when|at|during|with|to)|went wrong|go wrong|went (well|badly)|"
    r"how did .{1,60}\b(go|turn out)|run into|ran into|came up|come up|"
    r"what did (we|they|you) (find|learn|discover))\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(prefer\w*|favou?rite|enjoy\w*|allerg\w*|dislike[sd]?|diet\w*|habits?|taste)\b|"
    r"\b(do|does|did|would) [\w' ]{1,40}?\b(like|love|hate|want|expect)\b",
    re.IGNORECASE,
)
# A named person choosing ("which tiles did Aisha pick?") is that person's preference as much as
# a decision: "did we pick" stays a decision alone. The name is a capitalised word (case-sensitive).
_PERSON_CHOICE = re.compile(
    r"\b(?:[Dd]id|[Dd]oes|[Ww]ill|[Ww]ould|[Hh]as|[Hh]ad)\s+(?!I\b|We\b|You\b|They\b)[A-Z][a-z]+\s+"
    r"(?:pick|choose|chose|select|go for|opt for|settle on)\b"
)
_FACT_CATEGORIES = ("preference", "person")
# Questions whose answer is a story told by many memories: an order, a summary, a change over
# time, everything so far. Their evidence is spread over time, which the most similar few do not
# cover (search.py, ``_cover``). Counts and totals across sessions ("how many times...", "in
# total") are not among them: held out, spreading their results over time lost more of their
# answers than it found (docs/retrieval.md, "Covering recall").
_COVER = re.compile(
    r"\b(in (what|which|chronological|the) order|(the )?order (in which|of)|in order\b|sequence of|"
    r"timeline|chronolog\w*|step by step|summar\w*|overview|recap of|"
    r"(develop|progress|evolv|chang|grow|improv)\w* (over time|throughout|across|since)|over time|"
    r"so far|to date)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Intent:
    """The kinds of memory a question asks for (empty: no particular kind), and whether it asks
    after preferences and people (facts of those categories)."""

    kinds: frozenset[MemoryKind]
    preference: bool = False

    def matches(self, kind: MemoryKind, category: str | None) -> bool:
        if kind in self.kinds:
            return True
        return self.preference and kind == MemoryKind.FACT and category in _FACT_CATEGORIES


NONE = Intent(frozenset())


def asks_to_cover(text: str) -> bool:
    """Whether ``text`` asks for many memories at once (an order, a summary, a change over time,
    all of something so far) rather than the one that answers best."""
    return _COVER.search(text) is not None


def query_intent(text: str) -> Intent:
    """The kinds of memory ``text`` asks for."""
    kinds: set[MemoryKind] = set()
    if _DECISION.search(text) or _WHY.search(text):
        kinds.add(MemoryKind.DECISION)
    if _PROCEDURE.search(text):
        kinds.add(MemoryKind.PROCEDURE)
    if _PERMISSION.search(text):
        kinds.update((MemoryKind.CENSOR, MemoryKind.DECISION))
    if _REQUEST.search(text):
        kinds.add(MemoryKind.CENSOR)
    if _EPISODE.search(text):
        kinds.add(MemoryKind.EPISODE)
    preference = _PREFERENCE.search(text) is not None or _PERSON_CHOICE.search(text) is not None
    if not kinds and not preference:
        return NONE
    return Intent(frozenset(kinds), preference)


# "the friend who went to the concert", "someone that ..." : a person, place or thing the question
# describes instead of naming; the best hits for the description name it (a two-step question).
_BRIDGE = re.compile(
    r"\b(?:the|a|an|which|that)\s+(?:[a-z]+\s+){0,2}?"
    r"(?:friends?|person|people|guy|woman|man|girl|boy|colleague|coworker|neighbou?r|relative|"
    r"cousin|sister|brother|kid|child|one|place|restaurant|cafe|bar|shop|store|city|town|country|"
    r"company|team|band|artist|book|movie|show|game|song|event|pet|dog|cat)"
    r"\s+(?:who|that|which|where|whom)\s+[^?,.;]+",
    re.IGNORECASE,
)
_ANYONE = re.compile(r"\b(?:someone|somebody|anyone|anybody)\s+(?:who|that)\s+[^?,.;]+", re.IGNORECASE)


def describes_unnamed(text: str) -> bool:
    """Whether ``text`` describes a person, place or thing instead of naming it ("where did the
    friend who went to the concert eat?"): a question in two steps, who or what, then the rest."""
    return (_BRIDGE.search(text) or _ANYONE.search(text)) is not None


_QUESTION_WORDS = frozenset(
    [
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "did",
        "does",
        "do",
        "is",
        "was",
        "were",
        "are",
    ]
)


def second_step(text: str, found: str, names: list[str]) -> str:
    """The question's second step: ``names`` (read off the first step's best memory, ``found``)
    and the words of ``text`` that ``found`` does not already answer. "Where did the friend who
    went to the concert eat afterwards?" with "Priya went to the Radiohead concert..." ->
    "Priya where did friend who eat afterwards"."""
    answered = {w.lower() for w in re.findall(r"[A-Za-z']+", found)}
    rest = [
        w
        for w in re.findall(r"[A-Za-z0-9']+", text)
        if w.lower() in _QUESTION_WORDS or w.lower() not in answered
    ]
    return " ".join([*names, *rest])
