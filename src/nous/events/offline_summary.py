"""The deterministic episode summary, for when no language model is configured.

- **summary**: a header (who, when) and the most central sentences of the conversation (closest
  to its centroid with the shipped embedding model, near-duplicates skipped), in the order they
  were said and rewritten about their speakers, within SUMMARY_WORDS words;
- **title**: its participants and its most frequent key phrases;
- **key points**: sentences in decision or lesson language, as lessons;
- **outcome**: by rules over problem language and how the conversation ends;
- **candidate facts**: the offline extractor's (``extraction.py``).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from datetime import datetime

import numpy as np

from nous.embeddings import Embedder
from nous.events.extraction import (
    CandidateFact,
    Statement,
    extract_facts,
    sentences,
    statements_of,
    third_person,
)
from nous.events.lexicon import STOP_WORDS
from nous.events.summary import EpisodeSummary, Outcome

SUMMARY_WORDS = 130
KEY_POINTS = 5
DUPLICATE_COSINE = 0.8
_LESSON = re.compile(
    r"\b(decided|decide to|we chose|chose to|learned|learnt|lesson|next time|always|never|"
    r"the key is|the trick is|turns out|realized|realised|should have|make sure|remember to)\b",
    re.IGNORECASE,
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
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


async def offline_summary(
    embedder: Embedder,
    messages: list[tuple[str, str, list[str]]],
    *,
    people: set[str],
    participants: list[str],
    at: datetime,
) -> tuple[EpisodeSummary, list[CandidateFact]]:
    """The structured summary of a conversation, and the facts its people disclosed.

    ``messages`` are (speaker, text, message ids) in order; ``people`` are the speakers whose
    first-person statements are about their own lives (not an assistant's)."""
    all_sentences = [(speaker, s) for speaker, text, _ in messages for s in sentences(clean_message(text))]
    facts = extract_facts(statement_list(messages, people, at))
    summary_text = await _central_summary(embedder, all_sentences, participants, at)
    phrases = key_phrases([text for _, text, _ in messages], names=set(participants))
    who = " and ".join(participants[:3]) if participants else "Conversation"
    title = f"{who}: {', '.join(phrases[:3])}" if phrases else f"{who} on {at:%d %B %Y}"
    lessons = [
        third_person(s, speaker, at) if speaker in people else s
        for speaker, s in all_sentences
        if _LESSON.search(s) and not s.rstrip().endswith("?") and 6 <= len(s.split()) <= 50
    ]
    outcome, rationale = classify_outcome([text for _, text, _ in messages])
    return (
        EpisodeSummary(
            title=title[:120],
            summary=summary_text,
            key_points=list(dict.fromkeys(lessons))[:KEY_POINTS],
            outcome=outcome,
            outcome_rationale=rationale,
            topics=phrases[:5],
            candidate_facts=[f.text for f in facts],
        ),
        facts,
    )


def statement_list(
    messages: list[tuple[str, str, list[str]]], people: set[str], at: datetime
) -> list[Statement]:
    return statements_of([(s, clean_message(t), ids) for s, t, ids in messages], at, people=people)


def clean_message(text: str) -> str:
    """A message without bracketed annotations ("[shares a photo of ...]": not the speaker's words)."""
    return re.sub(r"\s*\[[^\]]*\]", "", text).strip()


async def _central_summary(
    embedder: Embedder, all_sentences: list[tuple[str, str]], participants: list[str], at: datetime
) -> str:
    header = (
        f"{' and '.join(participants)} talked on {at.day} {at:%B %Y}."
        if participants
        else f"A conversation on {at.day} {at:%B %Y}."
    )
    candidates = [
        (i, sp, s) for i, (sp, s) in enumerate(all_sentences) if len(s.split()) >= 5 and not s.endswith("?")
    ]
    if not candidates:
        body = " ".join(s for _, s in all_sentences)[:600]
        return f"{header} {body}".strip() if body else f"{header} Little was said."
    matrix = np.asarray(await embedder.embed_many([s for _, _, s in candidates]))
    centroid = matrix.mean(axis=0)
    centrality = matrix @ (centroid / (np.linalg.norm(centroid) or 1.0))
    chosen: list[int] = []
    words = len(header.split())
    for k in np.argsort(-centrality):
        if chosen and float(np.max(matrix[chosen] @ matrix[k])) > DUPLICATE_COSINE:
            continue
        n = len(candidates[k][2].split())
        if words + n > SUMMARY_WORDS and chosen:
            continue
        chosen.append(int(k))
        words += n
        if words >= SUMMARY_WORDS * 0.8:
            break
    names = set(participants)
    parts = []
    for k in sorted(chosen, key=lambda k: candidates[k][0]):
        _, speaker, sentence = candidates[k]
        parts.append(third_person(sentence, speaker, at) if speaker in names else f"{speaker}: {sentence}")
    return f"{header} {' '.join(parts)}"


def key_phrases(
    texts: list[str], *, names: frozenset[str] | set[str] = frozenset(), limit: int = 5
) -> list[str]:
    """The most frequent content words and two-word phrases, most frequent first."""
    lowered_names = {n.lower() for n in names}
    counts: Counter[str] = Counter()
    for text in texts:
        words = [w.lower().strip("'-") for w in _WORD.findall(clean_message(text))]
        content = [w if w not in STOP_WORDS and w not in lowered_names and len(w) > 3 else "" for w in words]
        counts.update(w for w in content if w)
        counts.update(f"{a} {b}" for a, b in itertools.pairwise(content) if a and b)
    ranked = sorted(counts.items(), key=lambda kv: (-(kv[1] * (1.6 if " " in kv[0] else 1.0)), kv[0]))
    out: list[str] = []
    for phrase, n in ranked:
        if n < 2 and out:
            break
        if any(phrase in kept or kept in phrase for kept in out):
            continue
        out.append(phrase)
        if len(out) == limit:
            break
    return out


def classify_outcome(texts: list[str]) -> tuple[Outcome, str]:
    """resolved / partial / unresolved / informational, by problem language and how it ends."""
    if not any(_PROBLEM.search(t) for t in texts):
        return "informational", "No problem or request to solve was raised; information was exchanged."
    ending = " ".join(texts[-3:])
    if _STILL_BROKEN.search(ending):
        return "unresolved", "The conversation ends with the problem still reported."
    if _SOLVED.search(ending):
        return "resolved", "The conversation ends with the problem reported solved or the answer accepted."
    return "partial", "A problem was discussed, but the conversation ends without confirming a solution."
