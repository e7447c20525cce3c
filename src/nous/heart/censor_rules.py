"""How a censor judges an action: pattern validation, time-bounded matching, semantic threshold.

A censor fires on an action text when its trigger pattern matches (a case-insensitive regular
expression) or, failing that, when the action means nearly the same as the censor
(``SEMANTIC_THRESHOLD``). The strongest action among the censors that fire decides:
``warn`` lets the action go ahead with a warning, ``block`` stops it unless the caller overrides,
``absolute`` stops it always (it is reported as ``block`` and no override lifts it).
"""

from __future__ import annotations

import asyncio
import importlib
import math
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from typing import Any, Literal

import numpy as np
import regex
from pydantic import BaseModel, Field

from nous._patterns import PATTERN_TIMEOUT, compile_pattern, pattern_matches
from nous._text import pattern_words
from nous.errors import InvalidInputError
from nous.heart.censor_operations import operation_differs
from nous.memory import MemoryRepository
from nous.models import Censor, CensorAction

# The stdlib's own regex parser: the only full reading of Python regex syntax there is. Imported
# by name (a private module: whether type checkers know it depends on what else is checked).
_sre: Any = importlib.import_module("re._parser")

# Cosine (all-MiniLM-L6-v2) between an action text and a censor's meaning at or above which the
# censor fires although its pattern does not match. A censor's meaning is read three ways, and the
# closest one counts: its reason as written ("never drop tables in the production database"), the
# words its pattern spells out ("DROP TABLE"), and the two joined ("DROP TABLE: never drop …"). An action that uses the word the pattern starts
# with (its command: `rm`, `kubectl`, `deploy`) is left to the pattern (``same_command``), and so
# is one whose main verbs cannot do what the censor forbids (``operation_differs``: "check the
# uptime of the build server" against a censor on shutting it down).
# Chosen by the sweep `nous bench censors --sweep` prints over tests/data/censor_actions.jsonl
# (104 labelled actions, 12 censors), before the operation rule: at 0.425 block precision 0.96 and
# recall 0.86, warn 0.94 and 0.80; 0.40 let two more harmless actions through as blocks, 0.45
# missed one more. With the rule, 0.425 gives block precision 1.00 at the same recall. The three
# held-out files are reported beside it; see docs/censors.md. A topic embedding cannot tell "make
# the bucket public" from "keep it private": the semantic check is a net under the pattern, not a
# replacement for it.
SEMANTIC_THRESHOLD = 0.425

# Regex time bounds. Each pattern gets PATTERN_TIMEOUT seconds; one check spends at most
# PATTERN_BUDGET seconds on all its patterns, after which each remaining pattern gets
# MIN_PATTERN_TIMEOUT. A pattern that runs out of time counts as matched (fail closed): padding
# an action until its censor's regex gives up must not slip the action through.
PATTERN_BUDGET = 1.0
MIN_PATTERN_TIMEOUT = 0.01

# Patterns are matched in these threads, never on the event loop (the regex module releases the
# GIL while it matches): a slow pattern delays its own check, not every other request. Half the
# cores, so the event loop keeps one.
_MATCHERS = max(1, (os.cpu_count() or 2) // 2)
_executor: ThreadPoolExecutor | None = None

# How many alternations whose alternatives can match the same text (``(a|a)``, ``(a|aa)``) a
# pattern may have in a row: each can double the ways a failing match is retried, so 2**4 = 16 at
# most. One inside an unbounded repeat (``(a|aa)+``) is refused outright.
MAX_OVERLAPPING_ALTERNATIONS = 4

# The semantic check reads this many windows of this many characters from the start of a long
# action text (the model reads ~700 characters of a text anyway); patterns read all of it.
SEMANTIC_WINDOW_CHARS = 1000
SEMANTIC_MAX_WINDOWS = 4


class ActionDecision(StrEnum):
    """What the caller should do with the action."""

    ALLOW = "allow"
    WARN = "warn"
    BLOCK = "block"


class CensorMatch(BaseModel):
    """A censor that fired on an action, and the action in force after escalation."""

    censor: Censor
    action: CensorAction = Field(description="The censor's action in force (after any escalation).")
    escalated: bool = Field(default=False, description="This activation escalated warn to block.")
    how: Literal["pattern", "semantic"] = "pattern"
    similarity: float | None = Field(default=None, description="Cosine to the censor, when computed.")
    reason: str = ""
    timed_out: bool = Field(default=False, description="The pattern ran out of time (fail closed).")


class ActionCheck(BaseModel):
    """The verdict on an action: ``decision``, the censors that fired and why."""

    decision: ActionDecision
    matches: list[CensorMatch] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    overridden: bool = Field(default=False, description="An override turned a block into a warning.")
    warnings: list[str] = Field(default_factory=list)


# -- patterns ------------------------------------------------------------------------------------
_BACKTRACKING_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT}


def _nested_quantifier(items: object, in_repeat: bool) -> bool:
    """True if a quantifier that can repeat a varying number of times sits inside a repeated one
    (``(a+)+``, ``(a*)*``, ``(.*)*``, ``(x{1,5})+``): its backtracking can take exponential time.

    ``?`` inside a repeat is allowed. Atomic groups and possessive quantifiers never backtrack,
    so nesting through them is safe.
    """
    for op, av in items:  # type: ignore[attr-defined]
        if op in _BACKTRACKING_REPEATS:
            lo, hi, sub = av
            if in_repeat and hi > 1 and hi != lo:
                return True
            if _nested_quantifier(sub, in_repeat or hi > 1):
                return True
        elif op == _sre.POSSESSIVE_REPEAT:
            if _nested_quantifier(av[2], False):
                return True
        elif op == _sre.ATOMIC_GROUP:
            if _nested_quantifier(av, False):
                return True
        elif op == _sre.SUBPATTERN:
            if _nested_quantifier(av[-1], in_repeat):
                return True
        elif op == _sre.BRANCH:
            if any(_nested_quantifier(branch, in_repeat) for branch in av[1]):
                return True
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            if _nested_quantifier(av[1], in_repeat):
                return True
        elif op == _sre.GROUPREF_EXISTS and any(
            b is not None and _nested_quantifier(b, in_repeat) for b in av[1:]
        ):
            return True
    return False


_ZERO_WIDTH = {_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT}
_ANY_CHAR = {_sre.ANY, _sre.NOT_LITERAL, _sre.CATEGORY}
_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT}


def _first_chars(items: object) -> tuple[frozenset[str] | None, bool]:
    """The characters a match of ``items`` can start with (lowercased; None for any character),
    and whether it can match empty text. Errs towards None: it only decides what to refuse."""
    chars: set[str] = set()
    for op, av in items:  # type: ignore[attr-defined]
        if op in _ZERO_WIDTH:
            continue
        if op == _sre.LITERAL:
            chars.add(chr(av).lower())
            return frozenset(chars), False
        if op in _ANY_CHAR:
            return None, False
        if op == _sre.IN:
            found = _class_chars(av)
            return (None if found is None else frozenset(chars | found)), False
        alternatives = _parts(op, av)
        if alternatives is not None:
            nullable = op in _REPEATS and av[0] == 0
            for alternative in alternatives:
                first, empty = _first_chars(alternative)
                if first is None:
                    return None, False
                chars |= first
                nullable = nullable or empty
            if not nullable:
                return frozenset(chars), False
            continue
        return None, False  # a back reference, a conditional: anything
    return frozenset(chars), True


def _parts(op: object, av: Any) -> list[object] | None:
    """What a group-like item matches one of (a repeat's body, a group's, a branch's
    alternatives); None for any other item."""
    if op in _REPEATS:
        return [av[2]]
    if op == _sre.SUBPATTERN:
        return [av[-1]]
    if op == _sre.BRANCH:
        return list(av[1])
    if op == _sre.ATOMIC_GROUP:
        return [av]
    return None


def _class_chars(items: list[tuple[Any, Any]]) -> set[str] | None:
    """The characters of a ``[...]`` class (lowercased), or None for a wide or negated one."""
    chars: set[str] = set()
    for op, av in items:
        if op == _sre.LITERAL:
            chars.add(chr(av).lower())
        elif op == _sre.RANGE and av[1] - av[0] <= 256:
            chars |= {chr(c).lower() for c in range(av[0], av[1] + 1)}
        else:
            return None
    return chars


def _overlapping(alternatives: list[object]) -> bool:
    """Whether two alternatives can start alike (one that can match empty text overlaps any)."""
    firsts: list[frozenset[str] | None] = []
    for alternative in alternatives:
        first, empty = _first_chars(alternative)
        firsts.append(None if empty else first)
    for i, a in enumerate(firsts):
        for b in firsts[i + 1 :]:
            if a is None or b is None or a & b:
                return True
    return False


def _overlap_count(items: object) -> float:
    """Overlapping alternations a match goes through in a row (a repeated one counted as often
    as it repeats; infinite in an unbounded repeat)."""
    total = 0.0
    for op, av in items:  # type: ignore[attr-defined]
        if op == _sre.BRANCH:
            total += _overlapping(av[1]) + max(_overlap_count(b) for b in av[1])
        elif op in _REPEATS:
            inner = _overlap_count(av[2])
            total += 0 if inner == 0 else math.inf if av[1] == _sre.MAXREPEAT else inner * av[1]
        elif op == _sre.SUBPATTERN:
            total += _overlap_count(av[-1])
        elif op == _sre.ATOMIC_GROUP:
            total += _overlap_count(av)
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            total += _overlap_count(av[1])
        elif op == _sre.GROUPREF_EXISTS:
            total += max(_overlap_count(b) for b in av[1:] if b is not None)
    return total


def validate_pattern(pattern: object) -> str:
    """The pattern if it is a usable trigger, else InvalidInputError naming ``trigger_pattern``.

    Rejected: invalid regular expressions, patterns that match empty text (they would fire on
    every action), and two shapes whose backtracking can take exponential time: nested
    quantifiers, and alternatives that can match the same text repeated (``(a|a)`` twenty times).
    """
    field = "trigger_pattern"
    if not isinstance(pattern, str) or not pattern.strip():
        raise InvalidInputError("trigger_pattern must be a non-empty regular expression", field=field)
    try:
        parsed = _sre.parse(pattern, re.IGNORECASE)
        compiled = compile_pattern(pattern)
    except (re.error, regex.error) as exc:
        raise InvalidInputError(
            f"trigger_pattern is not a valid regular expression: {exc}", field=field
        ) from None
    except (RecursionError, OverflowError):
        raise InvalidInputError("trigger_pattern is too deeply nested", field=field) from None
    if _nested_quantifier(parsed, False):
        raise InvalidInputError(
            f"trigger_pattern {pattern!r} nests a quantifier inside a repeated group (like (a+)+ or "
            "(.*)*), which can take exponential time on some inputs; rewrite it without the nesting, "
            "or make the inner part atomic (?>...) or possessive (a++)",
            field=field,
        )
    if _overlap_count(parsed) > MAX_OVERLAPPING_ALTERNATIONS:
        raise InvalidInputError(
            f"trigger_pattern {pattern!r} repeats alternatives that can match the same text (like "
            f"(a|a) or (a|aa) in a repeated group, or more than {MAX_OVERLAPPING_ALTERNATIONS} in a "
            "row), which can take exponential time on some inputs; make the alternatives start "
            "with different characters, or use a character class ([ab] rather than (a|b))",
            field=field,
        )
    if compiled.fullmatch("") is not None:
        raise InvalidInputError(
            f"trigger_pattern {pattern!r} matches empty text, so it would fire on every action",
            field=field,
        )
    return pattern


async def match_patterns(patterns: list[str], text: str) -> list[bool | None]:
    """Whether each pattern matches ``text`` (None: it ran out of time), matched in a worker
    thread. The check as a whole has PATTERN_BUDGET seconds from now (time spent waiting for a
    thread included); each pattern at most PATTERN_TIMEOUT, and MIN_PATTERN_TIMEOUT once the
    budget is spent."""
    global _executor
    if not patterns:
        return []
    deadline = time.monotonic() + PATTERN_BUDGET
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=_MATCHERS, thread_name_prefix="nous-censor")

    def run() -> list[bool | None]:
        found: list[bool | None] = []
        for pattern in patterns:
            budget = max(MIN_PATTERN_TIMEOUT, min(PATTERN_TIMEOUT, deadline - time.monotonic()))
            found.append(pattern_matches(pattern, text, timeout=budget))
        return found

    return await asyncio.get_running_loop().run_in_executor(_executor, run)


# -- meaning -------------------------------------------------------------------------------------
def semantic_windows(text: str) -> list[str]:
    """The start of ``text`` in up to SEMANTIC_MAX_WINDOWS pieces, cut at whitespace if possible."""
    windows: list[str] = []
    start = 0
    while start < len(text) and len(windows) < SEMANTIC_MAX_WINDOWS:
        end = start + SEMANTIC_WINDOW_CHARS
        if end < len(text):
            cut = text.rfind(" ", start + SEMANTIC_WINDOW_CHARS // 2, end)
            end = cut if cut > 0 else end
        piece = text[start:end].strip()
        if piece:
            windows.append(piece)
        start = end
    return windows


# The command a pattern starts with: its leading word, after any ``^``, ``\b`` or inline flags,
# when nothing makes that word optional or partial (a quantifier, a class, a group after it).
_LEADING_WORD = re.compile(r"(?:\^|\\b|\(\?[a-zA-Z]+\))*([A-Za-z][A-Za-z_-]*)(?![?*+{\[(|A-Za-z])")
_TOKENS = re.compile(r"[a-z0-9_-]+")


def pattern_command(pattern: str) -> str | None:
    r"""The word a trigger pattern starts with, lowercased (``rm`` for ``rm\s+-rf\s+/``), or None
    when it starts with anything else (a group, a class)."""
    found = _LEADING_WORD.match(pattern)
    return found.group(1).lower() if found else None


def same_command(pattern: str, text: str) -> bool:
    r"""Whether ``text`` uses the command its censor's pattern starts with. Such an action is the
    pattern's to judge: if the pattern does not match it (``rm -rf ./build`` against
    ``rm\s+-rf\s+/``), its author has already said it is not what the censor forbids, however
    close in meaning it is."""
    command = pattern_command(pattern)
    return command is not None and command in {t.strip("_-") for t in _TOKENS.findall(text.lower())}


def meaning_texts(censor: Censor) -> list[str]:
    """What a censor means, each read on its own: its reason, the words its pattern spells out,
    and the two joined ("DROP TABLE: never drop tables in the production database")."""
    words, reason = pattern_words(censor.trigger_pattern), (censor.reason or "").strip()
    texts = [reason, words, f"{words}: {reason}" if words and reason else ""]
    return [t for t in dict.fromkeys(texts) if t.strip()] or [censor.trigger_pattern]


# Vectors of censors' meaning texts, by text: censors change rarely and are checked often.
_MEANINGS: dict[str, np.ndarray] = {}
_MAX_MEANINGS = 20_000


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


async def similarities(repo: MemoryRepository, text: str, censors: list[Censor]) -> dict[str, float]:
    """Cosine of ``text`` (its best window) to each censor's meaning (the closer of its readings,
    ``meaning_texts``). EmbeddingError if the provider fails."""
    if not censors:
        return {}
    readings = [meaning_texts(c) for c in censors]
    missing = list(dict.fromkeys(t for texts in readings for t in texts if t not in _MEANINGS))
    if missing:
        if len(_MEANINGS) + len(missing) > _MAX_MEANINGS:
            _MEANINGS.clear()
        _MEANINGS.update(zip(missing, _unit(await repo.embedder.embed_many(missing)), strict=True))
    actions = _unit(await repo.embedder.embed_many(semantic_windows(text)))
    found: dict[str, float] = {}
    for censor, texts in zip(censors, readings, strict=True):
        matrix = np.stack([_MEANINGS[t] for t in texts]).astype(np.float32)
        found[censor.id] = float((matrix @ actions.T).max())
    return found


def meaning_applies(censor: Censor, text: str) -> bool:
    """Whether the censor's meaning check may judge ``text`` at all: not when the action uses the
    pattern's own command (``same_command``), nor when none of its main verbs can do what the
    censor forbids (``operation_differs``: "check the uptime of the build server" against a censor
    on shutting it down, "enable MFA" against one on disabling it)."""
    return not same_command(censor.trigger_pattern, text) and not operation_differs(
        pattern_words(censor.trigger_pattern), censor.reason or "", text
    )


def fires_by_meaning(censor: Censor, text: str, similarity: float | None) -> bool:
    """Whether a censor whose pattern did not match ``text`` fires on it by meaning."""
    return similarity is not None and similarity >= SEMANTIC_THRESHOLD and meaning_applies(censor, text)


# -- verdict -------------------------------------------------------------------------------------
def describe(match: CensorMatch) -> str:
    """One line: which censor fired, how, and why it exists."""
    censor = match.censor
    how = (
        f"pattern `{censor.trigger_pattern}` ran out of time, treated as a match"
        if match.timed_out
        else f"pattern `{censor.trigger_pattern}`"
        if match.how == "pattern"
        else f"similar in meaning ({match.similarity or 0.0:.2f}) to `{censor.trigger_pattern}`"
    )
    why = censor.reason or "no reason given"
    escalated = ", escalated from warn after repeated activations" if match.escalated else ""
    return f"{match.action.value} by censor {censor.id[:8]} ({how}{escalated}): {why}"


def decide(matches: list[CensorMatch], *, override: bool) -> ActionCheck:
    """The strongest action among ``matches``; ``override`` lifts a block but never an absolute."""
    actions = {m.action for m in matches}
    reasons = [m.reason or describe(m) for m in matches]
    overridden = False
    if CensorAction.ABSOLUTE in actions:
        decision = ActionDecision.BLOCK
        if override:
            reasons.append("override refused: an absolute censor cannot be overridden")
    elif CensorAction.BLOCK in actions:
        decision = ActionDecision.WARN if override else ActionDecision.BLOCK
        overridden = override
        if override:
            reasons.append("block overridden by the caller: proceeding with a warning")
    elif actions:
        decision = ActionDecision.WARN
    else:
        decision = ActionDecision.ALLOW
    return ActionCheck(decision=decision, matches=matches, reasons=reasons, overridden=overridden)
