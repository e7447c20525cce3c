"""Offline fact extraction: a person's self-disclosures in a conversation, rewritten as standalone
third-person facts about them, dated by the session.

"I went to a support group yesterday" said by Caroline in a session of 8 May 2023 becomes
"Caroline went to a support group on 7 May 2023". Candidates are the clauses of what a person
wrote in prose (``prose.py``: never pasted code, traces or commands), cut before a request or
question and screened (``screen.py``: never a question, a request, "not sure how", words to the
other speaker, a URL); of those only the most specific few per session are kept, scored by a
logistic model over cheap features, near-repeats skipped: junk in the store is worse than a
missing fact. A standing instruction to an assistant ("Always include version numbers") is kept
as a preference. Deterministic, no model, no network.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from nous.events.category import categorize
from nous.events.rewrite import resolve_dates, standing_instruction_fact, third_person
from nous.events.screen import clauses, rejection, standing_instruction, strip_openers, without_fillers
from nous.language.lexicon import STOP_WORDS
from nous.language.prose import prose_sentences

__all__ = ["resolve_dates", "third_person"]

PER_SESSION = 6  # facts kept per session, at most (best first)
STANDING_PER_SESSION = 3  # standing instructions kept besides
MIN_WORDS = 5
# A fact says something about someone: fewer content words than this ("Caroline loves it.",
# "The user is ok.") is not one, whatever its score. The subject counts as one.
MIN_CONTENT_WORDS = 3
MAX_CHARS = 300  # a longer fact is not kept
REPEAT_OVERLAP = 0.6  # a candidate sharing this share of its content words with a kept one is a repeat

_SENTENCE = re.compile(
    r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\b(?:Mr|Dr|Ms|St|vs)\.)(?<!Mrs\.)(?<!e\.g\.)(?<!i\.e\.)\s+(?=[A-Z\"'(])"
)
_LOWER_I = re.compile(r"\bi(?=\b(?!\.\w)|')")
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
# Something lasting a person says about themselves: where they live or work, health, diet, what
# they like or are. Such a statement is kept even when the event-fitted score is low: a short
# chat ("I live in Lyon", "I'm allergic to cats") has nothing better, and in a long one it still
# competes for PER_SESSION by score.
_LASTING = re.compile(
    r"^(?:I|I'm|I am|I've|my|we|we're|we are|our)\b.*\b(?:live[sd]?|living|grew up|was born|work(?:s|ed)? "
    r"(?:as|at|for|in)|allergic|intolerant|vegan|vegetarian|pescatarian|diabetic|favou?rite|love|hate|"
    r"prefer|can't stand|dislike|enjoy|name is|married|divorced|pregnant|retired|years old|moved|"
    r"(?:am|'m|are|'re) (?:a|an)\b|speak|own|raised)\b",
    re.IGNORECASE,
)
_CAPITALISED = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+")
_CONTENT_WORD = re.compile(r"[a-z0-9]+")


@dataclass(slots=True)
class Statement:
    """One clause a person said, with who said it, where, and its surroundings."""

    speaker: str
    text: str
    turn_ids: list[str]
    at: datetime
    answers_question: bool = False  # the turn before it ended with a question
    next_turn: str = ""  # what the other speaker said next
    turn_chars: int = 0  # length of the whole message it is part of
    standing: bool = False  # a standing instruction to the assistant


@dataclass(slots=True)
class CandidateFact:
    """A fact extracted from a conversation, about its ``subject``."""

    text: str
    subject: str
    turn_ids: list[str] = field(default_factory=list)
    occurred_at: datetime | None = None
    score: float = 0.0
    category: str | None = None


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` as written (no screening): what the every-sentence baseline keeps."""
    return [s.strip() for s in _SENTENCE.split(" ".join(text.split())) if s.strip()]


def candidate_clauses(
    text: str, *, to_assistant: bool = False, others: Iterable[str] = ()
) -> list[tuple[str, bool]]:
    """The clauses of a person's message that may become facts, each with whether it is a standing
    instruction: its prose cut into clauses, openers and the ``others``' names said to them
    stripped, those the screen rejects left out."""
    names = tuple(others)

    def tidy(clause: str) -> str:
        return strip_openers(without_fillers(clause), names)

    def keep(clause: str) -> bool:
        clause = tidy(clause)
        return _words(clause) >= 3 and rejection(clause, to_assistant=to_assistant) is None

    out: list[tuple[str, bool]] = []
    for sentence in prose_sentences(text):
        for clause in clauses(_LOWER_I.sub("I", sentence), keep):
            clause = tidy(clause)
            out.append((clause, to_assistant and standing_instruction(clause)))
    return out


def _words(clause: str) -> int:
    """Words of a clause with contractions counted as written out ("We're vegan" is three)."""
    return len(clause.split()) + len(re.findall(r"\w['’](?:re|m|ve|ll|d|s)\b", clause, re.IGNORECASE))


def lasting(text: str) -> bool:
    """Whether a clause of a person's prose says something lasting about them."""
    return bool(_LASTING.search(text))


def personal_statement(text: str, *, to_assistant: bool = True) -> bool:
    """Whether a person's message holds a statement about themselves that extraction could keep
    (lasting, or scored at least MIN_SCORE): a session holding one is worth its episode however
    short it is."""
    for clause, standing in candidate_clauses(text, to_assistant=to_assistant):
        if standing or not _FIRST_PERSON.search(clause):
            continue
        if len(content_words(clause)) < MIN_CONTENT_WORDS - 1:  # the subject is not in it yet
            continue
        st = Statement("the user", clause, [], datetime.min, turn_chars=len(text))
        if lasting(clause) or salience(st) >= MIN_SCORE:
            return True
    return False


def statements_of(
    messages: list[tuple[str, str, list[str]]],
    at: datetime,
    *,
    people: set[str] | None = None,
    to_assistant: bool = False,
) -> list[Statement]:
    """The candidate clauses of ``messages`` (speaker, text, message ids), each with its
    surroundings; with ``people``, only those said by them (an assistant's words are not about
    its own life). ``to_assistant``: the people talk to an assistant."""
    out: list[Statement] = []
    speakers = {speaker for speaker, _, _ in messages if speaker[:1].isupper()}
    for i, (speaker, text, ids) in enumerate(messages):
        previous = messages[i - 1][1] if i else ""
        following = messages[i + 1][1] if i + 1 < len(messages) else ""
        if people is not None and speaker not in people:
            continue
        for clause, standing in candidate_clauses(
            text, to_assistant=to_assistant, others=speakers - {speaker}
        ):
            out.append(
                Statement(
                    speaker,
                    clause,
                    ids,
                    at,
                    answers_question=previous.rstrip().endswith("?"),
                    next_turn=following,
                    turn_chars=len(text),
                    standing=standing,
                )
            )
    return out


FEATURES: tuple[str, ...] = (
    "first_person",  # says I / my / we / our anywhere
    "first_person_subject",  # ... as the subject of the sentence
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
# Chosen by leave-one-conversation-out logistic regression over the candidate clauses of the LoCoMo
# development conversations (label: the rewritten clause matches an annotated event of its speaker
# in its session); scripts/fit_extractor.py reproduces them and prints the per-fold figures.
# Questions are screened out before scoring, so no feature is spent on them.
WEIGHTS = np.array(
    [2.21, 0.73, -0.28, -0.21, 0.69, 0.33, 0.94, 1.2, -0.79, 0.01, 0.98, 0.23, 0.45, 0.4, 0.49, 1.06]
)
BIAS = -6.22
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


def content_words(text: str) -> set[str]:
    return {w.rstrip("s") for w in _CONTENT_WORD.findall(text.lower()) if w not in STOP_WORDS} - {""}


def is_repeat(words: set[str], kept: list[set[str]]) -> bool:
    """Whether a candidate with content ``words`` says again what a kept one says."""
    return any(len(words & other) >= REPEAT_OVERLAP * max(1, min(len(words), len(other))) for other in kept)


def rewrite(st: Statement) -> str:
    """The statement as a standalone third-person fact about its speaker."""
    if st.standing:
        return standing_instruction_fact(st.text, st.speaker, st.at)
    return third_person(st.text, st.speaker, st.at)


def select(scored: list[tuple[float, Statement]], limit: int = PER_SESSION) -> list[int]:
    """The indexes of the ``limit`` best statements scored at least MIN_SCORE whose fact is at
    most MAX_CHARS long and not a repeat of a better one; standing instructions besides (up to
    STANDING_PER_SESSION, in the order said)."""
    kept: list[int] = []
    words: list[set[str]] = []
    standing = [i for i, (_, st) in enumerate(scored) if st.standing][:STANDING_PER_SESSION]
    ranked = sorted(
        (
            i
            for i, (score, st) in enumerate(scored)
            if (score >= MIN_SCORE or lasting(st.text)) and not st.standing
        ),
        key=lambda i: (-scored[i][0], i),
    )
    for i in [*standing, *ranked]:
        if len(kept) >= limit + len(standing):
            break
        fact = rewrite(scored[i][1])
        these = content_words(fact)
        if len(fact) > MAX_CHARS or len(these) < MIN_CONTENT_WORDS or is_repeat(these, words):
            continue
        kept.append(i)
        words.append(these)
    return kept


def extract_facts(statements: list[Statement], *, limit: int = PER_SESSION) -> list[CandidateFact]:
    """The ``limit`` most telling statements of a session, rewritten about their speakers, in the
    order they were said."""
    scored = [(salience(st), st) for st in statements]
    out: list[CandidateFact] = []
    for i in sorted(select(scored, limit)):
        score, st = scored[i]
        text = rewrite(st)
        out.append(
            CandidateFact(
                text=text,
                subject=st.speaker,
                turn_ids=st.turn_ids,
                occurred_at=st.at,
                score=score,
                category="preference" if st.standing else categorize(st.text),
            )
        )
    return out


_NAME_LIKE = re.compile(r"^[A-Za-z][a-z]+(?:[ '-][A-Za-z][a-z]+)?$")


def user_name(user_id: str | None) -> tuple[str, str]:
    """(name in the text, subject) of an unnamed user: their user id, named in the text when it
    reads as a name ("lena" -> "Lena"), else "the user"."""
    if user_id:
        return (user_id.title() if _NAME_LIKE.match(user_id) else "the user"), user_id
    return "the user", "the user"


# "Remember that ...", said to the agent: what follows is to be kept as said, at once. "Remember
# to call Bob" is a reminder, not a statement, and is left out.
_REMEMBER = re.compile(
    r"^(?:(?:please|pls|and|also|oh|btw|hey|ok|okay)[,!]?\s+)*"
    r"(?:(?:please\s+)?(?:remember|recall)(?:\s+(?:that|this))?|(?:don't|do not|never) forget(?:\s+that)?|"
    r"(?:please\s+)?(?:note|make a note|take note|keep in mind|bear in mind)(?:\s+(?:that|of this))?|"
    r"for the record|fyi)\s*[:,-]?\s+(?!to\b)(.+)$",
    re.IGNORECASE,
)


def remembered(text: str) -> list[str]:
    """The statements a message asks to be remembered ("Please remember that my cat is called
    Quillon." -> ["my cat is called Quillon"]), each screened as any candidate fact is."""
    out: list[str] = []
    for sentence in prose_sentences(text):
        match = _REMEMBER.match(_LOWER_I.sub("I", sentence.strip()))
        if not match:
            continue
        body = match.group(1).strip().rstrip(".!").strip()
        body = body[:1].upper() + body[1:]
        if _words(body) >= 2 and rejection(body, to_assistant=True) is None:
            out.append(body)
    return out


def remembered_facts(text: str, *, user_id: str | None, at: datetime) -> list[CandidateFact]:
    """The facts a user's message asks to be remembered, rewritten about them."""
    name, subject = user_name(user_id)
    facts = []
    for body in remembered(text):
        fact = third_person(body, name, at)
        if len(content_words(fact)) >= MIN_CONTENT_WORDS - 1:  # asked for on purpose: two suffice
            facts.append(CandidateFact(text=fact, subject=subject, occurred_at=at, category=categorize(body)))
    return facts
