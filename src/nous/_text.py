"""Text helpers shared across layers: hashing, validation and keyword terms."""

from __future__ import annotations

import hashlib
import re

from nous.errors import InvalidInputError

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_WORD = re.compile(r"[\w][\w'\-]*", re.UNICODE)
_POSSESSIVE = re.compile(r"'s$")

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren't",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "can't",
        "cannot",
        "could",
        "couldn't",
        "did",
        "didn't",
        "do",
        "does",
        "doesn't",
        "doing",
        "don't",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "hadn't",
        "has",
        "hasn't",
        "have",
        "haven't",
        "having",
        "he",
        "he'd",
        "he'll",
        "he's",
        "her",
        "here",
        "here's",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "how's",
        "i",
        "i'd",
        "i'll",
        "i'm",
        "i've",
        "if",
        "in",
        "into",
        "is",
        "isn't",
        "it",
        "it's",
        "its",
        "itself",
        "let's",
        "me",
        "more",
        "most",
        "mustn't",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "shan't",
        "she",
        "she'd",
        "she'll",
        "she's",
        "should",
        "shouldn't",
        "so",
        "some",
        "such",
        "than",
        "that",
        "that's",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "there's",
        "these",
        "they",
        "they'd",
        "they'll",
        "they're",
        "they've",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "wasn't",
        "we",
        "we'd",
        "we'll",
        "we're",
        "we've",
        "were",
        "weren't",
        "what",
        "what's",
        "when",
        "when's",
        "where",
        "where's",
        "which",
        "while",
        "who",
        "who's",
        "whom",
        "why",
        "why's",
        "will",
        "with",
        "won't",
        "would",
        "wouldn't",
        "you",
        "you'd",
        "you'll",
        "you're",
        "you've",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "did",
        "does",
        "also",
        "just",
        "get",
        "got",
    ]
)


def text_hash(text: str) -> str:
    """SHA-256 of the UTF-8 text: the key of cached and stored embeddings."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def keyword_terms(text: str, *, limit: int = 32) -> list[str]:
    """Lower-cased content words of a query, stop words removed, in order, unique.

    A possessive is its noun ("Dana's" -> "dana"): the index holds "Dana's" as "dana" + "s", so
    the quoted phrase would match only the memories where the name is possessive too.
    """
    words = [_POSSESSIVE.sub("", w.strip("'-").lower()) for w in _WORD.findall(text.replace("\u2019", "'"))]
    terms = [w for w in words if w and w not in STOP_WORDS and len(w) > 1]
    return list(dict.fromkeys(terms))[:limit]


def validate_content(text: object, *, field: str = "content", max_bytes: int = 100_000) -> str:
    """Return the text stripped of surrounding whitespace, or raise InvalidInputError.

    Rejects non-strings, empty or whitespace-only text, text over ``max_bytes`` in
    UTF-8, text that is not valid Unicode (lone surrogates from undecodable bytes)
    and control characters other than tab, newline and carriage return.
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"{field} must be a string, not {type(text).__name__}", field=field)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{field} is not valid UTF-8 text", field=field) from exc
    if size > max_bytes:
        raise InvalidInputError(f"{field} is {size} bytes; the limit is {max_bytes}", field=field)
    bad = _CONTROL.search(text)
    if bad:
        raise InvalidInputError(f"{field} contains control character U+{ord(bad.group()):04X}", field=field)
    stripped = text.strip()
    if not stripped:
        raise InvalidInputError(f"{field} is empty", field=field)
    return stripped


# Regex syntax that is not words: escapes (\b, \s+, \w*, \S+, \d), groups and flags, classes,
# quantifiers and alternation.
_REGEX_SYNTAX = re.compile(r"\\[A-Za-z]|\(\?[^)]*?[:)]|\[[^\]]*\]|\{\d*,?\d*\}|[\\()|?*+.^$]")


def pattern_words(pattern: str) -> str:
    """The words a regular expression spells out, for searching it by meaning and keywords:
    ``(?i)force[- ]?push\\w*\\b.*\\b(?:main|master)`` -> ``force push main master``."""
    words = re.findall(r"[A-Za-z][A-Za-z'\-]+", _REGEX_SYNTAX.sub(" ", pattern))
    return " ".join(dict.fromkeys(w.strip("'-") for w in words if len(w.strip("'-")) > 1))
