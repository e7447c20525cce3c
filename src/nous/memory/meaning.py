"""What a short statement says, beyond its words: the reading the conflict check compares.

Two statements can say the same thing in other words ("keep sodium under 2,000 mg per day" /
"less than 2 g of sodium a day"; "I prefer dark mode" / "The user prefers dark mode") or say
something else in almost the same words ("for two adults" / "for two adults and one child";
"may access" / "may not access"). A ``Reading`` holds what decides between the two:

- **quantities**, normalised: numbers written as words (``number-parser``), units converted to
  base units (``pint``: 2 g = 2,000 mg, 2 L = two litres, 90 minutes = 1.5 hours), times of day
  on a 24-hour clock (2pm = 14:00 = 2 in the afternoon), both sides of a size ("30 x 60 cm" =
  "300×600 mm"), "65k", "half a litre", "twice", currencies, months and weekdays;
- **polarity**: the parity of negations ("not", "no", "never", "without", "-free", "turned off",
  "prohibited");
- **modality** (permission "may / can / allowed", obligation "must / need to / required",
  advice "should") and **quantifiers** (every / some / only);
- **change markers** ("no longer", "stopped", "migrated to", "switched to", "now", "these days");
- **tokens**: the words, lower-cased, contractions expanded, "the user" read as "I", each word
  lemmatised (``lemminflect``: "prefers" = "prefer", "children" = "child", "is" = "be"), with the
  quantities taken out (they are compared above).

``attribute`` names what a statement sets when it has no person as its subject ("the on-call
rotation" + "change" in "The on-call rotation changes every Monday at 9am"): two statements that
set the same attribute to different values are an update, with or without a ``subject``.

Everything here is offline: the unit definitions and lemma tables ship inside the packages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache, lru_cache
from typing import Any


def _words(text: str) -> list[str]:
    return text.split()


# --- words ------------------------------------------------------------------------------------

_MONTHS = _words("january february march april may june july august september october november december")
_WEEKDAYS = _words("monday tuesday wednesday thursday friday saturday sunday")
_MONTH_ABBREVIATIONS = {m[:3]: m for m in _MONTHS} | {"sept": "september"}
NEGATORS = frozenset(_words("not no never none nothing nobody neither nor without"))
# Words that state the absence or the opposite of a state ("smoking is prohibited", "turned off"):
# they count as one negation, so "not allowed" = "prohibited" and "allowed" ≠ "prohibited".
_NEGATIVE_STATES = frozenset(_words("prohibited forbidden banned disallowed disabled off closed shut"))
_MODALS = {
    "permission": frozenset(_words("can could may allowed allow permitted permit able")),
    "obligation": frozenset(_words("must need needs required require requires mandatory have_to")),
    "advice": frozenset(_words("should ought recommended")),
}
_QUANTIFIERS = {
    "all": frozenset(_words("all every each always everyone everybody everything")),
    # a habit stated with or without "usually" is the same habit; "always" / "usually" differ
    "most": frozenset(_words("usually often mostly most generally typically many")),
    "some": frozenset(_words("some sometimes occasionally rarely seldom few several other")),
    "only": frozenset(["only"]),
}
# A stated change: the newer statement replaces the older one. Two statements that both state a
# change say the same only if it is the same kind of change ("quit" = "stopped", not "started").
CHANGE_MARKERS = re.compile(
    r"\b(used to|no longer|not any ?more|anymore|any more|formerly|previously|from now on|now|nowadays|"
    r"these days|moved (?:from|to|out|up|back|over)|relocated|switched|changed (?:from|to)|"
    r"postponed|rescheduled|replaced|pushed (?:back|to)|brought forward|delayed|cancell?ed|stopped|"
    r"quit|dropped|gave up|given up|turned (?:off|on)|migrated|upgraded|downgraded|rewritten|renamed|"
    r"extended to|joined|started (?=\w+ing|to)|since the switch)\b"
)
_MARKER_KINDS = (
    ("past", re.compile(r"used to|formerly|previously")),
    ("begin", re.compile(r"started|joined|turned on|switched on")),
    (
        "end",
        re.compile(
            r"no longer|any ?more|stopped|quit|dropped|gave up|given up|turned off|switched off|cancell?ed"
        ),
    ),
)


def marker_kinds(markers: tuple[str, ...]) -> frozenset[str]:
    """The kinds of change stated: past, begin, end, or another change (moved, switched, now)."""
    return frozenset(next((k for k, p in _MARKER_KINDS if p.fullmatch(m)), "change") for m in markers)


_ADVERBS = frozenset(_words("now currently still also always usually just really only no longer"))
_DETERMINERS = frozenset(_words("the a an our my your their his her its this that these those"))
_PRONOUNS = frozenset(_words("i we you he she they it me us them someone everyone user"))

_CONTRACTIONS = (
    (r"\bcan't\b|\bcannot\b", "can not"),
    (r"\bwon't\b", "will not"),
    (r"\bshan't\b", "shall not"),
    (r"n't\b", " not"),
    (r"\b(i'm|im)\b", "i am"),
    (r"'re\b", " are"),
    (r"'ve\b", " have"),
    (r"'ll\b", " will"),
    (r"\b(it|that|there|what|he|she)'s\b", r"\1 is"),
    (r"'s\b|s'(?=\s)", ""),  # possessive: "the user's daughter" -> "the user daughter"
)
_PERSON = (
    (r"\bthe user\b|^user\b", "i"),
    (r"\b(their|them|themselves)\b", "my"),  # applied only when the statement speaks of "the user"
)

# --- quantities -------------------------------------------------------------------------------

_NUM = r"\d+(?:\.\d+)?"
_CLOCK_AMPM = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)(?![a-z])")
_CLOCK_SAID = re.compile(
    r"\b(\d{1,2})(?::(\d{2}))?\s+(?:o'clock\s+)?in the (morning|afternoon|evening)\b|\b(noon|midday|midnight)\b"
)
_CLOCK_24 = re.compile(r"\b(\d{1,2}):(\d{2})\b")
_SIZE = re.compile(rf"\b({_NUM})\s*(?:x|by)\s*({_NUM})\s*([a-z]+)\b")
_THOUSANDS = re.compile(rf"\b({_NUM})k\b")
# How often: "2 times a day" = "2x/day" = "twice daily" = "every 12 hours", as times a day.
_SPANS = r"(second|sec|minute|min|hour|hr|day|night|week|month|year)s?\b"
_TIMES_PER = re.compile(rf"\b({_NUM})\s*(?:x|times)\s*(?:a|an|/|every|each|in a)\s*{_SPANS}")
_EVERY_SPAN = re.compile(rf"\bevery\s+({_NUM})\s*{_SPANS}")
_HALF = re.compile(r"\bhalf an?\s+([a-z]+)")
_AND_A_HALF = re.compile(r"\ban? ([a-z]+) and a half\b")
_ORDINALS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
    "fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth"
)
_PER = {
    "daily": "day",
    "nightly": "night",
    "hourly": "hour",
    "weekly": "week",
    "monthly": "month",
    "yearly": "year",
}
_TIMES = {"once": "1 times", "twice": "2 times", "thrice": "3 times"}
_CURRENCY = {
    "$": "usd",
    "dollar": "usd",
    "dollars": "usd",
    "usd": "usd",
    "€": "eur",
    "euro": "eur",
    "euros": "eur",
    "eur": "eur",
    "£": "gbp",
    "gbp": "gbp",
}
_QUANTITY = re.compile(
    rf"(?P<cur>[$€£])?\s*(?P<num>{_NUM})(?P<gap>\s*-?\s*)(?P<unit>%|°\s*[cf]\b|"
    rf"degrees? (?:celsius|fahrenheit|c|f)\b|per cent\b|[a-z]+(?: per [a-z]+)?)?"
)
# Unit words pint knows that are ordinary words here ("a day", "in", "am", "bags") or too short to
# trust; a number before one of them is a plain number.
_NOT_UNITS = frozenset(
    _words(
        "a am pm in at as t k h x s b c d e f n p q r u v w y z bag bags unit units times time pound pounds"
    )
)
# pint knows thousands of units (an "as" is an attosecond); only these, with these prefixes, are
# read as units here.
_COMMON_UNITS = frozenset(
    _words(
        "gram meter liter second minute hour day week year degree_Celsius degree_Fahrenheit mile foot "
        "inch yard ounce pound byte bit cup gallon tablespoon teaspoon kelvin"
    )
)
_PREFIXES = ("", "kilo", "milli", "centi", "mega", "giga", "tera", "micro", "deci")
# Units read as spans of time, counted in days (the calendar sense, not pint's astronomical year).
_DURATIONS = {
    "second": 1 / 86400,
    "seconds": 1 / 86400,
    "sec": 1 / 86400,
    "secs": 1 / 86400,
    "minute": 1 / 1440,
    "minutes": 1 / 1440,
    "min": 1 / 1440,
    "mins": 1 / 1440,
    "hour": 1 / 24,
    "hours": 1 / 24,
    "hr": 1 / 24,
    "hrs": 1 / 24,
    "day": 1,
    "days": 1,
    "week": 7,
    "weeks": 7,
    "month": 30,
    "months": 30,
    "year": 365,
    "years": 365,
}
_PHYSICAL = ("[mass]", "[length]", "[length] ** 3", "[temperature]", "[time]")


@dataclass(frozen=True, slots=True)
class Quantity:
    """A value and what it measures (``None``: a plain number, which matches a value of any unit)."""

    value: float
    dimension: str | None = None
    said: float | None = None  # the number as written, before conversion ("7" of "7 years")

    def matches(self, other: Quantity) -> bool:
        if self.dimension and other.dimension and self.dimension != other.dimension:
            return False
        if _close(self.value, other.value):
            return True
        # a plain number matches the number said with a unit: "Zoe is seven" / "7 years old"
        plain = self if self.dimension is None else other if other.dimension is None else None
        said = (other if plain is self else self).said
        return plain is not None and said is not None and _close(plain.value, said)


def _close(x: float, y: float) -> bool:
    return abs(x - y) <= 1e-6 * max(1.0, abs(x), abs(y))


@dataclass(frozen=True, slots=True)
class Reading:
    """What one statement says, in comparable parts."""

    tokens: tuple[str, ...]
    quantities: tuple[Quantity, ...]
    negations: int
    negated: frozenset[str]  # what the negations deny: "not allergic" -> "allergic"
    modality: frozenset[str]
    quantifiers: frozenset[str]
    markers: tuple[str, ...]
    text: str  # the normalised text the parts were read from


@cache
def _units() -> Any:
    """pint's registry, loaded on first use (about a second): most statements carry no unit."""
    import pint

    return pint.UnitRegistry()


@lru_cache(maxsize=4096)
def _unit(word: str) -> tuple[float, str] | None:
    """(factor to base units, dimension) of a unit word, or None if it is not a physical unit."""
    word = word.strip()
    if word in _DURATIONS:
        return _DURATIONS[word], "[time]"
    if word in _NOT_UNITS or len(word) > 20:
        return None
    word = re.sub(r"°\s*", "°", word)
    if re.fullmatch(r"°c|degrees? (?:c|celsius)", word):
        word = "degC"
    elif re.fullmatch(r"°f|degrees? (?:f|fahrenheit)", word):
        word = "degF"
    elif re.fullmatch(r"[kmgt]i?b", word):  # lower-cased "MB" is a megabyte, not pint's millibarn
        word = word[0].upper() + word[1:-1] + "B"
    if word in ("%", "percent", "per cent"):
        return 0.01, "ratio"
    try:
        ureg = _units()
        quantity = ureg.Quantity(1.0, word)
    except Exception:  # pint raises several kinds for an unknown word
        return None
    name = str(quantity.units)
    if not any(name.startswith(p) and name[len(p) :] in _COMMON_UNITS for p in _PREFIXES):
        return None
    dim = str(quantity.dimensionality)
    if dim in _PHYSICAL:
        base = quantity.to_base_units()
        return float(base.magnitude), dim
    if dim == "dimensionless" and "byte" in name:
        return float(quantity.to("byte").magnitude), "[information]"
    return None


def _clock(hour: str, minute: str | None, part: str) -> Quantity | None:
    h, m = int(hour), int(minute or 0)
    if part in ("pm", "p.m.", "afternoon", "evening") and h < 12:
        h += 12
    elif part in ("am", "a.m.", "morning") and h == 12:
        h = 0
    if h > 24 or m > 59:
        return None
    return Quantity(h + m / 60, "clock")


@lru_cache(maxsize=4096)
def _parse_numbers(text: str) -> str:
    from number_parser import parse

    return str(parse(text, language="en"))


def _spell_calendar(token: str) -> str:
    """A month or weekday name, its abbreviation or a misspelling ("wendsday"), as the full name."""
    if token in _MONTH_ABBREVIATIONS:
        return _MONTH_ABBREVIATIONS[token]
    bare = token.removesuffix("s")
    if bare in _WEEKDAYS or bare in _MONTHS:
        return bare
    if len(bare) >= 6:
        for name in _WEEKDAYS:
            if bare[0] == name[0] and SequenceMatcher(a=bare, b=name).ratio() >= 0.8:
                return name
    return token


def _quantities(text: str) -> tuple[list[Quantity], str]:
    """The quantities of ``text`` and the text without them."""
    found: list[Quantity] = []

    def take(q: Quantity | None) -> str:
        if q is not None:
            found.append(q)
        return " "

    for match in _SIZE.finditer(text):  # "30 x 60 cm": the unit applies to both sides
        text = text.replace(
            match.group(0), f"{match.group(1)} {match.group(3)} {match.group(2)} {match.group(3)}"
        )
    text = _CLOCK_AMPM.sub(lambda m: take(_clock(m.group(1), m.group(2), m.group(3))), text)
    text = _CLOCK_SAID.sub(
        lambda m: take(
            Quantity({"noon": 12.0, "midday": 12.0, "midnight": 0.0}[m.group(4)], "clock")
            if m.group(4)
            else _clock(m.group(1), m.group(2), m.group(3))
        ),
        text,
    )
    text = _CLOCK_24.sub(lambda m: take(_clock(m.group(1), m.group(2), "")), text)
    text = _THOUSANDS.sub(lambda m: f"{float(m.group(1)) * 1000:g}", text)
    text = _TIMES_PER.sub(lambda m: take(_frequency(float(m.group(1)), m.group(2))), text)
    text = _EVERY_SPAN.sub(lambda m: take(_frequency(1.0, m.group(2), float(m.group(1)))), text)
    text = _AND_A_HALF.sub(lambda m: f"1.5 {m.group(1)}", text)
    text = _HALF.sub(lambda m: f"0.5 {m.group(1)}", text)

    def quantity(m: re.Match[str]) -> str:
        value = float(m.group("num"))
        unit = (m.group("unit") or "").strip()
        if unit.split(" ")[0] in _MONTHS:  # "14 May": a date, read with the month below
            found.append(Quantity(value))
            return f" {m.group('num')}_ {unit} "
        currency = _CURRENCY.get(m.group("cur") or "")
        words = unit.split(" per ")[0].split()
        if words and words[0] in _CURRENCY:
            currency = _CURRENCY[words[0]]
            unit = ""
        if currency:
            found.append(Quantity(value, currency))
            return " " + unit.split(" ", 1)[-1] + " " if unit else " "
        if unit and not m.group("gap") and _unit(unit.split()[0]) is None:
            return m.group(0)  # "1password", "db01": a name, not a quantity
        if unit:
            first = unit.split(" per ")[0]
            known = _unit(first) or _unit(first.split()[0])
            if known is not None:
                factor, dim = known
                if dim == "[temperature]":
                    base = _units().Quantity(value, _temperature_unit(first)).to("kelvin").magnitude
                    found.append(Quantity(round(float(base), 6), dim, value))
                else:
                    found.append(Quantity(round(value * factor, 9), dim, value))
                rest = unit[len(first) :] if known == _unit(first) else unit[len(first.split()[0]) :]
                return " " + rest + " "
        found.append(Quantity(value))
        return " " + unit + " "

    text = _QUANTITY.sub(quantity, text)
    return found, text


def _frequency(times: float, span: str, spans: float = 1.0) -> Quantity:
    """``times`` in ``spans`` spans of time, as times a day: (2, "day") -> 2, (1, "hour", 12) -> 2."""
    days = 1.0 if span == "night" else _DURATIONS[span if span in _DURATIONS else span + "s"] * spans
    return Quantity(round(times / days, 9), "frequency")


def _temperature_unit(word: str) -> str:
    return "degF" if re.search(r"f(ahrenheit)?$", word.strip()) else "degC"


# --- reading ----------------------------------------------------------------------------------


# Nouns the lemma tables also read as a verb form of another word ("evening" -> "even").
_NOT_VERB_FORMS = frozenset(["evening"])


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    from lemminflect import getAllLemmas

    if not word.isalpha() or len(word) < 2 or word in _NOT_VERB_FORMS:
        return word
    lemmas = getAllLemmas(word)
    for pos in ("AUX", "VERB", "NOUN", "ADJ", "ADV"):
        if pos in lemmas:
            return str(lemmas[pos][0])
    return word


def normalise(text: str) -> str:
    """Lower case, contractions expanded, "the user" read as "I", numbers written as words in
    digits ("twenty-five" -> "25"; "no one", "one-on-one" kept as words)."""
    text = text.lower().replace("’", "'").replace("×", " x ").replace("–", " to ")
    for pattern, repl in _CONTRACTIONS:
        text = re.sub(pattern, repl, text)
    if re.search(r"\bthe user\b|^user\b", text):
        for pattern, repl in _PERSON:
            text = re.sub(pattern, repl, text)
    text = re.sub(r"(\d),(?=\d{3}\b)", r"\1", text)  # 1,000 -> 1000, 65,000 -> 65000
    text = re.sub(r"\bno one\b", "nobody", text)
    text = re.sub(r"\bone[- ]on[- ]one\b|\b1:1\b(?= with)", "oneonone", text)
    text = re.sub(r"\bone another\b", "each other", text)
    text = re.sub(
        r"\b(once|twice|thrice)(?= (?:a|an|per|every|each|daily|weekly|monthly|yearly)\b)",
        lambda m: _TIMES[m.group(1)],
        text,
    )
    text = re.sub(r"\b(?:a )?(couple|pair) of\b", "2", text)
    text = re.sub(
        r"\b(daily|nightly|hourly|weekly|monthly|yearly)\b", lambda m: "a " + _PER[m.group(1)], text
    )
    text = re.sub(r"\bper\b(?! cent)", "a", text)
    text = re.sub(r"\b(?:is|are|was|were|be)( not)? (?:allowed|permitted|able) to\b", r"may\1", text)
    text = re.sub(r"\b(?:is|are|was|were|be)( not)? required to\b", r"must\1", text)
    text = re.sub(r"\b(?:need|needs|have|has) to\b", "must", text)
    # a dose is what one takes: "Metformin dose: 500mg" = "take 500mg of metformin"
    text = re.sub(
        r"\b(?:the |my |a )?([a-z][a-z-]+) (?:dose|dosage)(?: is)?:?\s*(\d+(?:\.\d+)?\s*[a-z]+)",
        r"take \2 of \1",
        text,
    )
    text = re.sub(r"\b(?:the |my |a )?([a-z][a-z-]+) (?:dose|dosage)\b:?", r"take \1", text)
    text = re.sub(r"\b(?:the |my |a )?(?:dose|dosage) of\b", "take", text)
    text = re.sub(r"\ba dozen\b", "12", text)
    text = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", text)
    # An ordinal is a number where it ranks or dates ("the first of the month", "in third
    # grade", "the second floor"); elsewhere it is a word ("ask me first", "a second reviewer").
    text = re.sub(
        rf"(?<!\bthe )(?<!\bin )(?<!\bon )(?<!\bevery )\b({_ORDINALS})\b(?! of\b)", r"ordinal_\1", text
    )
    text = re.sub(r"(?<!half )\ban hour\b", "1 hour", text)
    if re.search(r"[a-z]", text):
        text = _parse_numbers(text).lower()
    return text.replace("ordinal_", "")


@lru_cache(maxsize=4096)  # a write compares one statement with up to five; bounded for servers
def read(statement: str) -> Reading:
    """The ``Reading`` of one statement."""
    text = normalise(statement)
    negations = len(re.findall(r"\w-free\b", text))  # "gluten-free" says "without gluten"
    negations += len(re.findall(r"(?<!\bat )\bleast\b", text))  # "least favourite": the opposite
    text = re.sub(r"\b(rather than|instead of)\b", "not", text)  # "pnpm rather than npm" = "pnpm, not npm"
    quantities, rest = _quantities(text)
    words = re.findall(r"[a-z0-9]+(?:'[a-z]+)?", rest)
    tokens: list[str] = []
    calendar: set[Quantity] = set()
    for i, word in enumerate(words):
        name = _spell_calendar(word)
        before = words[i - 1] if i else ""
        after = words[i + 1] if i + 1 < len(words) else ""
        if name in _WEEKDAYS:
            calendar.add(Quantity(float(_WEEKDAYS.index(name)), "weekday"))
            continue
        if name in _MONTHS and (
            name != "may"
            or before in ("in", "of", "since", "until", "by")
            or after.isdigit()
            or before.isdigit()
        ):
            calendar.add(Quantity(float(_MONTHS.index(name) + 1), "month"))
            continue
        if not word.isdigit():  # numbers are in ``quantities``
            tokens.append(word)
    joined = " ".join(tokens)
    modal_words = set(tokens) | ({"have_to"} if re.search(r"\b(have|has|had) to\b", joined) else set())
    modality = frozenset(k for k, words_ in _MODALS.items() if modal_words & words_)
    quantifiers = frozenset(k for k, words_ in _QUANTIFIERS.items() if set(tokens) & words_)
    markers = tuple(CHANGE_MARKERS.findall(joined))
    lemmas = [_token(t) for t in tokens]
    negated: set[str] = set()
    for i, word in enumerate(tokens):
        if word in _NEGATIVE_STATES or lemmas[i] in _NEGATIVE_STATES:
            negations += 1
        elif word in NEGATORS:
            negations += 1
            target = next((t for t in lemmas[i + 1 :] if t not in _FUNCTION and t not in NEGATORS), None)
            if target:
                negated.add(target)
    return Reading(
        tokens=tuple(lemmas),
        quantities=tuple(quantities) + tuple(sorted(calendar, key=lambda q: (str(q.dimension), q.value))),
        negations=negations,
        negated=frozenset(negated),
        modality=modality,
        quantifiers=quantifiers,
        markers=markers,
        text=text,
    )


# Words skipped when looking for what a negation denies ("is not actually allergic" -> allergic).
_FUNCTION = frozenset(
    _words(
        "be do have can could may might must shall should will would a an the any actually really longer "
        "get i to of"
    )
)


# Words that say the same thing in a short statement about a person's preferences, family, work
# or tools, one form for each group. No maintained thesaurus ships offline (see docs/dedup.md), so
# this list is small, written by hand and kept to general English, never to values: a word of a
# group never names a number, a place, a time, a colour or a side of a pair of opposites.
_SAME_SENSE = {
    "theme": "mode",
    "kid": "child",
    "mum": "mother",
    "mom": "mother",
    "dad": "father",
    "big": "large",
    "scared": "afraid",
    "fast": "quick",
    "flat": "apartment",
    "retain": "keep",
    "adore": "love",
    "enjoy": "like",
    "class": "lesson",
    "dish": "food",
    "chat": "message",
    "below": "under",
    "need": "must",
    "require": "must",
}


def _token(word: str) -> str:
    """A word as compared: its lemma, one form for the speaker and for "every" / "each" / "all",
    and one for the words of a group of ``_SAME_SENSE``."""
    if word in ("my", "me", "mine", "myself"):
        return "i"
    if word in _QUANTIFIERS["all"]:
        return "every"
    found = lemma(word)
    return _SAME_SENSE.get(found, found)


def same_quantities(a: Reading, b: Reading) -> bool:
    """Whether the two statements carry the same values, each matched once."""
    if len(a.quantities) != len(b.quantities):
        return False
    left = list(b.quantities)
    for q in a.quantities:
        match = next((i for i, o in enumerate(left) if q.matches(o)), None)
        if match is None:
            return False
        left.pop(match)
    return True


def describe(quantities: tuple[Quantity, ...]) -> str:
    return " ".join(f"{q.value:g}{'' if q.dimension is None else ' ' + q.dimension}" for q in quantities)


def attribute(statement: str) -> tuple[str, str] | None:
    """What the statement sets, when a thing (not a person) is its subject: the noun phrase before
    the verb and the verb's lemma. "The on-call rotation now changes every Tuesday at 10am" ->
    ("on-call rotation", "change"); "Our staging database lives on db-2" -> ("staging database",
    "live"). None when the subject is a pronoun, a quantifier ("all pull requests"), a name alone
    (a word the lemma tables do not know: "Maria", "Alice" — a person has many attributes, and
    ``subject`` is the way to name one), when the statement is an instruction ("Check the logs first", "Never deploy on
    Fridays") or no verb is found in the first words."""
    from lemminflect import getAllLemmas

    words = re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", normalise(statement))
    while words and words[0] in _DETERMINERS:
        words = words[1:]
    if (
        not words
        or words[0] in _ADVERBS
        or words[0] in NEGATORS
        or any(words[0] in q for q in _QUANTIFIERS.values())
    ):
        return None
    first = getAllLemmas(words[0]) if words[0].isalpha() else {}
    if "VERB" in first and words[0] in first["VERB"] and words[1:2] and words[1] in _DETERMINERS:
        return None  # an instruction: "check the logs", "water the plants"
    noun: list[str] = []
    for i, word in enumerate(words[:7]):
        if noun and (word in _ADVERBS or (word == "no" and words[i + 1 : i + 2] == ["longer"])):
            continue
        if noun and word == "longer":
            continue
        lemmas = getAllLemmas(word) if word.isalpha() else {}
        is_verb = "AUX" in lemmas or (
            "VERB" in lemmas and (word.endswith(("s", "ed")) or "NOUN" not in lemmas)
        )
        if noun and is_verb and word not in _DETERMINERS:
            if noun[0] in _PRONOUNS or len(noun) > 4:
                return None
            if len(noun) == 1 and noun[0].isalpha() and not getAllLemmas(noun[0]):
                return None  # a name ("Maria volunteers…"): a person, whose facts ``subject`` keys
            verb = str((lemmas.get("AUX") or lemmas["VERB"])[0])
            return " ".join(lemma(w) for w in noun), verb
        if word in _DETERMINERS or word in ("of", "in", "for", "to", "on", "at"):
            if not noun:
                return None
            noun.append(word)
            continue
        noun.append(word)
    return None


def same_attribute(a: str, b: str) -> bool:
    """Whether two statements set the same attribute of the same thing (``attribute``)."""
    found = attribute(a)
    return found is not None and found == attribute(b)


_NOT_CONTENT = (
    _FUNCTION | _DETERMINERS | frozenset(_words("and or but so in on at for with by from as it we you"))
)


def shared_content(a: str, b: str, skip: frozenset[str] = frozenset()) -> float:
    """Content in common over the larger statement's, on the readings: lemmas ("kids" = "kid"),
    "the user" = "I", and the values when both carry the same ("8pm" = "20:00"); ``skip``: words
    of a shared subject, left out."""
    ra, rb = read(a), read(b)
    wa = {t for t in ra.tokens if t not in _NOT_CONTENT and t not in skip}
    wb = {t for t in rb.tokens if t not in _NOT_CONTENT and t not in skip}
    shared = len(wa & wb)
    if ra.quantities and same_quantities(ra, rb):
        shared += len(ra.quantities)
        wa |= {f"#{i}" for i in range(len(ra.quantities))}
        wb |= {f"#{i}" for i in range(len(rb.quantities))}
    return shared / max(1, len(wa), len(wb))
