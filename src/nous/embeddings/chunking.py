"""Splitting long memories into chunks that an embedding model reads whole.

all-MiniLM-L6-v2 reads only its first 256 word pieces (254 after [CLS] and [SEP]); the rest of a
longer text is silently dropped, so a long message would be embedded by its opening lines alone.
A memory whose embedded text is longer than the provider's ``max_input_chars`` is split here into
chunks at paragraph, line or sentence boundaries (in that order of preference), each of at most
that many characters, the next one starting with the previous one's last sentence when it is
short (a little overlap, so a statement cut by a boundary is still whole somewhere). Chunks beyond
MAX_CHUNKS are dropped: the model would have dropped even more.

CHUNK_CHARS = 700 was measured with the model's own tokenizer on the assistant replies of
``shared/datasets/beam`` (technical chats with code, ~3.45 characters per word piece; English
prose is ~4.3): windows of 700 characters hold 205 word pieces at the median and 267 at p90, and
86% fit in the model's 254; at 1000 characters only 22% fit (median 294), so the last quarter of
most chunks would be read by nobody. Smaller chunks cost little more to embed (the encoder's cost
is per word piece, and attention at these lengths is a small share of it) but store more vectors.
"""

from __future__ import annotations

import re

CHUNK_CHARS = 700
MAX_CHUNKS = 16
OVERLAP_SHARE = 5  # a last sentence up to 1/5 of the chunk size is repeated at the next chunk's start

# Break strengths after a unit of text: the packer prefers the strongest break it can use.
_PARAGRAPH, _LINE, _SENTENCE, _WORD = 3, 2, 1, 0
_PARAGRAPHS = re.compile(r"\n[ \t]*\n\s*")
_LINES = re.compile(r"\n\s*")
_SENTENCES = re.compile(r"(?<=[.!?;:])\s+")
_WORDS = re.compile(r"\s+")
_SEPARATOR_TEXT = {_PARAGRAPH: "\n\n", _LINE: "\n", _SENTENCE: " ", _WORD: " "}
_SEPARATOR = {strength: len(sep) for strength, sep in _SEPARATOR_TEXT.items()}


def _units(text: str, max_chars: int) -> list[tuple[str, int]]:
    """``text`` as (unit, strength of the break after it); no unit is longer than ``max_chars``."""
    out: list[tuple[str, int]] = []
    for paragraph in _nonempty(_PARAGRAPHS.split(text)):
        for line in _nonempty(_LINES.split(paragraph)):
            for sentence in _nonempty(_SENTENCES.split(line)):
                if len(sentence) <= max_chars:
                    out.append((sentence, _SENTENCE))
                    continue
                for word in _nonempty(_WORDS.split(sentence)):
                    for start in range(0, len(word), max_chars):  # a word longer than a chunk: hard cut
                        out.append((word[start : start + max_chars], _WORD))
            out[-1] = (out[-1][0], _LINE)
        out[-1] = (out[-1][0], _PARAGRAPH)
    return out


def _nonempty(parts: list[str]) -> list[str]:
    return [p.strip() for p in parts if p.strip()]


def _join(units: list[tuple[str, int]]) -> str:
    """Units back into text, each followed by the separator its break stands for."""
    return "".join(unit + _SEPARATOR_TEXT[strength] for unit, strength in units).rstrip()


def split_text(text: str, max_chars: int = CHUNK_CHARS, max_chunks: int = MAX_CHUNKS) -> list[str]:
    """``[text]`` if it fits in ``max_chars``; otherwise its chunks, in order, at most ``max_chunks``."""
    if len(text) <= max_chars or max_chunks <= 1:
        return [text]
    units = _units(text, max_chars)
    chunks: list[str] = []
    start = 0
    while start < len(units) and len(chunks) < max_chunks:
        end, size = start, 0
        while end < len(units) and size + len(units[end][0]) <= max_chars:
            size += len(units[end][0]) + _SEPARATOR[units[end][1]]
            end += 1
        if end == len(units):
            chunks.append(_join(units[start:end]))
            break
        cut = _best_cut(units, start, end, max_chars)
        chunks.append(_join(units[start:cut]))
        last, (unit, strength) = cut - 1, units[cut - 1]
        overlap = strength in (_LINE, _SENTENCE) and len(unit) <= max_chars // OVERLAP_SHARE
        start = last if overlap and last > start else cut
    return chunks


def _best_cut(units: list[tuple[str, int]], start: int, end: int, max_chars: int) -> int:
    """Where to end a chunk that could hold ``units[start:end]``: after the strongest break that
    still leaves it at least half full, the latest such break of that strength (else at ``end``)."""
    latest: dict[int, int] = {}  # break strength -> end of the latest unit with at least that break
    filled = 0
    for j in range(start, end):
        filled += len(units[j][0]) + 1
        if filled >= max_chars // 2:
            for level in range(units[j][1] + 1):
                latest[level] = j + 1
    for level in (_PARAGRAPH, _LINE, _SENTENCE):
        if level in latest:
            return latest[level]
    return end
