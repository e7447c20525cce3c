"""Which sentences of a person can become facts, and how long ones are cut into clauses.

A fact records something about a person, so these never become one: a question or a request
(including one put as a statement: "I need help with ...", "show me ...", an imperative), an
admission of not knowing ("I'm not sure how to ..."), words addressed to the other speaker
("you"), text in an assistant's voice pasted into a message ("here's a sample ..."), a report of
an error met just now, and anything with code or a URL. A standing instruction to the assistant
("Always include version numbers when I ask about libraries") is kept apart: it is a preference.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable

from nous.language.prose import has_code_marker

MAX_CLAUSE_CHARS = 200  # a longer sentence is cut at its coordinated first-person clauses

_LEAD = re.compile(
    r"^(?:(?:(?:so|and|but|also|plus|anyway|actually|honestly|btw|by the way|well|oh|then)\b[,.!]*|"
    r"(?:yeah|yea|yes|yep|yup|yah|ya|nope|ok|okay|hmm+|sure|right|great|cool|alright|fyi|ah+|wow|woah|whoa|omg|aw+|"
    r"o+h|yay|hey|hi|hello|haha|lol|nice|awesome|thanks|thank you|um+|uh+|gosh|geez|man|dude|now|"
    r"thanks for (?:asking|sharing|the \w+))\b[,.!]+)"
    r"\s+)+",
    re.IGNORECASE,
)
# A clause with no subject, as people write in chat ("Took a short trip to Rome"): "I" is meant.
_NO_SUBJECT = re.compile(
    r"^(?:(?:just|finally|recently|also|really|actually|then)\s+)*(?:(?:went|took|got|made|lost|saw|bought|"
    r"came|found|left|began|met|ran|spent|won|wrote|read|sent|tried|started|finished|visited|joined|"
    r"moved|adopted|painted|signed|attended|booked|picked|decided|managed|learned|learnt)\b|"
    r"\w+ed\s+(?:a|an|the|my|our|some|up|out|off|back|this|that|it|him|her|them|\d))",
    re.IGNORECASE,
)
_CONTEXT_LEAD = re.compile(
    r"^(?:remember that|note that|keep in mind that|just so you know,?|for context,?|for reference,?)\s+",
    re.IGNORECASE,
)
_WH_START = re.compile(
    r"^(?:(?:how|what|why|where|when|which|who|whom|whose)\s+(?:do|does|did|can|could|would|will|should|is|"
    r"are|am|was|were|have|has|much|many|about|if|else|kind|sort|type)\b|what's|how's|where's|who's|why's|"
    r"any (?:idea|ideas|thoughts|tips|suggestions|advice)\b|(?:do|does|did|can|could|would|will|should|shall|"
    r"is|are|am|was|were|have|has|may|might)\s+(?:i|you|we|it|there|this|that|they|he|she|my|your|the|a|an|"
    r"someone|anyone)\b)",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"\b(?:can|could|would|will)\s+(?:you|u)\b|\bplease\b|\blet me know\b|\bI\s+(?:need|want|would like|'d like|am looking for|'m looking for)"
    r"\s+(?:you\b|your\b|(?:some\s+|a little\s+|more\s+)?(?:help|assistance|advice|guidance|suggestions|"
    r"recommendations|feedback|tips|pointers|an example|examples|a sample|a template|a script|a function|"
    r"a way|a solution|a code))|\bI(?:'m| am) (?:hoping|looking) (?:for|you|to get)\b|"
    r"\b(?:any|some) (?:ideas|suggestions|tips|advice|thoughts|pointers)\b",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(
    r"^(?:help|show|tell|give|explain|write|create|implement|make|provide|suggest|recommend|review|check|"
    r"fix|add|generate|list|describe|compare|summari[sz]e|outline|draft|design|build|update|modify|refactor|"
    r"optimi[sz]e|debug|convert|translate|find|analy[sz]e|clarify|walk|guide|consider|include|use|try|"
    r"let's|let us|don't|do not|go ahead|continue|proceed|elaborate|expand|rewrite|calculate|solve|prove|"
    r"demonstrate|illustrate|break down|set up|look at|take a look|go through|share|send|confirm|verify|"
    r"remember|note|keep|ensure|assume|imagine|pretend|act as)\b",
    re.IGNORECASE,
)
_STANDING = re.compile(
    r"^(?:please\s+)?(?:always|never|from now on,?|in (?:the )?future,?|going forward,?)\s+(\w+)",
    re.IGNORECASE,
)
_UNSURE = re.compile(
    r"\b(?:not (?:sure|certain)|unsure|(?:don't|do not|didn't) (?:know|understand)|no idea|wondering|"
    r"I wonder|confused|curious (?:about|if|whether|how|what)|can't figure out|trying to figure out|"
    r"trying to understand|(?:having|have) (?:trouble|difficulty|a hard time)|struggling to|"
    r"(?:want|need|wanted|needed|would like|'d like) to (?:make sure|ensure|double-check|check|confirm|verify|"
    r"know|understand|find out|learn how|get some)|(?:need|want|needs|wants) (?:a |some )?(?:better|clearer|"
    r"deeper|more) (?:understanding|explanation|clarity)|(?:verify|check|confirm|figure out) (?:if|whether)|"
    r"(?:want|wanted|need|needed) (?:help|advice))\b",
    re.IGNORECASE,
)
# "it", "this" or "that" as the object of the clause ("I did it on Friday", "I love this."): the
# thing is named elsewhere (an earlier sentence, a photo), so the clause alone says nothing of it.
_OBJECT_PRONOUN = re.compile(
    r"\b(?!(?:is|was|be|been|are|were)\b)[a-z]+\s+(?:it|this|that)"
    r"(?=\s*(?:[.!,;]|$|(?:to|for|because|with|on|at|in|when|and|so|again|too|yet|today|now|last|"
    r"every|all|a lot|so much)\b))",
    re.IGNORECASE,
)
# A feeling and nothing it is about ("I'm so excited and thankful!"): every word is one of these.
_FEELING_WORDS = frozenset(
    [
        "i",
        "i'm",
        "im",
        "am",
        "is",
        "was",
        "we",
        "we're",
        "are",
        "were",
        "feel",
        "feels",
        "felt",
        "so",
        "really",
        "very",
        "super",
        "truly",
        "quite",
        "just",
        "and",
        "excited",
        "thankful",
        "grateful",
        "happy",
        "glad",
        "proud",
        "thrilled",
        "stoked",
        "pumped",
        "nervous",
        "anxious",
        "sad",
        "upset",
        "relieved",
        "amazed",
        "blessed",
        "lucky",
        "inspired",
        "touched",
        "overwhelmed",
        "tired",
        "ecstatic",
        "delighted",
        "hopeful",
        "optimistic",
    ]
)
# A clause whose subject is a thing it never names: "It has really helped my game", "This made my
# week", "Something exciting happened". "It's", "It is", "It was" are left (weather, time, verdicts).
_VAGUE_SUBJECT = re.compile(
    r"^(?:(?:it|this|that)\s+(?!(?:is|was|'s|seems|seemed|feels|felt)\b)|(?:something|everything|nothing)"
    r"(?:\s+(?!(?:is|was)\b)[a-z]+)?\s+)(?:(?:\w+ly|just|also|even|all|really)\s+)*(?:has|have|had|made|"
    r"makes|helped|helps|gave|gives|took|takes|brought|brings|happened|happens|changed|changes|meant|means|"
    r"got|went|turned|came|showed|shows)\b",
    re.IGNORECASE,
)
_ALL_OF = re.compile(r",?\s*\b(?:all|some|most|any) of (?:this|that|it|them)\b", re.IGNORECASE)
_NOUN_PHRASE = re.compile(
    r"\b(?:a|an|the|my|our|his|her|their|its|this|that|these|those|some|another)\s+[a-z]", re.IGNORECASE
)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|yourselves|u)\b", re.IGNORECASE)
_FILLERS = re.compile(
    r",?\s*\b(?:you know|you see|I mean|to be honest|tbh|lol|haha)\b,?|,\s*speaking of(?: which)?(?=[.!]*$)",
    re.IGNORECASE,
)
_ASSISTANT_VOICE = re.compile(
    r"\b(?:here's|here is|here are|below is|below are|the following|as follows|hope this helps|"
    r"happy to help|feel free|to get you started)\b|^(?:certainly|absolutely|of course|sure thing|"
    r"great question)\b|:\s*$",
    re.IGNORECASE,
)
_ERROR_NOW = re.compile(
    r"^I(?:'m| am| keep| still)?\s*(?:getting|seeing|hitting|encountering|running into|facing|receiving|"
    r"having|got|get|ran into)\b.*\b(?:error|exception|warning|traceback|stack trace|bug|crash|status code)",
    re.IGNORECASE,
)
_URL = re.compile(r"\bhttps?://|\bwww\.\w|\b[\w-]+\.(?:com|org|net|io|dev|app|co)/\S", re.IGNORECASE)
_INLINE_CODE = re.compile(
    r"\w\([^)]*\)|\b\w+\.\w+\(|[{}=]|->|=>|\bdef \w+\(|"
    r"\b\w+(?:Error|Exception)\b:|\$\s?[a-z_]|\\[(\[]|\$\$"
)
_SPLIT_TAIL = re.compile(
    r"(?:,\s*|\s+-\s+|\s+)(?:(?:and|but|so|or)\s+)?(?=(?:can|could|would|will)\s+(?:you|u)\b|"
    r"I(?:'m| am) not (?:sure|certain)|I(?:'m| am) (?:wondering|unsure|curious)|I wonder\b|"
    r"I (?:don't|do not) know (?:how|if|whether|what|why)|here's\b|here is\b|please\b|"
    r"any (?:ideas|suggestions|tips|thoughts)\b|how (?:can|do|should|would) I\b|what (?:should|can|do) I\b)",
    re.IGNORECASE,
)
_SPLIT_CLAUSE = re.compile(
    r"((?:,\s*|;\s*|\s+-\s+|\s+)(?:and|but|so|plus|while|although)\s+(?=(?:I|I'm|I've|I'd|I'll|my|we|"
    r"we're|we've|our)\b)|;\s+(?=\w)|\s+[-–—]+\s+|,\s+(?=I(?:'ve|'m|'d|'ll)?\s))"
)


def strip_openers(text: str, names: Iterable[str] = ()) -> str:
    """Without leading discourse markers ("so", "well", "oh", "btw"), context leads ("note that"),
    and the other speaker's name said to them ("Thanks, Jon"); a clause with no subject gets its
    "I" back ("Took a trip to Rome" -> "I took a trip to Rome")."""
    text = _CONTEXT_LEAD.sub("", _LEAD.sub("", text.strip()))
    for name in names:
        text = re.sub(rf"^{re.escape(name)},\s+|,?\s+{re.escape(name)}(?=[.!?]*$)", "", text)
    text = _LEAD.sub("", text)
    if text.lower().startswith("been "):
        text = "I've b" + text[1:]
    elif _NO_SUBJECT.match(text):
        text = "I " + text[:1].lower() + text[1:]
    return text[:1].upper() + text[1:] if text else text


def clauses(sentence: str, keep: Callable[[str], bool] = lambda _: True) -> list[str]:
    """``sentence`` cut before a request, a question or an admission of not knowing ("..., can you
    help me ..."), and at its coordinated first-person clauses ("..., and I've also ..."); the
    clauses ``keep`` rejects are left out. The kept clauses of one part are joined again as they
    were written when the part is short, so "I tried X, but it did not help" stays whole."""
    out: list[str] = []
    for part in _SPLIT_TAIL.split(sentence):
        pieces = _SPLIT_CLAUSE.split(part)  # clause, separator, clause, ...
        texts = [p.strip(" ,;-") for p in pieces[::2]]
        kept = [i for i, t in enumerate(texts) if t and keep(t)]
        if not kept:
            continue
        if len(part) > MAX_CLAUSE_CHARS:
            out += [texts[i] for i in kept]
            continue
        joined = texts[kept[0]]
        for a, b in itertools.pairwise(kept):
            joined += (pieces[2 * b - 1] if b == a + 1 else ", and ") + texts[b]
        out.append(joined)
    return out


def standing_instruction(text: str) -> bool:
    """An instruction meant to last ("Always include ...", "Never schedule ..."), not a one-off."""
    match = _STANDING.match(text.strip())
    return bool(match) and not _SECOND_PERSON.search(text) and not text.rstrip().endswith("?")


def rejection(text: str, *, to_assistant: bool = False) -> str | None:
    """Why ``text`` (a clause of a person's message, openers stripped) cannot be a fact, or None.
    ``to_assistant``: the person talks to an assistant, so a standing instruction is kept."""
    body = _FILLERS.sub("", text).strip()
    if not body:
        return "empty"
    if body.endswith("?") or _WH_START.match(body):
        return "question"
    if has_code_marker(body) or _INLINE_CODE.search(body):
        return "code"
    if _URL.search(body):
        return "url"
    if to_assistant and standing_instruction(body):
        return None
    if _REQUEST.search(body) or _IMPERATIVE.match(body):
        return "request"
    if _UNSURE.search(body):
        return "unsure"
    if _ASSISTANT_VOICE.search(body):
        return "assistant voice"
    if _SECOND_PERSON.search(body):
        return "addressed to the other speaker"
    if _ERROR_NOW.match(body):
        return "error report"
    words = re.findall(r"[a-z']+", body.lower())
    if words and all(w in _FEELING_WORDS for w in words):
        return "a feeling about nothing named"
    if _VAGUE_SUBJECT.match(body):
        return "names not what it speaks of"
    listed = _ALL_OF.sub("", body)  # "lots of books, all of that": the list is what it means
    pronoun = _OBJECT_PRONOUN.search(listed)
    if pronoun and not _NOUN_PHRASE.search(listed[: pronoun.start() + len(pronoun.group(0).split()[0])]):
        return "names not what it speaks of"
    return None


def without_fillers(text: str) -> str:
    return " ".join(_FILLERS.sub("", text).split())
