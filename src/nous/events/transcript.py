"""A conversation's transcript for a summariser, cut to a character budget by what matters.

Kept whatever the turns' lengths: the first turn, the last turn, and the lines in decision or
lesson language ("we decided", "lesson", "next time"); a turn too long for what is left is
clipped ("…"), and of a long turn in the middle only its decision lines are kept. The rest of the
budget goes to the middle turns best-first: decision language +2, the user's turns +1, long
tool output or code -1. Kept turns are put back in their original order, with a marker where
turns were left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_CHARS = 8000
TURN_SEPARATOR = "\n\n"
OMITTED = "[…]"
CLIPPED = "…"
LINE_CHARS = 400  # a decision line is clipped to this
DECISION_SHARE = 0.5  # decision lines take at most this share of the budget
_DECISION = re.compile(
    r"\b(decided|decide|chose|chosen|choose|because|learned|learnt|lesson|conclusion|concluded|"
    r"agreed|settled on|going with|will use|next time)\b",
    re.IGNORECASE,
)
_USER = re.compile(r"^(user|human)\s*:", re.IGNORECASE)
_SPEAKER = re.compile(r"^([^\n:]{1,40}):\s")


def turn_score(turn: str) -> float:
    score = 0.0
    if _DECISION.search(turn):
        score += 2.0
    if _USER.match(turn):
        score += 1.0
    if len(turn) > 500 and ("```" in turn or turn.count("\n") > 10):
        score -= 1.0
    return score


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in "…" when it was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(CLIPPED))].rstrip() + CLIPPED if limit > len(CLIPPED) else ""


def decision_lines(turn: str) -> str:
    """The lines of ``turn`` in decision or lesson language (each clipped), after its speaker."""
    speaker = _SPEAKER.match(turn)
    prefix = f"{speaker.group(1)}: " if speaker else ""
    lines = [clip(line.strip(), LINE_CHARS) for line in turn.splitlines() if _DECISION.search(line)]
    body = "\n".join(line.removeprefix(prefix) for line in lines)
    return f"{prefix}{body}" if body else ""


@dataclass(slots=True)
class _Piece:
    index: int
    text: str


def truncate_transcript(transcript: str, max_chars: int = MAX_CHARS) -> str:
    """``transcript`` (turns separated by blank lines) within ``max_chars``; unchanged if it fits."""
    if len(transcript) <= max_chars:
        return transcript
    turns = transcript.split(TURN_SEPARATOR)
    if len(turns) == 1:
        return clip(transcript, max_chars)
    sep, marker = len(TURN_SEPARATOR), len(OMITTED) + len(TURN_SEPARATOR)
    # Every piece but the first costs its length, a separator and at most one gap marker.
    budget = max_chars - (len(turns) > 2) * marker
    middle = range(1, len(turns) - 1)
    decisions: list[_Piece] = []
    spent = 0
    for i in middle:
        if not _DECISION.search(turns[i]):
            continue
        text = turns[i] if len(turns[i]) <= LINE_CHARS else decision_lines(turns[i])
        cost = len(text) + sep + marker * (1 if text == turns[i] else 2)  # a part opens its own gap
        if text and spent + cost <= budget * DECISION_SHARE:
            decisions.append(_Piece(i, text))
            spent += cost
    room = budget - spent - sep
    first_cap = max(room // 2, room - len(turns[-1]))
    first = clip(turns[0], first_cap)
    last = clip(turns[-1], room - len(first))
    budget = room - len(first) - len(last)
    kept = {p.index: p.text for p in decisions}
    for i in sorted((i for i in middle if i not in kept), key=lambda i: (-turn_score(turns[i]), i)):
        cost = len(turns[i]) + sep + marker
        if cost <= budget:
            kept[i] = turns[i]
            budget -= cost
    out: list[str] = [first]
    gap = False
    for i in middle:
        if i in kept:
            if kept[i] != turns[i] and not gap:
                out.append(OMITTED)  # only part of this turn is shown
            out.append(kept[i])
            gap = False
        elif not gap:
            out.append(OMITTED)
            gap = True
    out.append(last)
    return TURN_SEPARATOR.join(out)
