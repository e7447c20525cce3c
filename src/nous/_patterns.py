"""Matching a censor's trigger pattern against text, bounded in time (shared by the censor check
and by recall, which ranks a censor whose pattern fires on the question)."""

from __future__ import annotations

import functools

import regex

# Each match gets at most this many seconds: a pattern that backtracks on padded input gives up
# instead of stalling the caller.
PATTERN_TIMEOUT = 0.25

FLAGS = regex.IGNORECASE | regex.V0


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> regex.Pattern[str]:
    return regex.compile(pattern, FLAGS)


def pattern_matches(pattern: str, text: str, *, timeout: float = PATTERN_TIMEOUT) -> bool | None:
    """Whether ``pattern`` matches ``text`` (case-insensitive); None if it ran out of time.

    A pattern stored before validation that does not compile is taken as literal text.
    """
    try:
        compiled = compile_pattern(pattern)
    except (regex.error, RecursionError, OverflowError):
        return pattern.lower() in text.lower()
    try:
        # concurrent: the GIL is released while matching, so a slow pattern in a worker thread
        # does not stall the event loop's thread.
        return compiled.search(text, timeout=timeout, concurrent=True) is not None
    except TimeoutError:
        return None
