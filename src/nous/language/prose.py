"""The prose of a chat message: what a person wrote in sentences, without what they pasted.

Removed: fenced code blocks (an unclosed fence runs to the end of the message), indented code,
lines that read as code, stack traces or shell commands, markdown tables, headings and rules.
Markdown emphasis and list markers are dropped, and inline code keeps its text when it is a
plain name (`gevent`, `.env`). Used for facts and summaries alike: a pasted function is not
something anyone said.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~)")
_INDENTED = re.compile(r"^(?: {4,}|\t)\S")
_CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import |return\b|if __name__|@\w|#include|public |private |"
    r"const |let |var |function\b|async |await |SELECT |INSERT |UPDATE |CREATE |ALTER |DROP |"
    r"[{}\[\]()]+;?\s*$|//|/\*|\*/|<\/?[a-zA-Z][^>]*>\s*$)"
    r"|[;{}]\s*$|^\s*[\w.\[\]'\"]+\s*(?:=|\+=|-=|:=)\s*\S|\w\([^)]*\)\s*[:;{]?\s*$"
)
_TRACE = re.compile(
    r"^\s*(?:Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|at [\w.$<>]+\(|"
    r"[\w.]*(?:Error|Exception|Warning)(?::|$)|raise \w+|\^+\s*$)"
)
_SHELL = re.compile(
    r"^\s*(?:\$|>>>|#\s|C:\\|PS>)\s*|^\s*(?:pip3?|npm|npx|yarn|apt(?:-get)?|brew|sudo|docker|kubectl|git|"
    r"curl|wget|python3?|node|cd|ls|mkdir|export|chmod|poetry|cargo)\s+[-\w./]"
)
_TABLE = re.compile(r"^\s*\|.*\|\s*$|^\s*[-|: ]{3,}\s*$")
_HEADING = re.compile(r"^\s*#{1,6}\s|^\s*[-*_]{3,}\s*$")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_EMPHASIS = re.compile(r"(?<!\w)(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1(?!\w)")
_INLINE_CODE = re.compile(r"`([^`]*)`")
_MATH = re.compile(r"\\\(.*?\\\)|\\\[.*?\\\]|\$\$.*?\$\$|\\[a-z]+\{")
_PLAIN_NAME = re.compile(r"^[\w.@/-]{1,40}$")
_SENTENCE = re.compile(
    r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\b(?:Mr|Dr|Ms|St|vs)\.)(?<!Mrs\.)(?<!e\.g\.)(?<!i\.e\.)\s+(?=[A-Z\"'(`])"
)


def prose_lines(text: str) -> list[str]:
    """The lines of ``text`` that are prose (blank lines kept as paragraph breaks)."""
    out: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            out.append("")
            continue
        if fenced or (_INDENTED.match(line) and not _LIST_MARKER.match(line)):
            continue
        if any(p.search(line) for p in (_CODE_LINE, _TRACE, _SHELL, _TABLE, _HEADING)):
            out.append("")
            continue
        out.append(_LIST_MARKER.sub("", line))
    return out


def _inline(match: re.Match[str]) -> str:
    """Inline code: its text when it is a plain name, else a marker the screen rejects."""
    body = match.group(1).strip()
    return body if _PLAIN_NAME.match(body) else "\u2039code\u203a"


def clean(text: str) -> str:
    """A prose line without markdown emphasis, with inline code resolved and formulas marked."""
    text = _MATH.sub("\u2039code\u203a", _INLINE_CODE.sub(_inline, text))
    return _EMPHASIS.sub(r"\2", text)


def paragraphs(text: str) -> list[str]:
    """The prose paragraphs of a message, each on one line."""
    out: list[str] = []
    current: list[str] = []
    for line in [*prose_lines(text), ""]:
        if line.strip():
            current.append(line.strip())
            continue
        if current:
            out.append(clean(" ".join(current)))
            current = []
    return out


def prose_sentences(text: str) -> list[str]:
    """The sentences of a message's prose, in order."""
    return [s.strip() for p in paragraphs(text) for s in _SENTENCE.split(p) if s.strip()]


def has_code_marker(text: str) -> bool:
    return "\u2039code\u203a" in text
