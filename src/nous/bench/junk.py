"""What a reader would throw out of the facts a pipeline stored, checked one fact at a time.

These checks are written apart from the extractor's own filters (``nous.events.screen``), so the
benchmark does not grade the pipeline by the rules it was built with:

- **from the assistant**: a provenance turn id points at a message whose role is not ``user``, or
  at least 80% of the fact's content words occur in one assistant message and fewer in every
  message of a person;
- **code or URL**: a code fence, a URL, call or assignment syntax, an import, a stack-trace
  line, an exception name with its message, or a shell command;
- **over 300 characters**;
- **request or question**: a question mark, the assistant addressed ("you"), an inverted
  question ("how can the user ..."), a plea for help or advice, or uncertainty put as a fact
  ("is not sure how to ...");
- **duplicate**: a near-duplicate (``near_duplicate``) of an earlier fact of the same scope;
- **fragment**: not a sentence: no capital at its start or no full stop at its end, fewer than
  three content words, or no verb (no auxiliary, no word in -s, -ed or -ing, no irregular past);
  a summary sentence is a fragment too when what it says was asked about or gone through starts
  with a word the conversation itself uses as a verb more than as a noun ("They asked about
  *pick* Postgres": "pick" follows "we" / "to" / "can", never "a" / "the");
- **"and family" not said**: a fact says "... and family" (or "and their family") but no message
  it came from names a family member;
- **unresolved date**: a relative date left as said ("yesterday", "last week", "on Monday",
  "two days ago") where the session's date would have fixed it;
- **one person, several subjects** (per conversation): subjects that are one person spelled
  differently ("alice" / "Alice"), or "the user" beside the user's own id in one scope.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from nous.memory.dedup import DUPLICATE_THRESHOLD, DedupThresholds, Tier, classify

MAX_CHARS = 300
JUNK_CHECKS = ("from_assistant", "code_or_url", "over_300", "request_or_question", "duplicates")
NEW_CHECKS = (
    "fragments",
    "family_not_said",
    "unresolved_dates",
    "people_with_several_subjects",
    "unresolved_references",
    "feelings_only",
)
FROM_ASSISTANT_SHARE = 0.8
RESTATED_SHARE = 2 / 3

_CODE = re.compile(
    r"```|~~~|\b\w+\.\w+\([^)]*\)|\b\w+\([\w\s,'\"=.]*\)|\w\s?(?:==|!=|=>|->|\+=|:=)\s?\w|"
    r"\b\w+\s?=\s?['\"\[{(\d]|^\s*(?:def|class|import|from\s+\S+\s+import|return|SELECT|CREATE)\b|"
    r"\bimport\s+[a-z_][\w.]*|\bfrom\s+[a-z_][\w.]*\s+import\b|[{};]\s*$|"
    r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|\b[A-Z]\w*(?:Error|Exception):\s|"
    r"(?:^|\s)\$\s+\w|\b(?:pip3?|npm|yarn|apt(?:-get)?|brew|sudo|docker|kubectl|git|curl|wget|"
    r"poetry|cargo)\s+(?:install|run|add|commit|push|pull|clone|build|exec|apply|get|init|-{1,2}\w)",
    re.MULTILINE,
)
_URL = re.compile(r"\bhttps?://|\bwww\.\w|\b\w[\w-]*\.(?:com|org|net|io|dev|app)/\S", re.IGNORECASE)
_REQUEST = re.compile(
    r"\?|\b(?:you|your|yours|yourself)\b|"
    r"\b(?:how|why)\s+(?:can|could|should|would|do|does|did|is|are|will|might)\b|"
    r"\b(?:what|where|when|whether)\s+(?:can|could|should|would|do|does|did|will|might)\b|"
    r"\bhelp(?:ing)?\s+(?:me|us|the user)\b|\bplease\b|\blet (?:me|us) know\b|"
    r"\b(?:need|needs|want|wants|would like|'d like|looking for|asks? for)\s+(?:some\s+|a\s+little\s+)?"
    r"(?:help|advice|guidance|suggestions|recommendations|feedback|assistance|tips)\b|"
    r"\b(?:not sure|unsure|wondering|wonders|no idea)\s+(?:how|if|whether|what|why|where|which|about)\b",
    re.IGNORECASE,
)
# "..., can the user apply ...": an auxiliary before its subject (case matters for names).
_INVERTED = re.compile(
    r"(?:^|[,;:]\s*|\b(?:and|so|but)\s+)(?:[Cc]an|[Cc]ould|[Ww]ould|[Ww]ill|[Ss]hould|[Dd]oes|[Dd]o|[Ii]s|"
    r"[Aa]re)\s+(?:the user|he|she|they|I|we|[A-Z][a-z]+)\s+[a-z]+"
)
_WORD = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(
    r"\d+(?:[.,:]\d+)*|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun)[a-z]*\b",
    re.IGNORECASE,
)
_FUNCTION = frozenset(
    re.findall(
        r"\S+",
        """a an the and or but so to of in on at for with by from as is are was were be been am has have
    had do does did it its this that these those i me my we our you your he she his her they them
    their not no very really just also user there here will would can could should went go goes got
    get make made take took come came keep kept use used""",
    )
)


def content_words(text: str, skip: Iterable[str] = ()) -> set[str]:
    """Lower-cased words that are not function words (plural -s dropped), minus ``skip``'s words."""
    skipped = {w.rstrip("s") for s in skip for w in _WORD.findall(s.lower())}
    return {w.rstrip("s") for w in _WORD.findall(text.lower()) if w not in _FUNCTION} - skipped


def has_code(text: str) -> bool:
    return bool(_CODE.search(text))


def has_url(text: str) -> bool:
    return bool(_URL.search(text))


def is_request(text: str) -> bool:
    """A request, a question or an admission of not knowing, put as if it were a fact."""
    return bool(_REQUEST.search(text) or _INVERTED.search(text))


def from_assistant(
    text: str, subject: str, turn_ids: Sequence[str], roles: dict[str, str], said: dict[str, str]
) -> bool:
    """Whether the fact came from an assistant's message: by provenance, or by its words.

    ``roles`` and ``said`` map every message id of the conversation to its role and text."""
    if any(roles.get(t, "user") != "user" for t in turn_ids):
        return True
    words = content_words(text, [subject])
    if not words:
        return False
    best = {"user": 0.0, "other": 0.0}
    for message_id, message in said.items():
        side = "user" if roles.get(message_id, "user") == "user" else "other"
        share = len(words & content_words(message)) / len(words)
        best[side] = max(best[side], share)
    return best["other"] >= FROM_ASSISTANT_SHARE and best["other"] > best["user"]


def restates(a: str, b: str, subject: str | None = None) -> bool:
    """``a`` says nothing ``b`` does not: every number, month or weekday of ``a`` is in ``b`` and two
    thirds of its content words (its subject's aside) occur in ``b``."""
    if not {n.lower() for n in _NUMBER.findall(a)} <= {n.lower() for n in _NUMBER.findall(b)}:
        return False
    words = content_words(a, [subject] if subject else [])
    return bool(words) and len(words & content_words(b)) / len(words) >= RESTATED_SHARE


def near_duplicate(a: str, b: str, cosine: float, subject: str | None = None) -> bool:
    """Two facts of one scope that say the same thing: cosine at least the write path's duplicate
    threshold, and either the stricter of the write path's lexical checks (the one for events: no
    conflicting detail, and cosine >= 0.90 or half the content words shared) calls them
    duplicates, or one restates the other (``restates``). Categories play no part."""
    if cosine < DUPLICATE_THRESHOLD:
        return False
    tier, _ = classify(cosine, a, b, DedupThresholds(), subject=subject, additive=True)
    return tier == Tier.DUPLICATE or restates(a, b, subject) or restates(b, a, subject)


_SENTENCE_END = re.compile(r"[.!?][\"')]*$")
_AUXILIARY = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "will",
        "would",
        "can",
        "could",
        "should",
        "may",
        "might",
        "must",
        "shall",
        "'s",
        "'re",
        "'ve",
    ]
)
_IRREGULAR = frozenset(
    [
        "went",
        "got",
        "made",
        "took",
        "saw",
        "came",
        "found",
        "felt",
        "thought",
        "knew",
        "told",
        "gave",
        "bought",
        "ran",
        "met",
        "left",
        "began",
        "brought",
        "built",
        "chose",
        "drove",
        "ate",
        "fell",
        "flew",
        "forgot",
        "grew",
        "heard",
        "held",
        "kept",
        "led",
        "lost",
        "meant",
        "paid",
        "put",
        "read",
        "said",
        "sat",
        "sent",
        "spent",
        "stood",
        "taught",
        "threw",
        "understood",
        "wore",
        "won",
        "wrote",
    ]
)
_VERB_CUE = frozenset(
    [
        "i",
        "we",
        "you",
        "they",
        "can",
        "could",
        "will",
        "would",
        "should",
        "'ll",
        "let's",
        "please",
        "did",
        "don't",
        "do",
    ]
)
_NOUN_CUE = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "our",
        "your",
        "their",
        "his",
        "her",
        "this",
        "that",
        "these",
        "those",
        "some",
        "any",
    ]
)
_LISTED = re.compile(r"\b(?:asked about|went through|talked about|covered)\s+([a-z][\w-]*)")
_FAMILY = re.compile(
    r"\b(?:famil(?:y|ies)|fam|kids?|children|child|sons?|daughters?|husband|wife|partner|spouse|mom|mum|"
    r"mother|dad|father|parents|brothers?|sisters?|siblings?|grand\w+|baby|babies|boyfriend|girlfriend|"
    r"fianc\w*|aunt|uncle|cousins?|niece|nephew|in-laws?)\b",
    re.IGNORECASE,
)
# "Maya and family" / "the user and their family" (the rewrite of "we"), not "friends and family".
_AND_FAMILY = re.compile(r"\b(?:[A-Z][a-z]+|user) and (?:their |his |her )?family\b")
_WEEKDAYS = (
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?"
)
_RELATIVE_DATE = re.compile(
    rf"\b(?:yesterday|tomorrow|tonight|today|(?:last|next|this|coming)\s+(?:week|weekend|month|year|"
    rf"{_WEEKDAYS})|(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of)\s+"
    rf"(?:days?|weeks?|months?|years?)\s+ago|on\s+{_WEEKDAYS}(?!s)(?!\s+(?:mornings|afternoons|evenings|nights)))\b",
    re.IGNORECASE,
)
_TOKENS = re.compile(r"[a-z]+(?:'[a-z]+)?")


def verb_uses(texts: Iterable[str]) -> dict[str, tuple[int, int]]:
    """Per word, how often the conversation uses it after a verb cue ("we pick", "to call") and
    after a noun cue ("the call", "my order")."""
    out: dict[str, tuple[int, int]] = {}
    for text in texts:
        tokens = _TOKENS.findall(text.lower())
        for before, word in itertools.pairwise(tokens):
            verb, noun = out.get(word, (0, 0))
            out[word] = (verb + (before in _VERB_CUE), noun + (before in _NOUN_CUE))
    return out


def is_fragment(sentence: str, uses: dict[str, tuple[int, int]] | None = None) -> bool:
    """Whether ``sentence`` is not a sentence a reader would keep (see the module docstring)."""
    text = sentence.strip()
    if not text or not text[0].isupper() or not _SENTENCE_END.search(text):
        return True
    if len(content_words(text)) + ("user" in _WORD.findall(text.lower())) < 3:  # the user counts
        return True
    words = _TOKENS.findall(text.lower())
    verb = any(
        w in _AUXILIARY
        or w in _IRREGULAR
        or w.endswith(("ed", "ing"))
        or "'" in w
        or (w.endswith("s") and not w.endswith("ss") and i > 0)
        for i, w in enumerate(words)
    )
    if not verb:
        return True
    for match in _LISTED.finditer(text):
        verb_count, noun_count = (uses or {}).get(match.group(1), (0, 0))
        if verb_count > noun_count:
            return True
    return False


def family_not_said(text: str, sources: Iterable[str]) -> bool:
    """The fact adds "and family" though none of the messages it came from names family."""
    return bool(_AND_FAMILY.search(text)) and not any(_FAMILY.search(s) for s in sources)


def unresolved_date(text: str) -> bool:
    return bool(_RELATIVE_DATE.search(text))


# "it" (or "this" / "that" standing alone) whose thing the fact never names: "Melanie and others
# just did it", "Caroline felt empowered doing it", "Caroline also uses it to speak up".
_BARE_IT = re.compile(
    r"\b(?:it|this|that)\b(?=\s*(?:[.!,;]|$|(?:to|for|because|with|on|at|in|when|and|so|again|too|yet)\b))",
    re.IGNORECASE,
)
_NAMED_THING = re.compile(
    r"\b(?:a|an|the|her|his|their|its|my|our|this|that|these|those|some|one|another)\s+[A-Za-z]|"
    r"\b[a-z]+ing\b",  # "passionate about dancing and loves it"
    re.IGNORECASE,
)
# A feeling and nothing it is about: "Caroline is so excited and thankful."
_FEELING_ONLY = re.compile(
    r"^[A-Z][\w' ]{0,40}?\s(?:is|was|are|were|feels|felt|seems|seemed)\s+(?:so\s+|really\s+|very\s+|"
    r"super\s+|truly\s+|quite\s+)*(?:excited|thankful|grateful|happy|glad|proud|thrilled|stoked|pumped|"
    r"nervous|anxious|sad|upset|relieved|amazed|blessed|lucky|inspired|touched|overwhelmed|tired|bored|"
    r"ecstatic|delighted|psyched|moved|hopeful|optimistic)(?:\s*(?:,|and)\s*(?:so\s+|really\s+|very\s+)*"
    r"(?:excited|thankful|grateful|happy|glad|proud|thrilled|nervous|anxious|sad|relieved|amazed|blessed|"
    r"lucky|inspired|touched|overwhelmed|hopeful|optimistic))*\s*[.!]?$"
)


def unresolved_reference(text: str) -> bool:
    """The fact has "it" (or a lone "this" / "that") as an object with nothing before it that it
    could stand for: no noun phrase ("a guitar", "her painting") or activity ("dancing") precedes
    it. "All of that" after a list is the list."""
    for m in _BARE_IT.finditer(text):
        before = text[: m.start()]
        if re.search(r"\b(?:all|some|most|any) of\s*$", before, re.IGNORECASE):
            continue
        if not _NAMED_THING.search(re.sub(r"\w+ing\s*$", "", before)):  # "doing it": the verb, not the thing
            return True
    return False


def feelings_only(text: str) -> bool:
    """A feeling with nothing it is about: "Caroline is so excited and thankful."."""
    return bool(_FEELING_ONLY.match(text.strip()))


def several_subjects(
    subjects: Iterable[tuple[str | None, str]], speakers: Iterable[str] = ()
) -> list[list[str]]:
    """The people stored under more than one subject: (scope, subject) pairs grouped by the
    subject case-folded, "the user" joining the scope's own user id and any subject that is no
    speaker of the conversation (``speakers``: its named speakers; an unnamed user is "the user",
    so "Craig" beside "the user" in a chat with no speaker named Craig is one person twice)."""
    named = {s.casefold() for s in speakers}
    groups: dict[tuple[str | None, str], set[str]] = {}
    for scope, subject in subjects:
        key = subject.casefold()
        if key == "the user" and scope:
            key = scope.casefold()
        elif named and key not in named and key != (scope or "").casefold():
            key = (scope or "the user").casefold()
        groups.setdefault((scope, key), set()).add(subject)
    return [sorted(g) for g in groups.values() if len(g) > 1]


@dataclass(slots=True)
class StoredFact:
    """What the checks read of a stored fact."""

    text: str
    subject: str
    scope: str | None  # user id
    turn_ids: list[str]
    category: str


@dataclass(slots=True)
class JunkTally:
    """Counts of facts failing each check, with a few examples of each."""

    facts: int = 0
    from_assistant: int = 0
    code_or_url: int = 0
    over_300: int = 0
    request_or_question: int = 0
    duplicates: int = 0
    fragments: int = 0
    family_not_said: int = 0
    unresolved_dates: int = 0
    people_with_several_subjects: int = 0
    unresolved_references: int = 0
    feelings_only: int = 0
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, check: str, text: str) -> None:
        setattr(self, check, getattr(self, check) + 1)
        kept = self.examples.setdefault(check, [])
        if len(kept) < 5:
            kept.append(text[:200])

    def figures(self) -> dict[str, object]:
        n = max(1, self.facts)
        checks = (*JUNK_CHECKS, *NEW_CHECKS)
        return {
            "facts": self.facts,
            **{c: getattr(self, c) for c in checks},
            **{f"{c}_share": round(getattr(self, c) / n, 4) for c in checks},
            "examples": self.examples,
        }


def check_facts(
    facts: Sequence[StoredFact],
    vectors: np.ndarray,
    roles: dict[str, str],
    said: dict[str, str],
    tally: JunkTally,
    speakers: Iterable[str] = (),
) -> None:
    """Add one conversation's facts (in the order they were stored) to ``tally``. ``vectors`` are
    their normalised embeddings, row by row."""
    sims = vectors @ vectors.T if len(facts) else np.zeros((0, 0))
    for i, f in enumerate(facts):
        tally.facts += 1
        if from_assistant(f.text, f.subject, f.turn_ids, roles, said):
            tally.note("from_assistant", f.text)
        if has_code(f.text) or has_url(f.text):
            tally.note("code_or_url", f.text)
        if len(f.text) > MAX_CHARS:
            tally.note("over_300", f.text)
        if is_request(f.text):
            tally.note("request_or_question", f.text)
        if is_fragment(f.text):
            tally.note("fragments", f.text)
        if family_not_said(f.text, [said.get(t, "") for t in f.turn_ids]):
            tally.note("family_not_said", f.text)
        if unresolved_date(f.text):
            tally.note("unresolved_dates", f.text)
        if unresolved_reference(f.text):
            tally.note("unresolved_references", f.text)
        if feelings_only(f.text):
            tally.note("feelings_only", f.text)
        earlier = [
            j
            for j in range(i)
            if facts[j].scope == f.scope
            and near_duplicate(
                f.text, facts[j].text, float(sims[i, j]), f.subject if f.subject == facts[j].subject else None
            )
        ]
        if earlier:
            tally.note("duplicates", f"{f.text}  ==  {facts[earlier[0]].text}")
    for group in several_subjects(((f.scope, f.subject) for f in facts if f.subject), speakers):
        tally.note("people_with_several_subjects", " / ".join(group))
