"""A person's sentence rewritten as a standalone third-person statement about them.

"I went to a support group yesterday", said by Caroline on 8 May 2023, becomes "Caroline went
to a support group on 7 May 2023". The first reference names the person; later ones are "they"
/ "them" / "their" with the verb agreeing ("I'm sure I have" -> "Caroline is sure they have").
"We" is the person and their team when the sentence is about work, their family when it names
family ("we took the kids"), else the person "and others": a household is never invented.
Relative dates become absolute, weekdays included ("on Monday" said on Thursday 5 March 2026 in a
past-tense sentence -> "on 2 March 2026").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from nous.events.category import TECHNICAL
from nous.events.screen import strip_openers
from nous.language.lexicon import ADVERBS, IRREGULAR_PAST
from nous.retrieval.timeparse import NUMBER_WORDS, WEEKDAYS

_TOKEN = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?|\s+|[^A-Za-z\s]+")
_WORK = re.compile(
    r"\b(team|project|company|office|colleagues?|co-?workers?|clients?|customers?|sprint|deploy\w*|"
    r"release\w*|migrat\w+|codebase|app|service|server|database|product|startup|manager|meeting|"
    r"launch\w*|repo\w*|stack|backend|frontend|api|production|staging|code|feature|system|platform|"
    r"pipeline|infrastructure|cluster|schema|ledger|payments?|billing|budget|deadline|roadmap|vendor|"
    r"contract|hiring|hire|quarter|revenue|users?)\b",
    re.IGNORECASE,
)
_FAMILY = re.compile(
    r"\b(famil(?:y|ies)|kids?|children|child|son|daughters?|sons|husband|wife|partner|spouse|mom|mum|"
    r"mother|dad|father|parents|brother|sister|siblings?|grandm\w+|grandp\w+|baby|babies|boyfriend|"
    r"girlfriend|fianc[eé]e?)\b",
    re.IGNORECASE,
)
_PARTICIPLE = frozenset({"been", "had", "gone", "done", "seen", "never", "already", "just", "finished"})
_SINGULAR = {"am": "is", "have": "has", "do": "does", "don't": "doesn't", "haven't": "hasn't", "go": "goes"}
_PLURAL = {"am": "are", "was": "were", "wasn't": "weren't"}
_TAIL = re.compile(
    r"\s*(?:\s[-–—]\s|;|,? and it was\b|,? it was\b|,? it's been\b|,? which (?:was|is)\b|"
    r",? so (?:much )?(?:fun|cool|great)\b|,? lol\b|,? haha\b).*$",
    re.IGNORECASE,
)
_SLANG = [
    (r"^(?:gonna|going to)\b", "I'm going to"),
    (r"^wanna\b", "I want to"),
    (r"\bgonna\b", "going to"),
    (r"\bwanna\b", "want to"),
    (r"\bgotta\b", "have to"),
    (r"(?<!\w)'cause\b", "because"),
    (r"\bfam\b", "family"),
    (r"\bedu\b", "education"),
    (r"\bkiddos\b", "kids"),
    (r"\bbday\b", "birthday"),
]
_STANDING_LEAD = re.compile(r"^(?:please\s+)?(from now on|in (?:the )?future|going forward)?,?\s*", re.I)
MIN_CORE_WORDS = 5


def agree(verb: str) -> str:
    """Third-person singular present of a verb that followed "I" ("love" -> "loves")."""
    low = verb.lower()
    if low in _SINGULAR:
        return _SINGULAR[low]
    past = low.endswith("ed") and not low.endswith("eed") and low not in ("embed", "shed")
    if low in IRREGULAR_PAST or low in ADVERBS or past or not low.isalpha():
        return verb
    if low.endswith("ing") and len(low) > 5:
        return verb
    if low.endswith(("ss", "us", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("s"):
        return verb
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


@dataclass(slots=True)
class _Person:
    name: str
    group: str  # "family", "the team" or "others": who "we" are besides the person
    named: bool = False  # the person has been named in this sentence

    group_last: bool = False  # the last subject was the person with others ("Maya and the team")

    def subject(self) -> tuple[str, bool]:
        """What "I" becomes, and whether it is singular (the name) or "they"."""
        if self.named and not self.group_last:
            return "they", False
        self.named, self.group_last = True, False
        return self.name, True

    def possessive(self) -> str:
        if self.named:
            return "their"
        self.named = True
        return f"{self.name}'s"

    def group_subject(self) -> str:
        if self.named and self.group_last:
            return "they"
        self.named, self.group_last = True, True
        return f"{self.name} and {self.group}"


_PHRASE_LEAD = frozenset(
    [
        "my",
        "our",
        "with",
        "partner",
        "wife",
        "husband",
        "boyfriend",
        "girlfriend",
        "friend",
        "son",
        "daughter",
        "mom",
        "mum",
        "dad",
        "sister",
        "brother",
        "cousin",
        "colleague",
        "boss",
    ]
)


def _joined(tokens: list[str], words: list[int], k: int) -> str:
    """How the "I" at words[k] is joined to what precedes it: "phrase" ("Kim and I"), "clause"
    (", and I ..." / "... but I ..."), or "" (neither)."""
    if k < 2 or tokens[words[k - 1]].lower() not in ("and", "but", "or"):
        return ""
    between = "".join(tokens[words[k - 2] + 1 : words[k - 1]])
    named = tokens[words[k - 2]][:1].isupper()
    opens = k == 2 or tokens[words[k - 3]].lower() in _PHRASE_LEAD  # "Kim and I", "my partner Kim and I"
    if tokens[words[k - 1]].lower() == "and" and "," not in between and named and opens:
        return "phrase"
    return "clause"


def _pronouns(text: str, person: _Person) -> str:
    tokens = _TOKEN.findall(text)
    out = list(tokens)
    words = [i for i, t in enumerate(tokens) if t[0].isalpha()]

    def next_word(k: int) -> int | None:
        """The token index of the word after words[k] when only spaces separate them, adverbs
        ("really", "also") skipped: the verb of an "I"."""
        j = k + 1
        while j < len(words) and all(tokens[x].isspace() for x in range(words[j - 1] + 1, words[j])):
            if tokens[words[j]].lower() not in ADVERBS:
                return words[j]
            j += 1
        return None

    for k, i in enumerate(words):
        token = tokens[i].replace("’", "'")
        low = token.lower()
        if "-" in (tokens[i - 1] if i else "", tokens[i + 1] if i + 1 < len(tokens) else ""):
            continue  # part of a compound ("me-time")
        if low in ("i", "i'm", "i've", "i'd", "i'll") and token[0] == "I":
            following = next_word(k)
            joined = _joined(tokens, words, k)
            if joined == "phrase":  # "my partner Kim and I need": the person by name, plural verb
                person.named, person.group_last = True, False
                verb = {"i'm": " are", "i've": " have", "i'd": " would", "i'll": " will"}.get(low, "")
                out[i] = person.name + verb
                continue
            if joined == "clause" and person.named and not person.group_last:
                who, singular = "", True  # "..., and I work as" -> "..., and works as"
            else:
                who, singular = person.subject()
            if low == "i'm":
                out[i] = f"{who} {'is' if singular else 'are'}"
            elif low == "i've":
                out[i] = f"{who} {'has' if singular else 'have'}"
            elif low == "i'd":
                nxt = tokens[following].lower() if following is not None else ""
                out[i] = f"{who} {'had' if nxt in _PARTICIPLE or nxt.endswith('ed') else 'would'}"
            elif low == "i'll":
                out[i] = f"{who} will"
            else:
                out[i] = who
                if following is not None:
                    verb = tokens[following]
                    out[following] = agree(verb) if singular else _PLURAL.get(verb.lower(), verb)
        elif low in ("me", "myself"):
            out[i] = {"me": "them", "myself": "themselves"}[low] if person.named else person.subject()[0]
        elif low == "my":
            out[i] = person.possessive()
        elif low == "mine":
            out[i] = "theirs" if person.named else f"{person.possessive()}"
        elif low in ("we", "we're", "we've", "we'd", "we'll"):
            who = person.group_subject()
            out[i] = (
                who + {"we": "", "we're": " are", "we've": " have", "we'd": " would", "we'll": " will"}[low]
            )
        elif token in ("us", "Us"):
            out[i] = "them" if person.named else person.group_subject()
        elif low in ("our", "ours"):
            out[i] = ("their" if low == "our" else "theirs") if person.named else person.possessive()
        elif low == "ourselves":
            out[i] = "themselves"
    return "".join(out)


# "since we last talked": the "we" is the two people talking, and it dates nothing.
_SINCE_WE_SPOKE = re.compile(
    r",?\s*since (?:we|I) (?:last )?(?:spoke|talked|chatted|caught up|saw each other|met)(?: last)?,?",
    re.IGNORECASE,
)


def core(sentence: str) -> str:
    """The statement without its trailing comment ("... - it was so fun"), chat slang, and "since
    we last talked"."""
    sentence = _SINCE_WE_SPOKE.sub("", sentence).strip()
    text = _TAIL.sub("", sentence).strip()
    if len(text.split()) < MIN_CORE_WORDS:
        text = sentence
    for pattern, repl in _SLANG:
        text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    return text


def _finish(text: str) -> str:
    text = re.sub(r"(?:,?\s+(?:and|but|so|or|because|with|to))+\W*$", "", " ".join(text.split())).strip(
        " ,;:-"
    )
    if not text:
        return text
    text = text[0].upper() + text[1:]
    text = text.rstrip("!").rstrip()
    return text if text.rstrip("\"')").endswith((".", "?")) else text + "."


def third_person(sentence: str, name: str, at: datetime) -> str:
    """``sentence`` about ``name`` instead of "I", with relative dates made absolute."""
    text = strip_openers(resolve_dates(core(sentence), at))
    # "I'm Alice, I moved to Berlin" about Alice: the introduction says nothing new.
    text = re.sub(
        rf"^(?:I'm|I am|my name is)\s+{re.escape(name)}\s*(?:[,;.!-]+\s*|\s+and\s+)(?=\w)",
        "",
        text,
        flags=re.IGNORECASE,
    )
    work = _WORK.search(text) or TECHNICAL.search(text)
    group = "the team" if work else "family" if _FAMILY.search(text) else "others"
    return _finish(_pronouns(text, _Person(name, group)))


def standing_instruction_fact(sentence: str, name: str, at: datetime) -> str:
    """A standing instruction as a preference: "Always include version numbers when I ask ..." said
    by Craig -> "Craig wants the assistant to always include version numbers when they ask ..."."""
    text = resolve_dates(strip_openers(sentence), at)
    lead = _STANDING_LEAD.match(text)
    when = lead.group(1) if lead and lead.group(1) else ""
    body = text[lead.end() if lead else 0 :].rstrip(".! ")
    body = body[:1].lower() + body[1:]
    rewritten = _pronouns(body, _Person(name, "the team", named=True))
    return _finish(f"{name} wants the assistant to {rewritten}{' ' + when.lower() if when else ''}")


def _day(t: datetime) -> str:
    return f"{t.day} {t:%B %Y}"


_FUTURE = re.compile(
    r"\b(will|'ll|going to|gonna|plan(?:s|ning)? to|next|upcoming|coming|tomorrow|hope to|want to|"
    r"about to|scheduled|(?:am|'m|is|are|'re)\s+\w+ing)\b",
    re.IGNORECASE,
)
# Whole weekday names and their usual abbreviations ("last Fri").
_ABBREVIATIONS = {
    "mon": 0,
    "tue": 1,
    "tues": 1,
    "wed": 2,
    "thu": 3,
    "thur": 3,
    "thurs": 3,
    "fri": 4,
    "sat": 5,
    "sun": 6,
}
_WEEKDAY_NUMBER = {**WEEKDAYS, **_ABBREVIATIONS}
_WEEKDAY = "(" + "|".join(sorted(_WEEKDAY_NUMBER, key=len, reverse=True)) + r")\.?"
_HABIT = re.compile(
    r"\b(?:never|always|usually|often|every|each|most|typically|normally)\b|"
    rf"\b(?:{'|'.join(WEEKDAYS)})s\b|\b{_WEEKDAY}\s+(?:mornings|afternoons|evenings|nights)\b",
    re.IGNORECASE,
)
_AGO = re.compile(
    r"\b(?:(about|around|roughly|almost|nearly|over|some)\s+)?(\d+|"
    + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
    + r")\s+(day|week|month|year)s?\s+ago\b",
    re.IGNORECASE,
)


def _weekday(text: str, at: datetime) -> str:
    """Weekdays ("on Monday", "last Friday", "next Tuesday", "this Sunday") as dates: the one
    before ``at`` in a sentence about the past, the one after it in one about the future."""
    if _HABIT.search(text):
        return text  # "never on Friday afternoons", "every Monday": not one day
    future = bool(_FUTURE.search(text))

    def date(match: re.Match[str]) -> str:
        which = (match.group(1) or "").lower()
        wd = _WEEKDAY_NUMBER[match.group(2).lower()]
        ahead = which == "next" or (which != "last" and future)
        days = ((wd - at.weekday()) % 7 or 7) if ahead else -((at.weekday() - wd) % 7 or 7)
        return f"on {_day(at + timedelta(days=days))}"

    return re.sub(
        rf"\b(?:on\s+)?(?:(last|next|this|this coming|on)\s+)?{_WEEKDAY}\b(?!\s+\d)",
        lambda m: date(m) if m.group(0).lower().split()[0] in ("on", "last", "next", "this") else m.group(0),
        text,
        flags=re.IGNORECASE,
    )


def _ago(match: re.Match[str], at: datetime) -> str:
    """ "two days ago" -> "on 3 May 2023"; "about five years ago" -> "around 2018" (a rough
    amount gets a rough date: the month or year, never a day)."""
    rough, raw, unit = match.group(1), match.group(2).lower(), match.group(3).lower()
    n = int(raw) if raw.isdigit() else NUMBER_WORDS.get(raw, 1)
    days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * n
    then = at - timedelta(days=days)
    if unit == "year":
        return f"{'around' if rough else 'in'} {then.year}"
    if rough or unit == "month":
        return f"{'around' if rough else 'in'} {then:%B %Y}"
    return f"on {_day(then)}" if unit == "day" else f"the week of {_day(then)}"


def resolve_dates(text: str, at: datetime) -> str:
    """Relative dates ("yesterday", "last year", "next month", "on Monday", "two weeks ago") as
    absolute ones, from ``at``."""
    text = _AGO.sub(lambda m: _ago(m, at), text)
    text = _weekday(text, at)
    last_month = at.replace(day=1) - timedelta(days=1)
    next_month = (at.replace(day=28) + timedelta(days=4)).replace(day=1)
    rules = [
        (r"\byesterday\b", f"on {_day(at - timedelta(days=1))}"),
        (r"\btoday\b", f"on {_day(at)}"),
        (r"\btomorrow\b", f"on {_day(at + timedelta(days=1))}"),
        (r"\blast night\b", f"on the night of {_day(at - timedelta(days=1))}"),
        (r"\btonight\b", f"on the evening of {_day(at)}"),
        (r"\bthis weekend\b", f"the weekend of {_day(at + timedelta(days=(5 - at.weekday()) % 7))}"),
        (r"\bthis week\b", f"the week of {_day(at)}"),
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
