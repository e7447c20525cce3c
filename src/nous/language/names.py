"""Proper names in a text: the people, places and things it names ("Priya", "Ippudo")."""

from __future__ import annotations

import re

from nous.language.lexicon import CALENDAR, GENERIC, STOP_WORDS

_CAPITALISED = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)*\b")


def proper_names(text: str, *, besides: str = "", limit: int = 3) -> list[str]:
    """Up to ``limit`` capitalised words of ``text`` that the lexicon does not know as common
    words (so names, not a sentence's first "The" or "Forum"), none of them in ``besides``, in
    order of first use."""
    from lemminflect import getAllLemmas

    known = {w.lower() for w in re.findall(r"[A-Za-z]+", besides)}
    out: list[str] = []
    for word in _CAPITALISED.findall(text):
        low = word.lower()
        if (
            low in known
            or low in STOP_WORDS
            or low in GENERIC
            or low in CALENDAR
            or len(low) < 3
            or getAllLemmas(low)  # a common word: "Forum", "After", "Dinner"
            or word in out
        ):
            continue
        out.append(word)
        if len(out) == limit:
            break
    return out
