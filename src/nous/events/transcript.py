"""A conversation's transcript for a summariser, cut to a character budget by what matters.

Turns are scored: decision and lesson language +2, the user's turns +1, long tool output or code
-1. The first and last turns are always kept; the middle is filled best-first within the budget;
the kept turns are put back in their original order, with a marker where turns were left out.
"""

from __future__ import annotations

import re

MAX_CHARS = 8000
TURN_SEPARATOR = "\n\n"
OMITTED = "[…]"
_DECISION = re.compile(
    r"\b(decided|decide|chose|chosen|choose|because|learned|learnt|lesson|conclusion|concluded|"
    r"agreed|settled on|going with|will use|next time)\b",
    re.IGNORECASE,
)
_USER = re.compile(r"^(user|human)\s*:", re.IGNORECASE)


def turn_score(turn: str) -> float:
    score = 0.0
    if _DECISION.search(turn):
        score += 2.0
    if _USER.match(turn):
        score += 1.0
    if len(turn) > 500 and ("```" in turn or turn.count("\n") > 10):
        score -= 1.0
    return score


def truncate_transcript(transcript: str, max_chars: int = MAX_CHARS) -> str:
    """``transcript`` (turns separated by blank lines) within ``max_chars``; unchanged if it fits."""
    if len(transcript) <= max_chars:
        return transcript
    turns = transcript.split(TURN_SEPARATOR)
    if len(turns) <= 2 or len(turns[0]) + len(turns[-1]) > max_chars // 2:
        half = max(0, (max_chars - len(OMITTED) - 2) // 2)
        return transcript[:half] + f"\n{OMITTED}\n" + transcript[-half:]
    first, last = turns[0], turns[-1]
    marker = len(OMITTED) + len(TURN_SEPARATOR)
    # One gap marker is always possible, and each kept turn can open at most one more.
    budget = max_chars - len(first) - len(last) - len(TURN_SEPARATOR) - marker
    middle = sorted(range(1, len(turns) - 1), key=lambda i: (-turn_score(turns[i]), i))
    kept: set[int] = set()
    for i in middle:
        cost = len(turns[i]) + len(TURN_SEPARATOR) + marker
        if cost <= budget:
            kept.add(i)
            budget -= cost
    out: list[str] = [first]
    gap = False
    for i in range(1, len(turns) - 1):
        if i in kept:
            out.append(turns[i])
            gap = False
        elif not gap:
            out.append(OMITTED)
            gap = True
    out.append(last)
    return TURN_SEPARATOR.join(out)
