"""What a conversation is about: its key phrases, most telling first.

A phrase is a run of up to three words that are neither function words, chat filler nor common
verbs ("password hashing", "support group", "Gunicorn"), counted over the prose of every message
(pasted code is no topic); a person's words count twice an assistant's, and a phrase of two or
three words counts more than a single word said as often. Each phrase is shown in its most
frequent spelling ("PostgreSQL", "support group").
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable
from datetime import datetime

import snowballstemmer

from nous.language.lexicon import CALENDAR, GENERIC, STOP_WORDS
from nous.language.prose import prose_sentences

MAX_WORDS = 3
TITLE_CHARS = 120
OPENING_WEIGHT = 2.0  # the first message of a person counts this much for the topic
LONGER_BONUS = 1.0  # each word beyond the first adds this share to a phrase's count
SINGLE_WORD = 0.6  # a single word ("error", "API") tells less than a phrase
_DETERMINERS = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "your",
        "our",
        "their",
        "his",
        "her",
        "its",
        "this",
        "that",
        "these",
        "those",
        "some",
        "any",
    ]
)
_PARTICIPLE = re.compile(r"^[a-z]+(?<!e)ed$", re.IGNORECASE)
_OBJECTS = frozenset(["me", "us", "him", "them", "you", "it"])  # "music *brings* me joy"
_PARTICLES = frozenset(["out", "up"])  # "*figure* out the biz", "*set* up the repo": a phrasal verb
_AFTER_A_VERB = _DETERMINERS | _OBJECTS | _PARTICLES  # a word before one of these is likely a verb
# A word the conversation itself uses as a verb ("why did we *pick* Postgres", "I'll *call* the
# vet") more often than as a noun ("the call") is an action, not a topic: no POS tagger needed.
_VERB_CUES = frozenset(
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
        "must",
        "'ll",
        "i'll",
        "we'll",
        "let's",
        "please",
        "did",
        "didn't",
        "do",
        "don't",
    ]
)
_WANTING = frozenset(
    [
        "need",
        "needs",
        "needed",
        "want",
        "wants",
        "wanted",
        "have",
        "has",
        "had",
        "going",
        "like",
        "love",
        "hate",
        "able",
        "try",
        "trying",
        "tried",
        "plan",
        "plans",
        "planning",
        "planned",
        "hope",
        "hoping",
        "decided",
        "going",
        "gonna",
        "trying",
    ]
)
# "my partner Kim", "his sister Ana": a person named by their relation is a person, not a topic.
_RELATIONS = frozenset(
    [
        "partner",
        "wife",
        "husband",
        "boyfriend",
        "girlfriend",
        "fiance",
        "fiancee",
        "son",
        "daughter",
        "mom",
        "mum",
        "mother",
        "dad",
        "father",
        "sister",
        "brother",
        "friend",
        "cousin",
        "aunt",
        "uncle",
        "boss",
        "colleague",
        "coworker",
        "neighbor",
        "neighbour",
        "grandma",
        "grandpa",
        "grandmother",
        "grandfather",
        "kid",
        "kids",
        "dog",
        "cat",
    ]
)
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9+#'.-]*[A-Za-z0-9+#]|[A-Za-z]|[^\sA-Za-z]+")  # "Render.com" is one


def _is_word(token: str, skip: frozenset[str] | set[str]) -> bool:
    low = token.lower()
    return (
        token[0].isalpha()
        and (len(low) > 2 or (len(token) == 2 and token.isupper()))  # "CI", "UI", "DB" are topics
        and "'" not in low  # "I'm", "can't", "Jon's"
        and not low.endswith("ly")  # adverbs: "finally", "really"
        and low not in STOP_WORDS
        and low not in GENERIC
        and not (low in CALENDAR and (token[0].isupper() or low != "march"))  # a date; "a march" is a topic
        and low not in skip
    )


def _noun_phrase(run: list[str], after: str) -> list[str]:
    """A run of content words without what is likely a verb: a last word before a determiner, an
    object pronoun or a verb particle ("migration *eats* my week", "music *brings* me joy", "gotta
    *figure* out") and participles at either end ("offsite *sorted*")."""
    if run and after.lower() in _AFTER_A_VERB:
        run = run[:-1]
    while run and _PARTICIPLE.search(run[-1]):
        run = run[:-1]
    while run and _PARTICIPLE.search(run[0]):
        run = run[1:]
    return run


def verbs_of(texts: Iterable[str]) -> set[str]:
    """The lowercase words ``texts`` use after a verb cue more often than after a noun cue."""
    verb: Counter[str] = Counter()
    noun: Counter[str] = Counter()
    for text in texts:
        tokens = re.findall(r"[A-Za-z]+(?:'[a-z]+)?", text)
        for i, (before, word) in enumerate(itertools.pairwise(tokens)):
            if word[0].isupper():
                continue
            low = before.lower()
            # "need to call", "want to order": "to" after a verb of wanting or planning
            wanting = low == "to" and i > 0 and tokens[i - 1].lower() in _WANTING
            verb[word] += low in _VERB_CUES or wanting
            noun[word] += low in _DETERMINERS  # a determiner before it: a noun
    return {w for w, n in verb.items() if n > noun[w]}


_NAMED = re.compile(r"\b(\w+)\s+([A-Z][a-z]+)\b")


def _person(run: list[str]) -> bool:
    """ "Partner Kim": a relation word before a capitalised name."""
    return len(run) >= 2 and run[0].lower() in _RELATIONS and all(w[:1].isupper() for w in run[1:])


_STEMMER = snowballstemmer.stemmer("english")


def _overlap(a: str, b: str) -> bool:
    """Phrases with a word in common, however inflected ("budget tracker", "personal budget";
    "dance", "dancing")."""
    return bool(set(_STEMMER.stemWords(a.lower().split())) & set(_STEMMER.stemWords(b.lower().split())))


def _incidental(key: str, counts: dict[str, float]) -> bool:
    """A three-word phrase whose last or first word adds nothing: one of its two-word parts is
    said exactly as often ("Lisbon offsite sorted" / "Lisbon offsite")."""
    words = key.split()
    if len(words) < MAX_WORDS:
        return False
    return any(counts.get(" ".join(part), 0.0) == counts[key] for part in (words[1:], words[:-1]))


def key_phrases(
    texts: Iterable[tuple[str, float]], *, names: Iterable[str] = (), limit: int = 5, once: bool = True
) -> list[str]:
    """The ``limit`` most telling phrases of ``texts`` (prose, weight), best first, none inside
    another. ``once``: the first may be a phrase said once (a title needs something); without it
    every phrase was said at least twice."""
    texts = list(texts)
    verbs = verbs_of(t for t, _ in texts)
    skip = {w.lower() for n in names for w in n.split()} | {"user", "assistant", "must", "others"} | verbs
    nicknames = {w[:k] for w in skip if len(w) > 4 for k in range(3, len(w))}  # "Mel" for Melanie
    skip |= {w for t, _ in texts for w in re.findall(r"\b[A-Z][a-z]+\b", t) if w.lower() in nicknames}
    # a person named by their relation ("my partner Kim") is a person, not a topic
    named = [(r, n) for t, _ in texts for r, n in _NAMED.findall(t) if r.lower() in _RELATIONS]
    skip |= {n for _, n in named} | {r for r, _ in named}
    skip = {w.lower() for w in skip}
    counts: dict[str, float] = {}
    spellings: dict[str, Counter[str]] = {}
    is_word: dict[str, bool] = {}  # per token: a long text says the same words many times
    for text, weight in texts:
        run: list[str] = []
        seen: set[str] = set()  # a phrase counts once per text
        for token in [*_TOKEN.findall(text), "."]:
            word = is_word.get(token)
            if word is None:
                word = is_word[token] = _is_word(token, skip)
            if not run:
                if word:
                    run.append(token)
                continue  # no run ends here
            # a participle inside a run ends it: "a location *called* Whispering Falls"
            if word and not (token.islower() and _PARTICIPLE.search(token) is not None):
                run.append(token)
                continue
            run = _noun_phrase(run, token)
            for n in range(1, MAX_WORDS + 1):
                for i in range(len(run) - n + 1):
                    if _person(run[i : i + n]):
                        continue
                    surface = " ".join(run[i : i + n])
                    key = surface.lower()
                    said = spellings.get(key)
                    if said is None:
                        said = spellings[key] = Counter()
                    said[surface] += 1
                    if key not in seen:
                        seen.add(key)
                        counts[key] = counts.get(key, 0.0) + weight
            run = []

    def rank(key: str) -> float:
        words = key.count(" ") + 1
        return counts[key] * (1 + LONGER_BONUS * (words - 1)) * (1.0 if words > 1 else SINGLE_WORD)

    ranked = sorted(counts.items(), key=lambda kv: (-rank(kv[0]), kv[0]))
    out: list[str] = []
    for key, score in ranked:
        if (out or not once) and (score < 2 or spellings[key].total() < 2):
            continue  # besides the first, a phrase said once is no topic
        if any(_overlap(key, kept.lower()) for kept in out) or _incidental(key, counts):
            continue
        surface, times = spellings[key].most_common(1)[0]
        out.append(surface if times * 2 > spellings[key].total() else key)  # "Flask", "PostgreSQL"
        if len(out) == limit:
            break
    return out


def conversation_phrases(
    prose: list[tuple[str, list[str]]], *, people: Iterable[str], names: Iterable[str] = (), limit: int = 5
) -> list[str]:
    """The key phrases of a conversation given as (speaker, prose sentences) in order: the
    people's words make the topic (their opening message, which usually states it, counts
    double); with nothing telling in them, everyone's words."""
    people, names = set(people), list(names)
    opening = next((i for i, (speaker, _) in enumerate(prose) if speaker in people), -1)
    said = [
        (s, OPENING_WEIGHT if i == opening else 1.0)
        for i, (speaker, sentences) in enumerate(prose)
        if speaker in people
        for s in sentences
    ]
    return key_phrases(said, names=names, limit=limit) or key_phrases(
        [(s, 1.0) for _, sentences in prose for s in sentences], names=names, limit=limit
    )


def conversation_title(messages: Iterable[tuple[str, str]], *, people: Iterable[str]) -> str | None:
    """A title naming what the conversation is about ("Dance studio: customers and natural
    light"), from (speaker, text) messages in order; None when nothing in it is telling."""
    messages = list(messages)
    people = set(people)
    prose = [(speaker, prose_sentences(clean_message(text))) for speaker, text in messages]
    phrases = conversation_phrases(prose, people=people, names=people | {s for s, _ in messages})
    return title_of(phrases) if phrases else None


def clean_message(text: str) -> str:
    """A message without bracketed annotations ("[shares a photo of ...]": not the speaker's words)."""
    return re.sub(r"\s*\[[^\]\n]*\](?!\()", "", text).strip()


_MODALS = frozenset(["can", "cannot", "could", "may", "might", "must", "shall", "should", "will", "would"])


def without_edge_verbs(phrase: str) -> str:
    """``phrase`` without verbs or modals at its ends: "adopt incremental typechecking" ->
    "incremental typechecking", "production happen" -> "production", "Jonas cannot" -> "Jonas".
    A word counts as a verb when the lexicon knows it only as one; a first word in -ing ("hiking
    trip") and a last word in -s ("partial writes") are kept: nouns there, more often than not."""
    from lemminflect import getAllLemmas

    def verb_only(word: str) -> bool:
        low = word.lower()
        return low in _MODALS or set(getAllLemmas(low)) == {"VERB"}

    words = phrase.split()
    while words and not words[0].lower().endswith("ing") and verb_only(words[0]):
        words.pop(0)
    while len(words) > 1 and not words[-1].lower().endswith("s") and verb_only(words[-1]):
        words.pop()
    return " ".join(words)


def names_a_thing(phrase: str) -> bool:
    """Whether ``phrase`` has a word that can name a thing: one the lexicon knows as a noun, a
    word in -ing ("gaming", "hiking": a topic more often than not), or one it does not know at all
    (a name, a product, a coinage). "Gorgeous", "anytime" and "comfy" name nothing a thread is
    about."""
    from lemminflect import getAllLemmas

    def noun_or_unknown(word: str) -> bool:
        kinds = getAllLemmas(word.lower())
        return not kinds or "NOUN" in kinds or "PROPN" in kinds or word.lower().endswith("ing")

    return any(noun_or_unknown(w) for w in re.findall(r"[A-Za-z][\w'-]*", phrase))


def title_of(phrases: list[str], at: datetime | None = None) -> str:
    """The title from the key phrases: "Budget tracker: password hashing and user authentication"."""
    if not phrases:
        return f"Conversation on {at.day} {at:%B %Y}" if at else "Conversation"
    head = phrases[0][:1].upper() + phrases[0][1:]
    if len(phrases) == 1:
        return head[:TITLE_CHARS]
    if len(phrases) == 2:
        return f"{head} and {phrases[1]}"[:TITLE_CHARS]
    return f"{head}: {phrases[1]} and {phrases[2]}"[:TITLE_CHARS]
