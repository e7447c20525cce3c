"""The deterministic episode summary, for when no language model is configured.

- **title**: the conversation's topic, the key phrases of what its people wrote ("Budget
  tracker: password hashing and user authentication"; ``topics.py``);
- **summary**: two to four sentences, no transcript lines. With an assistant: what the person
  is doing (their statement closest to what the conversation is about, in the third person),
  what they asked about, what the assistant covered, and what they decided or what was left
  open. Between people: what they talked about, then what each of them told (their extracted
  facts);
- **key points**: lessons and decisions a person stated, in the third person;
- **outcome**: by rules over problem language and how the conversation ends;
- **candidate facts**: the offline extractor's (``extraction.py``).
"""

from __future__ import annotations

import re
from datetime import datetime

import numpy as np

from nous.embeddings import Embedder
from nous.events.extraction import CandidateFact, Statement, extract_facts, rewrite, salience, statements_of
from nous.events.rewrite import third_person
from nous.events.screen import rejection, strip_openers
from nous.events.summary import EpisodeSummary, Outcome
from nous.language.prose import prose_sentences
from nous.language.topics import clean_message, conversation_phrases, key_phrases, title_of

SUMMARY_WORDS = 130
KEY_POINTS = 5
_LESSON = re.compile(
    r"\b(decided|decide to|we chose|chose to|learned that|learnt that|lesson|next time|"
    r"the key is|the trick is|turns out|realized|realised|should have|going with|settled on)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(decided|chose|going with|settled on|will use|I'll (?:go with|use|try|switch|stick)|switching to)\b",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|my|we|we're|our)\b", re.IGNORECASE)
_ASKING = re.compile(
    r"\?|\b(?:can|could|would) you\b|\bhelp me\b|\bhow (?:do|can|should) I\b|\bI need help\b", re.IGNORECASE
)
_PROBLEM = re.compile(
    r"\b(error|exception|bug|issue|problem|fails?|failing|broken|crash\w*|can't|cannot|doesn't work|"
    r"not working|how do i|how can i|help me|stuck|fix)\b",
    re.IGNORECASE,
)
_SOLVED = re.compile(
    r"\b(thanks?|thank you|works now|it works|that worked|fixed|solved|resolved|perfect|got it|"
    r"that did it|makes sense)\b",
    re.IGNORECASE,
)
_STILL_BROKEN = re.compile(
    r"\b(still (failing|broken|getting|not)|doesn't work|didn't work|not working|same error|no luck)\b",
    re.IGNORECASE,
)

Message = tuple[str, str, list[str]]


async def offline_summary(
    embedder: Embedder,
    messages: list[Message],
    *,
    people: set[str],
    participants: list[str],
    at: datetime,
    to_assistant: bool = False,
) -> tuple[EpisodeSummary, list[CandidateFact]]:
    """The structured summary of a conversation, and the facts its people disclosed.

    ``messages`` are (speaker, text, message ids) in order; ``people`` are the speakers whose
    first-person statements are about their own lives (not an assistant's); ``to_assistant``:
    they talk to an assistant."""
    cleaned = [(speaker, clean_message(text), ids) for speaker, text, ids in messages]
    statements = statements_of(cleaned, at, people=people, to_assistant=to_assistant)
    facts = extract_facts(statements)
    prose = [(speaker, prose_sentences(text)) for speaker, text, _ in cleaned]
    names = [*participants, *people]
    phrases = conversation_phrases(prose, people=people, names=names)
    if to_assistant:
        sentences = await _assistant_chat(embedder, prose, statements, facts, people, names, phrases)
    else:
        sentences = _people_chat(prose, facts, people, phrases)
    lessons = [
        third_person(s, speaker, at)
        for speaker, ss in prose
        if speaker in people
        for s in ss
        if _LESSON.search(s) and 6 <= len(s.split()) <= 50 and rejection(strip_openers(s)) is None
    ]
    outcome, rationale = classify_outcome(
        [" ".join(ss) for _, ss in prose], raised=[" ".join(ss) for sp, ss in prose if sp in people]
    )
    return (
        EpisodeSummary(
            title=title_of(phrases, at),
            summary=_bounded(sentences) or f"A conversation on {at.day} {at:%B %Y}.",
            key_points=list(dict.fromkeys(lessons))[:KEY_POINTS],
            outcome=outcome,
            outcome_rationale=rationale,
            topics=phrases[:5],
            candidate_facts=[f.text for f in facts],
        ),
        facts,
    )


def listing(items: list[str]) -> str:
    """Items as a phrase: "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _fresh(phrases: list[str], said: list[str], limit: int = 3) -> list[str]:
    """Up to ``limit`` of ``phrases`` not already in the sentences ``said``."""
    text = " ".join(said).lower()
    return [p for p in phrases if p.lower() not in text][:limit]


async def _assistant_chat(
    embedder: Embedder,
    prose: list[tuple[str, list[str]]],
    statements: list[Statement],
    facts: list[CandidateFact],
    people: set[str],
    names: list[str],
    phrases: list[str],
) -> list[str]:
    """What the person is doing, what they asked, what the assistant covered, what was decided or
    left open."""
    person = next((sp for sp, _ in prose if sp in people), "the user")
    out: list[str] = []
    goal = await _central(embedder, statements, prose)
    if goal is not None:
        out.append(rewrite(goal))
    asked = [s for sp, ss in prose if sp in people for s in ss if _ASKING.search(s)]
    asked_about = _fresh(key_phrases([(s, 1.0) for s in asked], names=names, limit=6, once=False), out)
    subject = person[:1].upper() + person[1:]
    if asked_about:
        out.append(f"{'They' if out else subject} asked about {listing(asked_about)}.")
    covered = _fresh(
        key_phrases([(s, 1.0) for sp, ss in prose if sp not in people for s in ss], names=names, once=False),
        out,
    )
    if covered:
        out.append(f"The assistant went through {listing(covered)}.")
    decided = [st for st in statements if _DECISION.search(st.text) and st is not goal]
    last = _last_request(prose, people)
    topic = key_phrases([(last, 1.0)], names=names, limit=1) if last else []
    told = [
        f.text for f in sorted(facts, key=lambda f: -f.score) if goal is None or f.turn_ids != goal.turn_ids
    ]
    if decided:
        out.append(rewrite(decided[-1]))
    elif topic:
        out.append(f"The last request, about {topic[0]}, was still open at the end.")
    elif told and len(out) < 3:
        out.append(told[0])
    if not out and phrases:
        out.append(f"{subject} and the assistant talked about {listing(phrases[:3])}.")
    return out


def _last_request(prose: list[tuple[str, list[str]]], people: set[str]) -> str | None:
    """The person's last message, when it asks for something and nothing answered it."""
    if not prose or prose[-1][0] not in people:
        return None
    text = " ".join(prose[-1][1])
    return text if _ASKING.search(text) else None


async def _central(
    embedder: Embedder, statements: list[Statement], prose: list[tuple[str, list[str]]]
) -> Statement | None:
    """Among the person's better statements about themselves, the one closest to what the whole
    conversation is about (cosine to the centroid of its prose)."""
    own = [st for st in statements if _FIRST_PERSON.search(st.text)] or statements
    ranked = sorted(own, key=lambda st: -salience(st))[:8]
    ranked = [st for st in ranked if len(rewrite(st)) <= 220]
    if not ranked:
        return None
    text = [s for _, ss in prose for s in ss][:200]
    vectors = np.asarray(await embedder.embed_many([*(rewrite(st) for st in ranked), *text]))
    centroid = vectors[len(ranked) :].mean(axis=0)
    scores = vectors[: len(ranked)] @ (centroid / (np.linalg.norm(centroid) or 1.0))
    return ranked[int(np.argmax(scores))]


def _people_chat(
    prose: list[tuple[str, list[str]]], facts: list[CandidateFact], people: set[str], phrases: list[str]
) -> list[str]:
    """What they talked about, then each person's best facts (two at most each)."""
    order = list(dict.fromkeys(sp for sp, _ in prose if sp in people))
    out: list[str] = []
    if phrases:
        who = listing(order[:3]) if order else "They"
        out.append(f"{who} talked about {listing(phrases[:3])}.")
    for speaker in order[:3]:
        best = sorted((f for f in facts if f.subject == speaker), key=lambda f: -f.score)[:2]
        out += [f.text for f in sorted(best, key=lambda f: facts.index(f))]
    return out


def _bounded(sentences: list[str]) -> str:
    """The sentences, up to four, within SUMMARY_WORDS words (the first always)."""
    kept: list[str] = []
    words = 0
    for s in sentences:
        n = len(s.split())
        if kept and (words + n > SUMMARY_WORDS or len(kept) == 4):
            continue
        kept.append(s)
        words += n
    return " ".join(kept)


def classify_outcome(texts: list[str], raised: list[str] | None = None) -> tuple[Outcome, str]:
    """resolved / partial / unresolved / informational, by problem language and how it ends.
    ``raised``: the people's messages, where a problem is raised (an assistant's "How can I
    help?" raises none); all of ``texts`` by default."""
    if not any(_PROBLEM.search(t) for t in (texts if raised is None else raised)):
        return "informational", "No problem or request to solve was raised; information was exchanged."
    ending = " ".join(texts[-3:])
    if _STILL_BROKEN.search(ending):
        return "unresolved", "The conversation ends with the problem still reported."
    if _SOLVED.search(ending):
        return "resolved", "The conversation ends with the problem reported solved or the answer accepted."
    return "partial", "A problem was discussed, but the conversation ends without confirming a solution."
