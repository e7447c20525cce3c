"""Offline fact extraction: a person's self-disclosures in a conversation, rewritten as standalone
third-person facts about them, dated by the session.

"I went to a support group yesterday" said by Caroline in a session of 8 May 2023 becomes
"Caroline went to a support group on 7 May 2023". Only statements about the speaker's own life
qualify (a first-person subject, not a question, not small talk), and of those only the most
specific few per speaker and session are kept: junk in the store is worse than a missing fact.
Deterministic, no model, no network.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from nous.events.lexicon import ADVERBS, IRREGULAR_PAST, STOP_WORDS

PER_SESSION = 6  # facts kept per session, at most (best first)
MIN_WORDS = 5
MAX_WORDS = 60

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|I'll|my|me|myself|we|we're|we've|our|us)\b", re.IGNORECASE)
_SUBJECT_I = re.compile(
    r"^(?:(?:so|and|but|well|yeah|yes|oh|also|actually|honestly|lately|recently|"
    r"last \w+|yesterday|today)[, ]+)*(I|I'm|I've|I'd|I'll|my|we|we're|we've|our)\b",
    re.IGNORECASE,
)
_PHATIC = re.compile(
    r"^(thanks|thank you|congrat|wow|haha|lol|hey|hi|hello|good to|nice to|see you|bye|take care|"
    r"that's (so |really )?(cool|great|awesome|amazing|nice|sweet)|sounds (great|good|fun)|"
    r"i (totally |completely )?(agree|understand|know what you mean|hear you)|me too|same here|"
    r"i'm (so )?(glad|happy) (to hear|for you)|i'm (so )?sorry|i hope|i bet|i wish you)",
    re.IGNORECASE,
)
_HEDGE = re.compile(r"\b(I think|I guess|I suppose|I feel like|I believe|maybe|probably|I wonder)\b", re.I)
_EVENT_VERBS = re.compile(
    r"\b(went|go(?:ing)? to|started|start(?:ing)?|joined|join(?:ing)?|bought|moved|adopted|visited|"
    r"finished|got|made|took|signed|attended|ran|painted|won|lost|met|married|graduated|"
    r"applied|launched|built|learned|learnt|volunteer(?:ed|ing)?|travel(?:l?ed|l?ing)|"
    r"planning|plan to|decided|working on|work(?:ing)? as|work at|have been|has been|"
    r"just (?:got|finished|started|signed|bought)|recently|last (?:week|month|year|weekend)|"
    r"yesterday|this (?:week|month|year|weekend)|next (?:week|month|year))\b",
    re.IGNORECASE,
)
_IDENTITY = re.compile(
    r"\b(my (?:\w+ )?(?:name|job|dog|cat|kids?|son|daughter|husband|wife|partner|mom|mother|dad|"
    r"father|family|friend|brother|sister|favorite|favourite|goal|dream|passion|hobby|home|house|"
    r"car|team|career)|I(?:'m| am) (?:a|an) |I (?:love|like|enjoy|prefer|hate|collect|play|own|"
    r"have (?:a|an|two|three)))\b",
    re.IGNORECASE,
)
_CAPITALISED = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+")
_NUMBER = re.compile(r"\b\d+\b")

# Past tense forms that take no agreement change ("I went" -> "Caroline went").


@dataclass(slots=True)
class Statement:
    """One sentence of a conversation, with who said it, where, and its surroundings."""

    speaker: str
    text: str
    turn_ids: list[str]
    at: datetime
    answers_question: bool = False  # the turn before it ended with a question
    next_turn: str = ""  # what the other speaker said next
    turn_chars: int = 0  # length of the whole message it is part of


@dataclass(slots=True)
class CandidateFact:
    """A fact extracted from a conversation, about its ``subject``."""

    text: str
    subject: str
    turn_ids: list[str] = field(default_factory=list)
    occurred_at: datetime | None = None
    score: float = 0.0


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(" ".join(text.split())) if s.strip()]


def statements_of(
    messages: list[tuple[str, str, list[str]]], at: datetime, *, people: set[str] | None = None
) -> list[Statement]:
    """The sentences of ``messages`` (speaker, text, message ids), each with its surroundings; with
    ``people``, only those said by them (an assistant's sentences are not about its own life)."""
    out: list[Statement] = []
    for i, (speaker, text, ids) in enumerate(messages):
        previous = messages[i - 1][1] if i else ""
        following = messages[i + 1][1] if i + 1 < len(messages) else ""
        if people is not None and speaker not in people:
            continue
        for sentence in sentences(text):
            out.append(
                Statement(
                    speaker,
                    sentence,
                    ids,
                    at,
                    answers_question=previous.rstrip().endswith("?"),
                    next_turn=following,
                    turn_chars=len(text),
                )
            )
    return out


FEATURES: tuple[str, ...] = (
    "first_person",  # says I / my / we / our anywhere
    "first_person_subject",  # ... as the subject of the sentence
    "question",
    "small_talk",  # thanks, wow, that's cool, I agree ...
    "hedge",  # I think, maybe, probably
    "event",  # an event verb or a time marker (went, started, last week ...)
    "identity",  # my job / my dog / I'm a ... / I love ...
    "names",  # capitalised words inside the sentence (people, places), up to 3
    "length",  # words / 25, up to 1
    "short",  # fewer than MIN_WORDS words
    "answers_question",
    "recent",  # yesterday, last week, recently, just ...
    "past",  # a word in -ed
    "reaction",  # the other speaker's next message opens with wow / congrats / that's great
    "asked_more",  # ... or asks a question about it
    "message_length",  # the whole message's characters / 300, up to 1
    "content",  # share of words that are not function words
)
# Chosen by leave-one-conversation-out logistic regression over the LoCoMo development
# conversations (label: the rewritten sentence matches an annotated event of its speaker in its
# session); scripts/fit_extractor.py reproduces them and prints the per-fold figures.
WEIGHTS = np.array(
    [2.23, 0.64, -0.45, -0.47, -0.16, 0.67, 0.42, 0.62, 1.31, -0.77, 0.21, 0.91, 0.27, 0.47, 0.45, 0.49, 0.92]
)
BIAS = -6.47
MIN_SCORE = -2.0  # a statement scored below this is never kept

_RECENT = re.compile(
    r"\b(yesterday|last (week|weekend|month|year|night|friday|saturday|sunday)|recently|just)\b", re.I
)
_REACTION = re.compile(
    r"\W*(wow|whoa|congrat|that'?s (so |really )?(awesome|great|amazing|cool|wonderful|exciting|"
    r"impressive)|so cool|omg|amazing|awesome|nice|sounds)",
    re.IGNORECASE,
)


def features(st: Statement) -> np.ndarray:
    s, words = st.text, st.text.split()
    lowered = re.findall(r"[a-z]+", s.lower())
    return np.array(
        [
            float(bool(_FIRST_PERSON.search(s))),
            float(bool(_SUBJECT_I.search(s))),
            float(s.rstrip().endswith("?")),
            float(bool(_PHATIC.match(s))),
            float(bool(_HEDGE.search(s))),
            float(bool(_EVENT_VERBS.search(s))),
            float(bool(_IDENTITY.search(s))),
            min(3, len(_CAPITALISED.findall(s))) / 3,
            min(1.0, len(words) / 25),
            float(len(words) < MIN_WORDS),
            float(st.answers_question),
            float(bool(_RECENT.search(s))),
            float(bool(re.search(r"\b\w+ed\b", s))),
            float(bool(_REACTION.match(st.next_turn))),
            float("?" in st.next_turn),
            min(1.0, st.turn_chars / 300),
            len([w for w in lowered if w not in STOP_WORDS]) / max(1, len(words)),
        ]
    )


def salience(st: Statement) -> float:
    """How likely the statement records something about its speaker's life (a logit)."""
    if not st.text.strip():
        return -np.inf
    return float(features(st) @ WEIGHTS + BIAS)


def extract_facts(statements: list[Statement], *, limit: int = PER_SESSION) -> list[CandidateFact]:
    """The ``limit`` most telling statements of a session, rewritten about their speakers, in the
    order they were said."""
    scored = [(salience(st), i, st) for i, st in enumerate(statements)]
    best = sorted((x for x in scored if x[0] >= MIN_SCORE), key=lambda x: (-x[0], x[1]))[:limit]
    return [
        CandidateFact(
            text=third_person(st.text, st.speaker, st.at),
            subject=st.speaker,
            turn_ids=st.turn_ids,
            occurred_at=st.at,
            score=s,
        )
        for s, _, st in sorted(best, key=lambda x: x[1])
    ]


# -- rewriting ----------------------------------------------------------------------------------
_CONTRACTIONS = [
    (r"\bI'm\b", "{name} is"),
    (r"\bI am\b", "{name} is"),
    (r"\bI've\b", "{name} has"),
    (r"\bI have\b", "{name} has"),
    (r"\bI'd\b", "{name} would"),
    (r"\bI'll\b", "{name} will"),
    (r"\bI was\b", "{name} was"),
    (r"\bI do\b", "{name} does"),
    (r"\bI don't\b", "{name} doesn't"),
    (r"\bI didn't\b", "{name} didn't"),
    (r"\bI can't\b", "{name} can't"),
    (r"\bmyself\b", "{name}"),
    (r"\bmy\b", "{name}'s"),
    (r"\bMy\b", "{name}'s"),
    (r"\bmine\b", "{name}'s"),
    (r"\bwe're\b", "{name} and family are"),
    (r"\bwe've\b", "{name} and family have"),
    (r"\bwe\b", "{name} and family"),
    (r"\bWe\b", "{name} and family"),
    (r"\bour\b", "their"),
    (r"\bOur\b", "Their"),
    (r"\bus\b", "them"),
    (r"\bme\b", "{name}"),
]


def _agree(verb: str) -> str:
    """Third-person singular present of a verb that followed "I" ("love" -> "loves")."""
    low = verb.lower()
    if low in IRREGULAR_PAST or low in ADVERBS or low.endswith(("ed", "s")) or not low.isalpha():
        return verb
    if low.endswith(("sh", "ch", "x", "o", "z")):
        return verb + "es"
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


_TAIL = re.compile(
    r"\s*(?:\s[-–—]\s|;|,? and it was\b|,? it was\b|,? it's been\b|,? which (?:was|is)\b|"
    r",? so (?:much )?(?:fun|cool|great)\b|,? lol\b|,? haha\b).*$",
    re.IGNORECASE,
)
_SLANG = [
    (r"\bfam\b", "family"),
    (r"\bedu\b", "education"),
    (r"\bkiddos\b", "kids"),
    (r"\bbday\b", "birthday"),
]


def core(sentence: str) -> str:
    """The statement without its trailing comment ("... - it was so fun") and chat slang."""
    text = _TAIL.sub("", sentence).strip()
    if len(text.split()) < MIN_WORDS:
        text = sentence
    for pattern, repl in _SLANG:
        text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    return text


def third_person(sentence: str, name: str, at: datetime) -> str:
    """``sentence`` about ``name`` instead of "I", with relative dates made absolute."""
    text = resolve_dates(core(sentence), at)
    text = re.sub(r"^(?:(?:so|and|but|well|yeah|yes|oh|also|actually|honestly)[, ]+)+", "", text, flags=re.I)
    for pattern, repl in _CONTRACTIONS:
        text = re.sub(pattern, repl.format(name=name), text)
    text = re.sub(r"\bI\s+(\w+)", lambda m: f"{name} {_agree(m.group(1))}", text)
    text = re.sub(r"\bI\b", name, text)
    text = text.strip()
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    return text.rstrip("!") if text.endswith("!") else text


def _day(t: datetime) -> str:
    return f"{t.day} {t:%B %Y}"


def resolve_dates(text: str, at: datetime) -> str:
    """Relative dates ("yesterday", "last year", "next month") as absolute ones, from ``at``."""
    last_month = at.replace(day=1) - timedelta(days=1)
    next_month = (at.replace(day=28) + timedelta(days=4)).replace(day=1)
    rules = [
        (r"\byesterday\b", f"on {_day(at - timedelta(days=1))}"),
        (r"\btoday\b", f"on {_day(at)}"),
        (r"\btomorrow\b", f"on {_day(at + timedelta(days=1))}"),
        (r"\blast night\b", f"on the night of {_day(at - timedelta(days=1))}"),
        (r"\blast week(end)?\b", f"the week before {_day(at)}"),
        (r"\bnext week(end)?\b", f"the week after {_day(at)}"),
        (r"\blast month\b", f"in {last_month:%B %Y}"),
        (r"\bnext month\b", f"in {next_month:%B %Y}"),
        (r"\bthis month\b", f"in {at:%B %Y}"),
        (r"\blast year\b", f"in {at.year - 1}"),
        (r"\bthis year\b", f"in {at.year}"),
        (r"\bnext year\b", f"in {at.year + 1}"),
    ]
    for pattern, repl in rules:
        text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    return text
