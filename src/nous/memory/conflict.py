"""Does a near-identical statement say something different? Lexical checks cosine cannot make.

Sentence embeddings put "I love dogs" and "I don't love dogs" (or "7 days" and "10 days",
"from Postgres to MongoDB" and "from MongoDB to Postgres") closer than most true
paraphrases, so similarity alone would merge them as duplicates and lose the change.

Two checks, both about what differs between the statements:

- **Numbers** (digits, number words, times, months and weekdays) that differ: always a
  different statement, however it is worded.
- **Edits.** A paraphrase rewords freely; an update or a contradiction keeps the sentence and
  changes a slot. When two statements are mostly the same words in the same order (a token
  sequence match of at least ``EDIT_RATIO``), any changed word other than filler ("I think",
  "btw", "really") is a real change: a negation, a frequency word, a tense, a swapped role
  or a swapped detail. The kind is reported for the caller's message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import StrEnum


def _words(text: str) -> list[str]:
    return text.split()


class ConflictKind(StrEnum):
    NUMBER = "changed_number"
    NEGATION = "negation"
    QUANTIFIER = "quantifier"
    TENSE = "change_over_time"
    ORDER = "swapped_roles"
    SUBSTITUTION = "changed_detail"


@dataclass(frozen=True, slots=True)
class Conflict:
    """Why two similar statements are not the same statement."""

    kind: ConflictKind
    detail: str


_TOKEN = re.compile(r"\d+(?:[.:]\d+)*(?:st|nd|rd|th)?|[a-z]+(?:'[a-z]+)?")
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
            "fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
    if i >= 2  # "one" and "zero" are too often not numbers ("one-on-one", "no one")
}
_NUMBER_WORDS |= {"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000"}
_ORDINALS = {
    w: str(i + 1)
    for i, w in enumerate(
        _words(
            "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
            "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
        )
    )
}
_CALENDAR = frozenset(
    _words(
        "january february march april may june july august september october november december "
        "monday tuesday wednesday thursday friday saturday sunday"
    )
)
_NEGATIONS = frozenset(_words("not no never none nothing nobody neither nor without cannot"))
_QUANTIFIERS = frozenset(
    _words(
        "always never rarely seldom sometimes often usually occasionally frequently mostly only "
        "anyone anybody everyone everybody all every any some most few many other"
    )
)
_CHANGE_MARKERS = frozenset(
    _words("used formerly previously anymore longer now currently nowadays since was were")
)
_LASTING_CHANGE = re.compile(
    r"\b(used to|no longer|anymore|any more|formerly|previously|not any|from now on|is now|are now|"
    r"moved (?:from|to|out|up|back)|switched|changed (?:from|to)|postponed|rescheduled|replaced|instead|"
    r"pushed back|brought forward|delayed|cancelled|canceled)\b"
)
_FILLER = frozenset(_words("i i'm think btw really just actually basically so also um ok okay the a an"))
# Words whose swap keeps a statement's meaning: prepositions of time and place that say the same
# relation ("on / during weekends", "in / at the office") and determiners. Directional words
# (from, to, before, after, over, under...) are not here: swapping them changes the statement.
_INTERCHANGEABLE = frozenset(_words("on in at during within throughout the a an this that these those its"))
EDIT_RATIO = 0.6  # token-sequence similarity from which two statements count as an edit
SHORT_TOKENS = 6


def _tokens(text: str) -> list[str]:
    text = text.lower().replace("’", "'")
    text = re.sub(r"(\d),(\d{3})\b", r"\1\2", text)  # 1,000 -> 1000
    return _TOKEN.findall(text)


def _numbers(tokens: list[str]) -> set[str]:
    """Numbers, dates and times, normalised: "07:05" = "7:05", "3 pm" = "15:00" = "15", "12th" = "12".
    In a short statement (SHORT_TOKENS or fewer) an ordinal is a number too: "second fact" is not
    "first fact"."""
    out = set()
    short = len(tokens) <= SHORT_TOKENS
    for i, t in enumerate(tokens):
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if t[0].isdigit():
            t = re.sub(r"(st|nd|rd|th)$", "", t)
            t = re.sub(r":00$", "", t)
            t = re.sub(r"^0+(\d)", r"\1", t)
            if after == "pm" and t.split(":")[0].isdigit() and int(t.split(":")[0]) < 12:
                hour, _, minute = t.partition(":")
                t = str(int(hour) + 12) + (f":{minute}" if minute else "")
            out.add(t)
        elif t in _NUMBER_WORDS:
            out.add(_NUMBER_WORDS[t])
        elif t in _ORDINALS and (after == "of" or short):  # "the first of the month", "second fact"
            out.add(_ORDINALS[t])
        elif t in _CALENDAR or t.removesuffix("s") in _CALENDAR:
            out.add(t.removesuffix("s"))
    return out


def _same_word(x: str, y: str) -> bool:
    """Spelling variants and abbreviations: colour / color, cancelled / canceled, min / minute."""
    if min(len(x), len(y)) >= 3 and (x.startswith(y) or y.startswith(x)):
        return True
    return len(x) >= 4 and x[:2] == y[:2] and SequenceMatcher(a=x, b=y).ratio() >= 0.8


def _unify_spelling(ta: list[str], tb: list[str]) -> list[str]:
    """``tb`` with each word that is a spelling variant of a word of ``ta`` replaced by it."""
    vocab = set(ta)
    return [t if t in vocab else next((v for v in vocab if _same_word(v, t)), t) for t in tb]


def _normal_number(token: str) -> str:
    return re.sub(r"^0+(\d)", r"\1", token) if token[0].isdigit() else token


def _negations(tokens: list[str]) -> int:
    return sum(t in _NEGATIONS or t.endswith("n't") for t in tokens)


def _kind_of_edit(ta: list[str], tb: list[str], changed_a: set[str], changed_b: set[str]) -> Conflict:
    changed = changed_a | changed_b
    if _negations(ta) % 2 != _negations(tb) % 2:
        return Conflict(ConflictKind.NEGATION, "negated on one side only")
    if changed & _QUANTIFIERS:
        return Conflict(ConflictKind.QUANTIFIER, ", ".join(sorted(changed & _QUANTIFIERS)))
    if changed & _CHANGE_MARKERS:
        return Conflict(ConflictKind.TENSE, ", ".join(sorted(changed & _CHANGE_MARKERS)))
    if sorted(ta) == sorted(tb):
        return Conflict(ConflictKind.ORDER, "same words in another order")
    return Conflict(
        ConflictKind.SUBSTITUTION, f"{' '.join(sorted(changed_a))} / {' '.join(sorted(changed_b))}"
    )


def has_change_marker(text: str) -> bool:
    """Whether ``text`` states a lasting change ("no longer", "moved to", "was pushed back")."""
    return _LASTING_CHANGE.search(" ".join(_tokens(text))) is not None


def find_conflict(a: str, b: str) -> Conflict | None:
    """The reason ``a`` and ``b`` differ in meaning despite looking alike, or None."""
    ta, tb = _tokens(a), _tokens(b)
    na, nb = _numbers(ta), _numbers(tb)
    # An explicit change ("was pushed back to Monday", "no longer") on one side says more than the
    # changed number or detail it brings: the newer statement replaces the older one.
    markers = _LASTING_CHANGE.findall(" ".join(ta)), _LASTING_CHANGE.findall(" ".join(tb))
    if bool(markers[0]) != bool(markers[1]):
        return Conflict(ConflictKind.TENSE, ", ".join(markers[0] or markers[1]))
    if na != nb:
        return Conflict(ConflictKind.NUMBER, f"{' '.join(sorted(na - nb))} / {' '.join(sorted(nb - na))}")
    tb = _unify_spelling(ta, tb)
    ca = [_normal_number(t) for t in ta if t not in _FILLER]
    cb = [_normal_number(t) for t in tb if t not in _FILLER]
    if ca == cb:
        return None
    if sorted(ca) == sorted(cb):
        return Conflict(ConflictKind.ORDER, "same words in another order")
    matcher = SequenceMatcher(a=ca, b=cb, autojunk=False)
    if matcher.ratio() < EDIT_RATIO:
        return None  # reworded: a paraphrase or another statement, for the similarity to judge
    if na != nb:
        return Conflict(ConflictKind.NUMBER, f"{' '.join(sorted(na ^ nb))} on one side only")
    changed_a, changed_b = set(), set()
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal":
            changed_a.update(ca[i1:i2])
            changed_b.update(cb[j1:j2])
    if (changed_a | changed_b) <= _INTERCHANGEABLE:
        return None  # "on weekends" / "during weekends": the same statement
    inserted_only = not changed_a or not changed_b
    polar = _NEGATIONS | _QUANTIFIERS | _CHANGE_MARKERS
    if inserted_only and not any(t in polar or t.endswith("n't") for t in changed_a | changed_b):
        return None  # words only added on one side: more detail, not a different statement
    return _kind_of_edit(ta, tb, changed_a, changed_b)
