"""Property tests of the Python API, on both backends: every input is either stored and read back
as given (and recall over the store keeps working) or refused with a typed Nous error, never a
raw driver or OS exception, never a 5xx-like error (StorageError, EmbeddingError: the store and
model here are healthy, so such an error came from the input), never a half-written row.

Inputs: unicode edge cases (right-to-left text, combining marks, zero-width joiners, emoji, lone
surrogates, NUL and other control characters, whitespace only, text at the content limit and one
byte over it); numbers (NaN, infinities, out-of-range, negative and huge integers); times (naive,
year 1, year 9999, other time zones); ids (malformed, empty, very long, prefixes, another agent's,
unknown, purged); conversation files (truncated JSON, Latin-1 and UTF-16 bytes, deep nesting,
wrong shapes, a large file) and export files; search-operator syntax in recall queries.

The store persists across a test's examples (one store per test and backend): each example
also checks it is still consistent (every row the API counts reads back; nothing unembedded).

NOUS_PROPERTY_EXAMPLES (default 40) scales every property's example count.
"""

from __future__ import annotations

import json
import math
import os
import re
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from nous import InvalidInputError, Nous, NousError, Settings
from nous.errors import EmbeddingError, GuardrailError, LLMError, NotFoundError, StorageError
from nous.ingest import ingested_session_key
from nous.models import Decision, Episode, Fact, MemoryKind, WriteStatus

T = TypeVar("T")

EXAMPLES = int(os.environ.get("NOUS_PROPERTY_EXAMPLES", "40"))
LIMIT = Settings.model_fields["max_content_bytes"].default  # the content limit, in UTF-8 bytes
SERVER_SIDE = (StorageError, EmbeddingError, LLMError)  # the 5xx-like errors
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # as documented in nous._text


def props(share: float = 1.0) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Hypothesis settings: ``share`` of NOUS_PROPERTY_EXAMPLES, no deadline, no example database
    (the store, not hypothesis, carries state between examples)."""
    return settings(
        max_examples=max(3, round(EXAMPLES * share)),
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,  # one store per test, shared by its examples
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],
    )


# -- outcomes and store consistency ----------------------------------------------------------


async def attempt(call: Awaitable[T]) -> T | NousError:
    """The call's result, or the typed error it raised. Any other exception escapes and fails the
    property; so does a 5xx-like error."""
    try:
        return await call
    except NousError as exc:
        assert not isinstance(exc, SERVER_SIDE), f"{type(exc).__name__} on caller input: {exc}"
        return exc


async def snapshot(nous: Nous) -> tuple[int, int, int, int]:
    """Rows (active or not), edges, history rows and sessions of the agent."""
    s = await nous.stats()
    sessions = await nous.sessions(limit=1000)
    return sum(s.active_by_kind.values()) + s.inactive, s.edges, s.history_rows, len(sessions)


async def check_store(nous: Nous) -> None:
    """Every row the API counts reads back (a row written in a form that cannot be read fails
    here), and every memory has its embedding."""
    s = await nous.stats()
    everything = await nous.memories(limit=100_000, include_inactive=True, include_superseded=True)
    assert len(everything) == sum(s.active_by_kind.values()) + s.inactive
    assert s.missing_embeddings == 0
    assert all(m.agent_id == nous.agent_id for m in everything)


async def unchanged_on_error(nous: Nous, before: tuple[int, int, int, int], result: object) -> None:
    """A refused call wrote nothing."""
    if isinstance(result, NousError):
        assert await snapshot(nous) == before, f"{type(result).__name__} left a partial write: {result}"


# -- text ---------------------------------------------------------------------------------------

EDGE_PIECES = [
    "שלום עולם",  # right to left
    "مرحبا بالعالم",
    "\u202e",  # right-to-left override
    "\u200f",  # right-to-left mark
    "\u2067",  # right-to-left isolate
    "e\u0301",  # a combining mark
    "\u0301\u0301\u0301",  # combining marks on nothing
    "Z\u0351\u0352\u0353\u0354",
    "\u200d",  # zero-width joiner
    "\u200b",  # zero-width space
    "\u2060",  # word joiner
    "\ufeff",  # byte order mark
    "👨\u200d👩\u200d👧\u200d👦",  # emoji joined by ZWJ
    "🏳\ufe0f\u200d🌈",
    "🙂",
    "\U0001f600\U0001f600",
    "\ud800",  # lone surrogates
    "\udfff",
    "\x00",  # NUL and other control characters
    "\x07",
    "\x1b",
    "\x7f",
    "\x85",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\u00a0",
    "\u2003",
    "\u3000",
    "\u2028",
    "\uffff",  # noncharacters
    "\U0010ffff",
    "'",
    '"',
    "\\",
    "%",
    "_",
    "deploy",
    "staging",
    "Berlin",
    "eu-west-1",
]
_BAD = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_pieces = st.one_of(st.sampled_from(EDGE_PIECES), st.text(max_size=8))
short_text = st.lists(_pieces, max_size=6).map("".join)  # anything: often not storable
# The same edge cases without control characters or lone surrogates: storable unless blank.
_fine_pieces = st.one_of(
    st.sampled_from([p for p in EDGE_PIECES if not _BAD.search(p)]),
    st.text(st.characters(exclude_categories=["Cs", "Cc"]), max_size=8),
)
fine_text = st.lists(_fine_pieces, min_size=1, max_size=6).map("".join)
# At the limit and one byte over it, counted in UTF-8 bytes (so in characters too: "é" is two).
long_text = st.sampled_from(
    [
        ("x", LIMIT, ""),
        ("x", LIMIT + 1, ""),
        ("é", LIMIT // 2, ""),
        ("é", LIMIT // 2, "x"),
        ("🙂", LIMIT // 4, ""),
        ("x", LIMIT - 1, "é"),  # LIMIT characters, LIMIT + 1 bytes
        ("word ", LIMIT // 5, ""),
        ("word ", LIMIT // 5, " "),
    ]
).map(lambda p: p[0] * p[1] + p[2])
text = st.one_of(fine_text, fine_text, short_text, long_text)


# Storable text (RTL, combining marks, emoji): mixed with ``text`` where most inputs should be
# valid, so that what follows a valid step is exercised too.
clean_text = st.lists(
    st.sampled_from(["I moved to Berlin", "שלום", "e\u0301", "👨\u200d👩\u200d👧", "🙂", "the deploy", "OK"]),
    min_size=1,
    max_size=4,
).map(" ".join)


def storable(value: str) -> bool:
    """The documented rule for content: valid Unicode, at most LIMIT bytes (before stripping), no
    control characters but tab, newline and carriage return, not blank.

    By design, "blank" is ``str.strip``'s: text of only zero-width characters or a BOM is stored
    as given (they are format characters, not whitespace)."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return False
    return size <= LIMIT and not _CONTROL.search(value) and bool(value.strip())


def fact_storable(value: str) -> bool:
    """The rule for a fact's content: storable, and at least three letters or digits (a fact
    states something; "x" or an emoji alone does not)."""
    return storable(value) and len(re.findall(r"[^\W_]", value)) >= 3


def optional_text_ok(value: str | None, max_chars: int | None = None) -> bool:
    """A secondary text field: absent, empty, or storable (and within its length)."""
    if value is None or value == "":
        return True
    return storable(value) and (max_chars is None or len(value) <= max_chars)


def clean_tags(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(t.strip() for t in tags if t.strip()))


@given(
    content=text,
    subject=st.one_of(st.none(), st.none(), fine_text, fine_text, short_text, st.just("s" * 501)),
    tags=st.one_of(st.none(), st.lists(fine_text, max_size=4), st.lists(short_text, max_size=4)),
    dedup=st.booleans(),
)
@props(1.5)
async def test_learn_stores_what_it_is_given_or_refuses(
    nous: Nous, content: str, subject: str | None, tags: list[str] | None, dedup: bool
) -> None:
    assert nous.settings.max_content_bytes == LIMIT
    before = await snapshot(nous)
    result = await attempt(nous.learn(content, subject=subject, tags=tags, dedup=dedup))
    event(type(result).__name__ + ": " + (str(result)[:50] if isinstance(result, NousError) else ""))
    ok = (
        fact_storable(content)
        and optional_text_ok(subject, 500)
        and all(optional_text_ok(t.strip()) for t in tags or [])
    )
    if isinstance(result, NousError):
        assert isinstance(result, InvalidInputError), result
        assert not ok, f"refused storable input: {result}"
        await unchanged_on_error(nous, before, result)
        return
    assert ok, "stored input the documented rules refuse"
    memory = result.memory
    stored = await nous.get(memory.id)
    assert isinstance(stored, Fact)
    rows = (await snapshot(nous))[0]
    if result.status == WriteStatus.DUPLICATE:  # the existing memory, confirmed: no new row
        assert rows == before[0]
        assert stored.content == memory.content
    else:
        assert rows == before[0] + 1
        assert memory.content == stored.content == content.strip()
        assert memory.subject == stored.subject == subject
        assert memory.tags == stored.tags == clean_tags(tags or [])
    hits = await nous.recall(content, limit=5)  # storable content is a valid query
    for hit in hits:
        assert (await nous.get(hit.id)).content == hit.content == hit.memory.content
    await check_store(nous)


# -- numbers ------------------------------------------------------------------------------------

numbers = st.one_of(
    st.sampled_from(
        [
            math.nan,
            math.inf,
            -math.inf,
            -0.0,
            0,
            1,
            -1,
            0.5,
            1.0000001,
            -1e-300,
            1e308,
            2**31,
            2**63,
            2**64,
            -(2**63) - 1,
            10**30,
            -(10**30),
        ]
    ),
    st.integers(),
    st.integers(min_value=-5, max_value=1200),
    st.floats(),
)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _real(v: object, low: float, high: float, *, open_low: bool = False) -> bool:
    """A finite number (not a bool) in [low, high], or (low, high] with ``open_low``."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    if isinstance(v, float) and not math.isfinite(v):
        return False
    return (low < v if open_low else low <= v) and v <= high


def _unit(v: object) -> bool:
    return _real(v, 0, 1)


Rule = Callable[[Any], bool | None]  # True: must be accepted, False: must be refused, None: either


def _int_in(low: int, high: int) -> Rule:
    return lambda v: _is_int(v) and low <= v <= high


def _maybe_int(low: int, sure: int) -> Rule:
    """An integer from ``low`` to ``sure`` must be accepted; above it, either is right (a bound of
    the implementation's); below ``low``, or not an integer, it must be refused."""
    return lambda v: (True if v <= sure else None) if _is_int(v) and v >= low else False


Targets = dict[str, str]
NumberOp = tuple[Callable[[Nous, Any, Targets], Awaitable[Any]], Rule]
NUMBER_OPS: dict[str, NumberOp] = {
    "learn confidence": (
        lambda n, v, t: n.learn(f"fact at confidence {v!r}", confidence=v, dedup=False),
        _unit,
    ),
    "decision confidence": (
        lambda n, v, t: n.record_decision(
            f"Chose Redis over Memcached at confidence {v!r}",
            confidence=v,
            reasons=[{"type": "analysis", "text": "benchmarks"}],
        ),
        _unit,
    ),
    "update confidence": (lambda n, v, t: n.update(t["fact"], confidence=v), _unit),
    "update stability": (
        lambda n, v, t: n.update(t["fact"], stability=v),
        lambda v: _real(v, 0, 36_500, open_low=True),
    ),
    "link weight": (lambda n, v, t: n.link(t["fact"], t["other"], weight=v), _unit),
    "recall limit": (lambda n, v, t: n.recall("staging cluster", limit=v), _int_in(1, 1000)),
    "recall_recent limit": (lambda n, v, t: n.recall_recent(limit=v), _int_in(1, 1000)),
    "recall_recent hours": (
        lambda n, v, t: n.recall_recent(hours=v),
        lambda v: _real(v, 0, 24 * 3650, open_low=True),
    ),
    "memories limit": (lambda n, v, t: n.memories(limit=v), _int_in(1, 100_000)),
    "memories offset": (lambda n, v, t: n.memories(offset=v), _maybe_int(0, 10**6)),
    "similar limit": (lambda n, v, t: n.similar("staging cluster", limit=v), _int_in(1, 1000)),
    "events limit": (lambda n, v, t: n.events(limit=v), _int_in(1, 1000)),
    "sessions limit": (lambda n, v, t: n.sessions(limit=v), _int_in(1, 1000)),
    "censors limit": (lambda n, v, t: n.censors(limit=v), _int_in(1, 1000)),
    "proposals limit": (lambda n, v, t: n.outcome_proposals(limit=v), _int_in(1, 1000)),
    "pre_turn budget": (
        lambda n, v, t: n.pre_turn(f"budget-{uuid.uuid4().hex}", "How is the staging cluster?", budget=v),
        # at least the frame's fixed sections (a few thousand tokens); not a whole number: refused
        lambda v: (True if v >= 100_000 else None) if _is_int(v) and v >= 0 else False,
    ),
}


async def _number_op(nous: Nous, op: str, value: Any, targets: Targets) -> None:
    before = await snapshot(nous)
    call, rule = NUMBER_OPS[op]
    result = await attempt(call(nous, value, targets))
    expected = rule(value)
    if isinstance(result, NousError):
        assert isinstance(result, InvalidInputError), (op, value, result)
        assert expected is not True, f"{op}={value!r} refused: {result}"
        await unchanged_on_error(nous, before, result)
        return
    assert expected is not False, f"{op}={value!r} accepted"
    if op in ("learn confidence", "decision confidence"):
        memory = result.memory if op == "learn confidence" else result
        stored = await nous.get(memory.id)
        assert isinstance(stored, Fact | Decision)
        assert stored.confidence == memory.confidence == value
    elif op == "update confidence":
        assert (await nous.get(targets["fact"])).confidence == value  # type: ignore[attr-defined]
    elif op == "update stability":
        assert (await nous.get(targets["fact"])).stability == value
    elif op.endswith("limit"):
        assert _is_int(value) and len(result) <= value


@given(values=st.fixed_dictionaries({op: numbers for op in NUMBER_OPS}))
@props(0.5)
async def test_numbers_are_used_as_given_or_refused(nous: Nous, values: dict[str, Any]) -> None:
    """Every numeric parameter, each with its own value: used as given, or refused."""
    fact = await nous.learn("The staging cluster runs in eu-west-1", dedup=False)
    other = await nous.learn("The production cluster runs in us-east-2", dedup=False)
    targets = {"fact": fact.memory.id, "other": other.memory.id}
    for op in NUMBER_OPS:
        await _number_op(nous, op, values[op], targets)
    await check_store(nous)


# -- times --------------------------------------------------------------------------------------

ZONES: list[tzinfo] = [
    UTC,
    timezone(timedelta(hours=14)),
    timezone(timedelta(hours=-12)),
    timezone(timedelta(hours=5, minutes=30)),
    timezone(timedelta(minutes=-1)),
    ZoneInfo("America/New_York"),
    ZoneInfo("Asia/Kathmandu"),
]
_MIN, _MAX = datetime.min, datetime.max
times = st.one_of(
    st.datetimes(min_value=_MIN, max_value=_MAX),  # naive
    st.datetimes(min_value=_MIN, max_value=_MAX, timezones=st.sampled_from(ZONES)),
    st.sampled_from(
        [
            _MIN,
            _MAX,
            _MIN.replace(tzinfo=UTC),
            _MAX.replace(tzinfo=UTC),
            _MIN.replace(tzinfo=timezone(timedelta(hours=5))),  # before year 1 in UTC
            _MAX.replace(tzinfo=timezone(timedelta(hours=-5))),  # after year 9999 in UTC
            datetime(1, 1, 1, 12),
            datetime(9999, 12, 31, 12),
            datetime(1970, 1, 1),
            datetime(2038, 1, 19, 3, 14, 8),
        ]
    ),
)


def in_utc(value: datetime) -> datetime | None:
    """How Nous stores ``value`` (a naive time is UTC), or None if it is outside years 1..9999."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        return None


TIME_OPS = [
    "learn",
    "decision",
    "episode",
    "recall now",
    "recall since",
    "recall until",
    "recall_recent",
    "turns",
    "maintain",
    "end_idle_sessions",
]


async def _time_op(nous: Nous, op: str, when: datetime) -> None:
    expected = in_utc(when)
    before = await snapshot(nous)
    tag = uuid.uuid4().hex[:8]
    stored_at: list[tuple[str, datetime]] = []  # (memory id, the time it must carry)
    if op == "learn":
        result: Any = await attempt(nous.learn(f"Moved the cache {tag}", occurred_at=when, dedup=False))
        if not isinstance(result, NousError):
            stored_at.append((result.memory.id, result.memory.occurred_at))
            assert result.memory.valid_from == expected
    elif op == "decision":
        result = await attempt(
            nous.record_decision(
                f"Chose Postgres over MySQL {tag}",
                occurred_at=when,
                reasons=[{"type": "analysis", "text": "it has pgvector"}],
            )
        )
        if not isinstance(result, NousError):
            stored_at.append((result.id, result.occurred_at))
    elif op == "episode":
        result = await attempt(nous.start_episode(f"Deploy {tag}", started_at=when))
        if not isinstance(result, NousError):
            assert result.started_at == expected
            stored_at.append((result.id, result.occurred_at))
            ended = await nous.end_episode(result.id, ended_at=when, summary="done")
            assert isinstance(ended, Episode) and ended.ended_at == expected
    elif op.startswith("recall "):
        field = op.split()[1]
        times_given: dict[str, Any] = {field: when}
        result = await attempt(nous.recall("what happened with the cache last week", **times_given))
        if not isinstance(result, NousError) and expected is not None:
            for hit in result:
                if field == "since":
                    assert hit.memory.occurred_at >= expected
                if field == "until":
                    assert hit.memory.occurred_at < expected
    elif op == "recall_recent":
        result = await attempt(nous.recall_recent(kinds=None, since=when, limit=1000))
        if not isinstance(result, NousError) and expected is not None:
            assert all(m.occurred_at >= expected for m in result)
    elif op == "turns":
        session = f"times-{tag}"
        result = await attempt(nous.pre_turn(session, "What did we do yesterday?", at=when))
        if not isinstance(result, NousError):
            await nous.post_turn(session, "We moved the cache to Redis.", at=when)
            state = (await nous.end_session(session, at=when)).session
            assert state.started_at == state.last_active_at == expected
    elif op == "maintain":
        result = await attempt(nous.maintain(now=when))
    else:
        result = await attempt(nous.end_idle_sessions(now=when))
    if isinstance(result, NousError):
        assert isinstance(result, InvalidInputError), (op, when, result)
        assert expected is None, f"{op} refused {when!r}: {result}"
        await unchanged_on_error(nous, before, result)
        return
    assert expected is not None, f"{op} accepted {when!r}, outside years 1..9999 in UTC"
    for memory_id, at in stored_at:
        assert at == expected
        assert (await nous.get(memory_id)).occurred_at == expected
        # the time index holds it where it belongs: a window of one microsecond finds it
        until = expected + timedelta(microseconds=1) if expected < _MAX.replace(tzinfo=UTC) else None
        window = await nous.recall_recent(kinds=None, since=expected, until=until, limit=1000)
        assert memory_id in {m.id for m in window}


@given(when=st.fixed_dictionaries({op: times for op in TIME_OPS}))
@props(0.5)
async def test_times_are_stored_in_utc_or_refused(nous: Nous, when: dict[str, datetime]) -> None:
    """Every API call that takes a time, each with its own: stored as that instant in UTC (a
    naive time is UTC) and found there, or refused if it has no UTC equivalent in years 1..9999."""
    for op in TIME_OPS:
        await _time_op(nous, op, when[op])
    await check_store(nous)


# -- ids ----------------------------------------------------------------------------------------

ID_CASES = [
    "mine",
    "mine padded",
    "mine prefix",
    "mine short prefix",
    "mine upper",
    "mine suffixed",
    "other agent",
    "other agent prefix",
    "unknown",
    "purged",
]
_id_cases = st.sampled_from(ID_CASES).map(lambda c: ("case", c))
ids = st.one_of(
    _id_cases,
    _id_cases,
    st.one_of(
        st.sampled_from(["", " ", "\t\n", "\x00", "\ud800" * 6]),  # empty, blank, NUL, lone surrogates
        short_text,  # malformed
        st.integers(min_value=37, max_value=20_000).map(lambda n: "f" * n),  # very long
    ).map(lambda s: ("raw", s)),
)
IdOp = Callable[[Nous, str, str], Awaitable[Any]]
ID_OPS: dict[str, IdOp] = {  # in this order: the destructive ones last
    "get": lambda n, i, a: n.get(i),
    "history": lambda n, i, a: n.history(i),
    "update": lambda n, i, a: n.update(i, subject="changed"),
    "link from": lambda n, i, a: n.link(i, a),
    "link to": lambda n, i, a: n.link(a, i, "supports"),
    "end_episode": lambda n, i, a: n.end_episode(i),
    "review_decision": lambda n, i, a: n.review_decision(i, "success"),
    "accept_proposal": lambda n, i, a: n.accept_proposal(i),
    "reject_proposal": lambda n, i, a: n.reject_proposal(i),
    "report_false_positive": lambda n, i, a: n.report_false_positive(i),
    "retire_censor": lambda n, i, a: n.retire_censor(i),
    "retry_event": lambda n, i, a: n.retry_event(i),
    "session": lambda n, i, a: n.session(i),
    "recall by session": lambda n, i, a: n.recall("staging", session_id=i),
    "recall by user": lambda n, i, a: n.recall("staging", user_id=i),
    "memories by user": lambda n, i, a: n.memories(user_id=i),
    "forget": lambda n, i, a: n.forget(i),
    "restore": lambda n, i, a: n.restore(i),
    "forget hard": lambda n, i, a: n.forget(i, hard=True),
}
MUST_FIND = {"get", "forget", "restore", "history", "update", "link from"}  # on a fact of mine


@given(which=st.fixed_dictionaries({op: ids for op in ID_OPS}))
@props(0.5)
async def test_ids_find_this_agents_memory_or_are_refused(
    nous: Nous, which: dict[str, tuple[str, str]]
) -> None:
    """Every call that takes an id, each with its own: this agent's memory by its id or a unique
    prefix of 6+ characters, else NotFoundError or InvalidInputError; another agent's memory is
    never read, changed or revealed."""
    other_view = nous.for_agent("other-agent")
    theirs = (await other_view.learn("The other agent's staging secret", dedup=False)).memory
    their_history = len(await other_view.history(theirs.id))
    mine = (await nous.learn("The staging cluster runs in eu-west-1", dedup=False)).memory
    anchor = (await nous.learn("The staging gateway is behind a load balancer", dedup=False)).memory
    gone = (await nous.learn("A fact that is purged", dedup=False)).memory
    await nous.forget(gone.id, hard=True)
    named = {
        "mine": mine.id,
        "mine padded": f"  {mine.id}\n",
        "mine prefix": mine.id[:8],
        "mine short prefix": mine.id[:5],
        "mine upper": mine.id.upper(),
        "mine suffixed": mine.id + "0",
        "other agent": theirs.id,
        "other agent prefix": theirs.id[:8],
        "unknown": str(uuid.uuid4()),
        "purged": gone.id,
    }
    for op in ID_OPS:  # in its order (a drawn dict's order may differ)
        kind, value = which[op]
        case = value if kind == "case" else None
        memory_id = named[value] if case else value
        before = await snapshot(nous)
        result = await attempt(ID_OPS[op](nous, memory_id, anchor.id))
        if isinstance(result, NousError):
            assert isinstance(result, InvalidInputError | NotFoundError), (op, case, result)
            await unchanged_on_error(nous, before, result)
            # by design: ids are case-sensitive, and a prefix needs 6+ characters ("mine upper",
            # "mine short prefix" are NotFound); a NUL in a filter finds nothing on SQLite and is
            # refused by PostgreSQL (both are allowed here)
            if case in ("mine", "mine padded", "mine prefix"):
                assert op not in MUST_FIND, f"{op}({case}) refused: {result}"
            if case in ("unknown", "other agent", "other agent prefix"):
                assert isinstance(result, NotFoundError), (op, case, result)
        else:
            if case in ("other agent", "other agent prefix"):
                assert op.startswith(("recall", "memories")), f"{op} reached another agent's memory"
            if case == "purged":
                assert op == "history" or op.startswith(("recall", "memories")), f"{op} found a purged memory"
            if isinstance(result, list):  # recall or a listing: only this agent's memories
                for item in result:
                    memory = getattr(item, "memory", item)
                    assert getattr(memory, "agent_id", nous.agent_id) == nous.agent_id
    after = await other_view.get(theirs.id)
    assert (after.content, after.active, after.updated_at) == (theirs.content, True, theirs.updated_at)
    assert len(await other_view.history(theirs.id)) == their_history
    await check_store(nous)


# -- search syntax ------------------------------------------------------------------------------

OPERATOR_TOKENS = [
    '"',
    "*",
    "OR",
    "AND",
    "NOT",
    "NEAR(",
    "NEAR",
    "(",
    ")",
    ":",
    "^",
    "-",
    "'; DROP TABLE memories; --",
    "&",
    "|",
    "!",
    "<->",
    "<2>",
    "'",
    "\\",
    "+",
    "{",
    "}",
    "col:",
    "a:b",
    ",",
    "%",
    "_",
    "staging",
    "gateway",
    "eu-west-1",
    "the",
]
operator_text = st.lists(
    st.tuples(st.sampled_from(OPERATOR_TOKENS), st.sampled_from(["", " ", "  "])), min_size=1, max_size=24
).map(lambda parts: "".join(token + gap for token, gap in parts))
PRESETS = [None, "keyword-only", "dense-only", "no-boosts"]


@given(query=operator_text, preset=st.sampled_from(PRESETS))
@props(2)
async def test_search_operators_are_just_words(nous: Nous, query: str, preset: str | None) -> None:
    """FTS5 / tsquery syntax, SQL fragments: recall answers, never raises, and still finds a
    memory by a rare word next to them."""
    target = await nous.learn("The zanzibarquux gateway fronts the staging cluster")
    await nous.learn("The NEAR OR gateway: a (weird) name, with * and ^ in it")
    await nous.learn("'; DROP TABLE memories; -- was the title of a talk")
    rows = (await snapshot(nous))[0]
    # must not raise; no relevance floor: the property is that the keyword search still matches
    # the rare word, not how relevant a question of two dozen SQL words finds it
    hits = await nous.recall(f"zanzibarquux {query}", limit=10, preset=preset, min_score=0.0)
    if preset in ("keyword-only", None):
        found = {h.id: h for h in hits}
        assert target.memory.id in found, [h.content for h in hits]
        assert "keyword" in found[target.memory.id].signals, found[target.memory.id].signals
    assert await nous.recall(query, limit=5, preset=preset) is not None
    assert (await snapshot(nous))[0] == rows
    await check_store(nous)


# -- recall -------------------------------------------------------------------------------------

SEEDS = [
    ("The staging cluster runs in eu-west-1", None),
    ("Dana prefers dark mode in every editor", "dana"),
    ("שלום: the Tel Aviv office opens at nine", None),
    ("👨\u200d👩\u200d👧 The family plan covers four people", "dana"),
]


@given(
    query=text,
    limit=st.one_of(
        st.integers(min_value=1, max_value=20),
        st.integers(min_value=1, max_value=20),
        st.integers(min_value=-2, max_value=1002),
        st.sampled_from([math.nan, 2**64]),
    ),
    since=st.one_of(st.none(), st.none(), times),
    until=st.one_of(st.none(), st.none(), times),
    now=st.none() | times,
    user_id=st.one_of(st.none(), st.none(), st.just("dana"), short_text),
)
@props(1.5)
async def test_recall_answers_or_refuses(
    nous: Nous,
    query: str,
    limit: float,
    since: datetime | None,
    until: datetime | None,
    now: datetime | None,
    user_id: str | None,
) -> None:
    for content, user in SEEDS:
        await nous.learn(content, user_id=user)
    rows = (await snapshot(nous))[0]
    result = await attempt(
        nous.recall(query, limit=limit, since=since, until=until, now=now, user_id=user_id)  # type: ignore[arg-type]
    )
    event(type(result).__name__ + ": " + (str(result)[:50] if isinstance(result, NousError) else ""))
    low = None if since is None else in_utc(since)
    high = None if until is None else in_utc(until)
    if isinstance(result, NousError):
        assert isinstance(result, InvalidInputError), result
        assert (
            not storable(query)
            or not (_is_int(limit) and 1 <= limit <= 1000)
            or any(t is not None and in_utc(t) is None for t in (since, until, now))
            or (low is not None and high is not None and low >= high)
            or not optional_text_ok(user_id)
        ), f"refused a valid recall: {result}"
    else:
        assert storable(query) and _is_int(limit)
        assert len(result) <= limit
        for hit in result:
            assert hit.memory.agent_id == nous.agent_id
            assert hit.content == hit.memory.content == (await nous.get(hit.id)).content
            if user_id is not None:
                assert hit.memory.user_id in (user_id, None)
            if low is not None:
                assert hit.memory.occurred_at >= low
            if high is not None:
                assert hit.memory.occurred_at < high
    assert (await snapshot(nous))[0] == rows  # recall writes no memory
    await check_store(nous)


# -- decisions ----------------------------------------------------------------------------------


@given(
    description=text,
    context=st.one_of(st.none(), fine_text, short_text),
    reason=st.one_of(
        st.sampled_from(["benchmarks", "שלום", "e\u0301 🙂", " padded "]), fine_text, short_text
    ),
    confidence=st.one_of(st.floats(min_value=0, max_value=1), st.floats(min_value=0, max_value=1), numbers),
)
@props()
async def test_decisions_store_their_text_or_refuse(
    nous: Nous, description: str, context: str | None, reason: str, confidence: float
) -> None:
    before = await snapshot(nous)
    result = await attempt(
        nous.record_decision(
            description,
            context=context,
            confidence=confidence,
            reasons=[{"type": "analysis", "text": reason}],
        )
    )
    event(type(result).__name__ + ": " + (str(result)[:50] if isinstance(result, NousError) else ""))
    ok = (
        storable(description)
        and optional_text_ok(context)
        and 1 <= len(reason) <= 5000
        and optional_text_ok(reason)
        and _unit(confidence)
    )
    if isinstance(result, NousError):
        assert isinstance(result, InvalidInputError | GuardrailError), result
        assert not ok, f"refused a valid decision: {result}"
        await unchanged_on_error(nous, before, result)
        return
    assert ok, "stored a decision the documented rules refuse"
    stored = await nous.get(result.id)
    assert isinstance(stored, Decision)
    assert stored.content == result.content == description.strip()
    assert stored.context == context
    assert [r.text for r in stored.reasons] == [reason]
    assert stored.confidence == confidence
    assert (await snapshot(nous))[0] == before[0] + 1
    hits = await nous.recall(description, limit=5, kinds=["decision"])
    assert all(h.kind == MemoryKind.DECISION for h in hits)
    await check_store(nous)


# -- the turn loop -----------------------------------------------------------------------------


def _fits_as_turn(role: str, value: str) -> bool:
    """A message is stored as its turn, "role: text", which must be storable too."""
    return storable(value) and storable(f"{role}: {value.strip()}")


@given(
    session_id=st.one_of(st.sampled_from(["s", " padded ", "שלום"]), short_text, st.just("s" * 201)),
    user_id=st.one_of(st.none(), st.none(), st.sampled_from(["dana", "", "e\u0301"]), short_text),
    said=st.one_of(clean_text, clean_text, text),
    reply=st.one_of(clean_text, clean_text, text),
)
@props(0.5)
async def test_turns_are_recorded_or_refused_before_anything_is_written(
    nous: Nous, session_id: str, user_id: str | None, said: str, reply: str
) -> None:
    """A turn's session id, user id and text are checked before the session row is written: a
    refused turn leaves no session behind and the session id usable; a refused reply leaves the
    session's turn uncounted."""
    if session_id.strip():
        session_id = f"{session_id}-{uuid.uuid4().hex[:6]}"  # a new session each example
    session_ok = storable(session_id) and len(session_id) <= 200
    ok = session_ok and optional_text_ok(user_id, 200) and _fits_as_turn("user", said)
    before = await snapshot(nous)
    result = await attempt(nous.pre_turn(session_id, said, user_id=user_id))
    event(f"pre_turn: {type(result).__name__}")
    if isinstance(result, NousError):
        assert isinstance(result, InvalidInputError), result
        assert not ok, f"refused a valid turn: {result}"
        await unchanged_on_error(nous, before, result)
        if session_ok:  # the session id is still usable
            retry = await nous.pre_turn(session_id, "Let us plan the database migration")
            assert retry.session_id == session_id.strip()
        await check_store(nous)
        return
    assert ok, "recorded a turn the documented rules refuse"
    state = await nous.session(result.session_id)
    assert (state.user_id, state.last_user_text, state.turn_count) == (user_id, said.strip(), 0)
    before = await snapshot(nous)
    after = await attempt(nous.post_turn(result.session_id, reply))
    event(f"post_turn: {type(after).__name__}")
    if isinstance(after, NousError):
        assert isinstance(after, InvalidInputError), after
        assert not _fits_as_turn("assistant", reply), f"refused a valid reply: {after}"
        await unchanged_on_error(nous, before, after)
        assert (await nous.session(result.session_id)).turn_count == 0
    else:
        assert after.turn_count == 1
        turns = await nous.recall_recent(kinds=["turn"], session_id=result.session_id, limit=10)
        assert sorted(t.content for t in turns) == sorted(
            [f"user: {said.strip()}", f"assistant: {reply.strip()}"]
        )
    assert (await nous.end_session(result.session_id)).session.ended
    await check_store(nous)


# -- conversation files -------------------------------------------------------------------------

_json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | short_text
json_values = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(short_text, inner, max_size=3),
    max_leaves=8,
)
_iso = times.map(lambda t: t.isoformat())
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": clean_text | clean_text | short_text},
        optional={"name": st.sampled_from(["Dana", "Ravi", "שרה"]), "occurred_at": _iso},
    ),
    min_size=1,
    max_size=4,
)
sessions = st.lists(
    st.fixed_dictionaries({"messages": messages}, optional={"started_at": _iso}), min_size=1, max_size=3
)
MUTATIONS = [
    "none",
    "truncate",
    "latin-1",
    "utf-16",
    "nest",
    "reshape",
    "pad",
    "huge message",
    "control character",
    "bom",
]


def _file_bytes(doc: dict[str, Any], mutation: str, data: st.DataObject) -> tuple[bytes, bool]:
    """The file for ``doc`` after ``mutation``, and whether it must be refused whatever ``doc`` is."""
    if mutation == "nest":  # deeper than the JSON reader goes, or deep but readable: both refused
        depth = data.draw(st.sampled_from([50, 900, 5_000, 200_000]))
        doc["sessions"][0]["messages"][0]["content"] = "NEST"
        raw = json.dumps(doc).replace('"NEST"', "[" * depth + "]" * depth)
        return raw.encode(), True
    if mutation == "reshape":  # one value, somewhere, of another shape
        where = data.draw(st.sampled_from(["sessions", "session", "messages", "message", "participants"]))
        value = data.draw(json_values)
        if where == "sessions":
            doc["sessions"] = value
        elif where == "session":
            doc["sessions"][0] = value
        elif where == "messages":
            doc["sessions"][0]["messages"] = value
        elif where == "message":
            doc["sessions"][0]["messages"][0] = value
        else:
            doc["participants"] = value
        return json.dumps(doc).encode(), False
    if mutation == "pad":  # a large file, mostly an ignored field: bounded, so the test stays fast
        doc["padding"] = "p" * data.draw(st.sampled_from([LIMIT, 3_000_000]))
    if mutation in ("huge message", "control character"):  # a bad message in the last session
        bad = "w " * (LIMIT // 2 + 1) if mutation == "huge message" else "a NUL \x00 here"
        doc["sessions"][-1]["messages"][-1]["content"] = bad
        return json.dumps(doc).encode(), True
    if mutation in ("latin-1", "utf-16"):
        doc["sessions"][0]["messages"][0]["content"] += " café"  # not ASCII, so not UTF-8 in Latin-1
        raw = json.dumps(doc, ensure_ascii=False)
        return raw.encode(mutation, errors="replace" if mutation == "latin-1" else "surrogatepass"), True
    raw = json.dumps(doc, ensure_ascii=data.draw(st.booleans()))
    try:
        encoded = raw.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: write it as JSON escapes instead
        encoded = json.dumps(doc).encode()
    if mutation == "truncate":
        return encoded[: data.draw(st.integers(min_value=0, max_value=len(encoded) - 1))], True
    if mutation == "bom":
        return b"\xef\xbb\xbf" + encoded, True  # refused by design: the native format is plain UTF-8
    return encoded, False


@pytest.mark.parametrize("mutation", MUTATIONS)
@given(doc_sessions=sessions, data=st.data())
@props(0.2)
async def test_conversation_files_are_stored_whole_or_not_at_all(
    nous: Nous, tmp_path: Path, doc_sessions: list[dict[str, Any]], mutation: str, data: st.DataObject
) -> None:
    conversation_id = uuid.uuid4().hex  # a fresh conversation each example: nothing is skipped
    for i, session in enumerate(doc_sessions):
        session["id"] = f"s{i}"
    doc: dict[str, Any] = {"id": conversation_id, "sessions": doc_sessions}
    expected_turns = {
        f"s{i}": sorted(f"{m.get('name') or m['role']}: {m['content']}".strip() for m in session["messages"])
        for i, session in enumerate(doc_sessions)
    }
    raw, must_refuse = _file_bytes(doc, mutation, data)
    path = tmp_path / f"{conversation_id}.json"
    path.write_bytes(raw)
    before = await snapshot(nous)
    report = await attempt(nous.ingest(path))
    event(type(report).__name__)
    if isinstance(report, NousError):
        assert isinstance(report, InvalidInputError), report
        await unchanged_on_error(nous, before, report)  # "bad files store nothing"
        return
    assert not must_refuse, f"stored a {mutation} file"
    assert report.sessions == len(doc_sessions) and report.sessions_skipped == 0
    created_episodes = report.sessions - report.episodes_merged
    assert (await snapshot(nous))[0] == before[0] + report.turns + created_episodes
    if mutation in ("none", "pad"):  # every message, as written
        for session_id, contents in expected_turns.items():
            turns = await nous.recall_recent(  # since the beginning: the file's times are any
                kinds=["turn"],
                session_id=ingested_session_key(None, conversation_id, session_id),
                limit=1000,
                since=datetime(1, 1, 1, tzinfo=UTC),
            )
            assert sorted(t.content for t in turns) == contents
    again = await nous.ingest(path)  # the same file again: everything is skipped
    assert again.sessions == 0 and again.sessions_skipped == len(report.episode_ids)
    assert (await snapshot(nous))[0] == before[0] + report.turns + created_episodes
    await check_store(nous)


# -- export files -------------------------------------------------------------------------------


@pytest.mark.parametrize("mutation", ["none", "truncate", "latin-1", "utf-16", "garbage line"])
@given(data=st.data())
@props(0.1)
async def test_export_files_import_whole_or_not_at_all(
    nous: Nous, tmp_path: Path, mutation: str, data: st.DataObject
) -> None:
    if not (await snapshot(nous))[0]:
        for content in ("The staging cluster runs in eu-west-1 café", "Dana prefers dark mode 🙂"):
            await nous.learn(content)
        await nous.record_decision("Chose Redis over Memcached", reasons=[{"type": "analysis", "text": "x"}])
    source = tmp_path / f"export-{uuid.uuid4().hex}.jsonl"
    await nous.export_jsonl(source)
    raw = source.read_bytes()
    if mutation == "truncate":
        raw = raw[: data.draw(st.integers(min_value=0, max_value=len(raw) - 1))]
    elif mutation in ("latin-1", "utf-16"):  # the export escapes "é": write it as a byte of its own
        raw = raw.decode().replace("\\u00e9", "é").encode(mutation)
    elif mutation == "garbage line":
        lines = raw.splitlines()
        lines.insert(data.draw(st.integers(0, len(lines))), data.draw(json_values.map(json.dumps)).encode())
        raw = b"\n".join(lines)
    source.write_bytes(raw)
    importer = nous.for_agent(f"importer-{uuid.uuid4().hex[:8]}")  # a fresh agent each example
    result = await attempt(importer.import_jsonl(source))
    rows = (await snapshot(importer))[0]
    if isinstance(result, NousError):
        assert isinstance(result, InvalidInputError), result
        assert rows == 0, f"a refused import left {rows} memories"
        assert mutation != "none"
        return
    assert mutation in ("none", "truncate", "garbage line"), f"imported a {mutation} file"
    assert rows == result
    if mutation == "none":
        assert rows == (await snapshot(nous))[0]
        mine = sorted(m.content for m in await nous.memories(limit=1000, include_inactive=True))
        copied = sorted(m.content for m in await importer.memories(limit=1000, include_inactive=True))
        assert copied == mine
    await check_store(importer)
