"""Topic threads in the store: threading the memories not yet in a thread, labelling threads,
finding the threads that match a question.

``plan_threads`` reads the unthreaded memories (oldest first) and the threads of their scopes,
decides with ``nous.memory.threading`` and returns the write ops. The ops are guarded: a new
thread's insert fails if the id exists, a thread's update is a compare-and-swap on its version
and a membership insert fails if the memory is in a thread already, so two runs that decide from
the same state cannot both write; the loser's transaction rolls back whole and it is redone from
what the winner stored (the event pipeline retries it; ``build_threads`` redoes it at once). A
run over memories that are all threaded finds nothing to do: running it twice changes nothing.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

import numpy as np

from nous._time import utcnow
from nous.errors import ConflictError
from nous.language.lexicon import GENERIC
from nous.language.prose import prose_sentences
from nous.language.topics import clean_message, key_phrases, names_a_thing, title_of, without_edge_verbs
from nous.memory.threading import ThreadItem, ThreadState, item_words, kept_keywords, thread_all
from nous.models import Episode, Memory, MemoryKind, Turn
from nous.models.threads import Thread, ThreadMember
from nous.storage import Store, WriteOp
from nous.storage.base import AddThreadMember, ClearThreads, DropThread, PutThread, ThreadRecord

THREADED_KINDS = (MemoryKind.TURN, MemoryKind.FACT, MemoryKind.DECISION, MemoryKind.EPISODE)
BATCH = 2000  # memories threaded per run (an event's handler); the next run takes the rest
OPENING_CHARS = 60  # a one-memory thread is labelled by this much of its memory
LABEL_MEMBERS = 40  # a label is drawn from a thread's first and newest this many members each
ASSISTANT_WEIGHT = 0.5  # an assistant's words tell a topic less than a person's
MAX_THREADS = 100_000  # threads read at once (a scope's threads, to thread into or rank)
T = TypeVar("T")
_NAMESPACE = uuid.UUID("5b0c6c0e-8f1e-4e55-9d7e-6e6f75730010")


def thread_text(memory: Memory) -> str:
    """The words of a memory that say its topic: a turn's own text, an episode's title and summary."""
    if isinstance(memory, Episode):
        return "\n".join(p for p in (memory.title, memory.summary, memory.content) if p)
    if isinstance(memory, Turn):
        return _without_vocatives(memory.said())
    return memory.content


# A name said to the other speaker ("Thanks, Gina!", "Hey Jon!", "Way to go, Jon!"): in a chat
# between two people it is in every other message, whatever they talk about.
_VOCATIVE = re.compile(
    r"(?:(?i:\b(?:hey|hi|hello|thanks|thank you|bye|congrats|congratulations|wow|oh|yay|sure|yeah|yes|"
    r"great|cool))[,!]?\s+|,\s*)[A-Z][a-z]+(?=\s*[!?,])"
)
_NAME_BEFORE = re.compile(r"\b[A-Z][a-z]+$")


def _without_vocatives(text: str) -> str:
    """``text`` without the names said to the other speaker. A name after a comma that follows
    another name is a list or a place ("Rome, Paris, and London"; "Paris, France, in May"), kept."""

    def drop(match: re.Match[str]) -> str:
        listed = match.group(0).startswith(",") and _NAME_BEFORE.search(text, 0, match.start())
        return match.group(0) if listed else ""

    return _VOCATIVE.sub(drop, text)


def thread_item(memory: Memory, vector: np.ndarray) -> ThreadItem:
    """A memory as threading sees it: the same words whenever it is read (joining a thread in a
    batch, or leaving it alone on a forget), so a thread's counts add up."""
    return ThreadItem(
        id=memory.id,
        user_id=memory.user_id,
        session_id=memory.session_id,
        occurred_at=memory.occurred_at,
        vector=vector,
        words=item_words(thread_text(memory), _own_names(memory)),
    )


def _own_names(memory: Memory) -> set[str]:
    """The words of the people a memory names by its role: a turn's speaker, a fact's subject.
    Every fact about Gina and every message Jon sends carries the name whatever the topic, so it
    ties no thread (the other speaker's name said to them is left out by ``thread_text``)."""
    named = memory.speaker if isinstance(memory, Turn) else getattr(memory, "subject", None)
    return {w.lower() for w in named.split()} if named else set()


def _weight(memory: Memory) -> float:
    return ASSISTANT_WEIGHT if isinstance(memory, Turn) and memory.role == "assistant" else 1.0


def _names(memories: Iterable[Memory]) -> set[str]:
    return {m.speaker for m in memories if isinstance(m, Turn) and m.speaker}


def label_of(
    memories: list[Memory], keywords: dict[str, int], at: datetime | None, names: Iterable[str] = ()
) -> str:
    """A thread's label: the key phrases of its members' prose (people's words first), else its
    most frequent words, else its date. The speakers' ``names`` (and the members' own) are people,
    never a topic: a thread of one speaker's turns names the other often ("Thanks, Jon!"). A
    thread of one memory is that memory: its opening words say it best."""
    if len(memories) == 1 and (opening := _opening(memories[0])):
        return opening
    said = [
        (sentence, _weight(m))
        for m in memories
        for sentence in prose_sentences(clean_message(thread_text(m)))
    ]
    found = key_phrases(said, names=_names(memories) | set(names), limit=3) if said else []
    phrases = list(dict.fromkeys(p for p in map(without_edge_verbs, found) if p and names_a_thing(p)))
    if phrases:
        return title_of(phrases)
    people = {w.lower() for n in (*_names(memories), *names) for w in n.split()}
    ranked = sorted(keywords.items(), key=lambda kv: (-kv[1], kv[0]))
    words = [w for w, _ in ranked if w not in people and w not in GENERIC][:3]
    return title_of(words, at)


def _opening(memory: Memory) -> str:
    """A memory's first words as a label, clipped at a word: "Wow! You've got drive! Keep it up…";
    an episode's title."""
    if isinstance(memory, Episode) and memory.title:
        return memory.title[: OPENING_CHARS * 2]
    said = memory.said() if isinstance(memory, Turn) else thread_text(memory)
    text = " ".join(clean_message(said).split())
    if len(text) <= OPENING_CHARS:
        return text
    return text[: text.rfind(" ", 0, OPENING_CHARS)].rstrip(",;:") + "…"


def _state(record: ThreadRecord) -> ThreadState:
    return ThreadState(
        id=record.id,
        user_id=record.user_id,
        vector_sum=record.vector_sum,
        size=record.size,
        keywords=dict(record.keywords),
        first_at=record.first_at,
        last_at=record.last_at,
        last_session=record.last_session,
    )


def new_thread_id(agent_id: str, first_memory_id: str) -> str:
    """A new thread's id, derived from its first member: a rebuild gives the same ids."""
    return str(uuid.uuid5(_NAMESPACE, f"{agent_id}\x1f{first_memory_id}"))


async def plan_threads(store: Store, agent_id: str, *, limit: int = BATCH) -> tuple[list[WriteOp], int]:
    """The write ops that thread up to ``limit`` unthreaded memories (oldest first), and how many
    memories they thread (0: nothing to do)."""
    ids = await store.unthreaded(agent_id, THREADED_KINDS, limit)
    if not ids:
        return [], 0
    memories = await store.get_many(agent_id, ids)
    vectors = await store.vectors(agent_id, ids)
    items = [thread_item(memories[i], vectors[i]) for i in ids if i in memories and i in vectors]
    records: dict[str, ThreadRecord] = {}
    for user_id in {item.user_id for item in items}:
        for record in await store.threads(agent_id, user_id=user_id, limit=MAX_THREADS, live=False):
            records[record.id] = record
    pairs, threads = thread_all(
        items, [_state(r) for r in records.values()], lambda item: new_thread_id(agent_id, item.id)
    )
    at = utcnow()
    by_id = {item.id: item for item in items}
    members: dict[str, list[Memory]] = {}
    for memory_id, thread_id in pairs:
        members.setdefault(thread_id, []).append(memories[memory_id])
    ops: list[WriteOp] = []
    speakers = _names(memories.values())
    for thread in (t for t in threads if t.changed):
        known = records.get(thread.id)
        sample = await _label_sample(store, agent_id, thread.id, members[thread.id], known is not None)
        updated = ThreadRecord(
            id=thread.id,
            agent_id=agent_id,
            user_id=thread.user_id,
            label=label_of(sample, thread.keywords, thread.first_at, speakers),
            size=thread.size,
            vector_sum=thread.vector_sum.astype(np.float32),
            keywords=thread.keywords,
            first_at=thread.first_at,
            last_at=thread.last_at,
            last_session=thread.last_session,
            created_at=known.created_at if known else at,
            updated_at=at,
        )
        ops.append(PutThread(updated, expect_version=known.version if known else None))
    ops += [
        AddThreadMember(agent_id, thread_id, memory_id, by_id[memory_id].occurred_at, at)
        for memory_id, thread_id in pairs
    ]
    return ops, len(pairs)


async def _label_sample(
    store: Store, agent_id: str, thread_id: str, added: list[Memory], stored: bool
) -> list[Memory]:
    """The members a label is drawn from: the first and newest ``LABEL_MEMBERS``."""
    if not stored:
        return _ends(added)
    known = [mid for mid, _ in await store.thread_members(agent_id, thread_id)]
    ids = _ends(known)
    old = await store.get_many(agent_id, ids)
    return _ends([*(old[i] for i in ids if i in old), *added])


def _ends(values: list[T]) -> list[T]:
    if len(values) <= 2 * LABEL_MEMBERS:
        return values
    return [*values[:LABEL_MEMBERS], *values[-LABEL_MEMBERS:]]


async def build_threads(
    store: Store, agent_id: str, *, rebuild: bool = False, repair: bool = True, attempts: int = 5
) -> int:
    """Thread every unthreaded memory now (``rebuild``: drop every thread first and thread all
    memories again), after deriving again, with ``repair``, the threads a forget, purge or restore
    left stale (``repair_threads``: it reads every membership, so the event pipeline leaves it to
    ``maintain``); how many memories were threaded. A run that lost a race to another
    (ConflictError) is redone from what is stored."""
    if rebuild:
        await store.apply([ClearThreads(agent_id)])
    elif repair:
        await repair_threads(store, agent_id, attempts=attempts)
    total, failures = 0, 0
    while True:
        ops, count = await plan_threads(store, agent_id)
        if not count:
            return total
        try:
            await store.apply(ops)
        except ConflictError:
            failures += 1
            if failures >= attempts:
                raise
            continue
        total += count


async def plan_thread_repairs(store: Store, agent_id: str, thread_ids: list[str]) -> list[WriteOp]:
    """The write ops that derive each of ``thread_ids`` again from its active members: its
    centroid, word counts, size, times and label, as if those members had been threaded alone
    (a forgotten memory's words leave its thread's label and its meaning the thread's centroid);
    a thread with none left is dropped. Each write is guarded by the thread's version."""
    ops: list[WriteOp] = []
    for record in await store.threads(agent_id, ids=thread_ids, limit=len(thread_ids), live=False):
        ids = [mid for mid, _ in await store.thread_members(agent_id, record.id)]
        memories = await store.get_many(agent_id, ids)
        vectors = await store.vectors(agent_id, ids)
        kept = [memories[i] for i in ids if i in memories and i in vectors]
        if not kept and not any(i in memories for i in ids):
            ops.append(DropThread(agent_id, record.id, record.version))
            continue
        state = ThreadState(id=record.id, user_id=record.user_id, vector_sum=np.zeros_like(record.vector_sum))
        for memory in kept:
            state.add(thread_item(memory, vectors[memory.id]))
        repaired = replace(
            record,
            label=label_of(_ends(kept), state.keywords, state.first_at, _names(kept)),
            size=sum(i in memories for i in ids),  # one waiting for its embedding counts too
            vector_sum=state.vector_sum.astype(np.float32),
            keywords=state.keywords,
            first_at=state.first_at,
            last_at=state.last_at,
            last_session=state.last_session,
            updated_at=utcnow(),
        )
        ops.append(PutThread(repaired, expect_version=record.version))
    return ops


async def plan_member_change(
    store: Store, agent_id: str, thread_id: str, *, removed: ThreadItem | None, added: ThreadItem | None
) -> list[WriteOp]:
    """The write ops for one member of a thread leaving it (``removed``: forgotten or purged, or
    its old text), joining it again (``added``: restored, or its new text), or both (an edit):
    the stored sum and word counts less the one and plus the other, the size and times from the
    active members, the label from a sample of them. Its cost does not grow with the thread. A
    thread whose stored size does not add up (stale already) is derived whole
    (``plan_thread_repairs``); one with no member left is dropped."""
    found = await store.threads(agent_id, ids=[thread_id], limit=1, live=False)
    if not found:
        return []
    record = found[0]
    order = await store.thread_members(agent_id, thread_id)
    if record.size - (removed is not None) + (added is not None) != len(order):
        return await plan_thread_repairs(store, agent_id, [thread_id])
    if not order:
        return [DropThread(agent_id, thread_id, record.version)]
    vector_sum = record.vector_sum.astype(np.float32)
    counts = Counter(record.keywords)
    if removed is not None:
        vector_sum = vector_sum - removed.vector
        counts.subtract(set(removed.words))
    if added is not None:
        vector_sum = vector_sum + added.vector
        counts.update(set(added.words))
    keywords = kept_keywords(counts)
    sample_ids = _ends([mid for mid, _ in order])
    sample = await store.get_many(agent_id, sample_ids)
    shown = [sample[i] for i in sample_ids if i in sample]
    newest = sample.get(order[-1][0])
    changed = replace(
        record,
        label=label_of(shown, keywords, order[0][1], _names(shown)),
        size=len(order),
        vector_sum=vector_sum.astype(np.float32),
        keywords=keywords,
        first_at=order[0][1],
        last_at=order[-1][1],
        last_session=newest.session_id if newest is not None else record.last_session,
        updated_at=utcnow(),
    )
    return [PutThread(changed, expect_version=record.version)]


async def change_member(
    store: Store,
    agent_id: str,
    thread_id: str,
    *,
    removed: ThreadItem | None = None,
    added: ThreadItem | None = None,
    attempts: int = 5,
) -> None:
    """Apply ``plan_member_change``; a write that lost a race is planned again from what is
    stored (then the sizes may not add up, and the thread is derived whole)."""
    for attempt in range(attempts):
        try:
            await store.apply(
                await plan_member_change(store, agent_id, thread_id, removed=removed, added=added)
            )
            return
        except ConflictError:
            if attempt + 1 == attempts:
                raise


async def repair_threads(
    store: Store, agent_id: str, thread_ids: list[str] | None = None, *, attempts: int = 5
) -> int:
    """Derive again up to ``BATCH`` stale threads (among ``thread_ids`` if given;
    ``Store.stale_threads``) from their active members; how many were repaired or dropped. A run
    that lost a race to another is redone from what is stored."""
    for attempt in range(attempts):
        stale = await store.stale_threads(agent_id, ids=thread_ids, limit=BATCH)
        if not stale:
            return 0
        try:
            await store.apply(await plan_thread_repairs(store, agent_id, stale))
        except ConflictError:
            if attempt + 1 == attempts:
                raise
            continue
        return len(stale)
    return 0


def thread_scores(
    threads: list[ThreadRecord], vector: np.ndarray, words: list[str], *, words_weight: float
) -> list[float]:
    """How well each thread matches a question: the cosine of its centroid to the question's
    embedding, plus ``words_weight`` times the share of the question's words among its frequent
    words."""
    wanted = set(words)
    out = []
    for t in threads:
        norm = float(np.linalg.norm(t.vector_sum)) or 1.0
        cosine = float(t.vector_sum @ vector) / norm
        share = len(wanted.intersection(t.keywords)) / len(wanted) if wanted else 0.0
        out.append(cosine + words_weight * share)
    return out


def thread_model(
    record: ThreadRecord, *, score: float | None = None, members: list[ThreadMember] | None = None
) -> Thread:
    """A stored thread as the API shows it."""
    return Thread(
        id=record.id,
        user_id=record.user_id,
        label=record.label,
        size=len(members) if members is not None else record.size,
        first_at=members[0].occurred_at if members else record.first_at,
        last_at=members[-1].occurred_at if members else record.last_at,
        keywords=[w for w, _ in sorted(record.keywords.items(), key=lambda kv: (-kv[1], kv[0]))[:10]],
        score=score,
        created_at=record.created_at,
        updated_at=record.updated_at,
        members=members,
    )


def thread_member(memory: Memory) -> ThreadMember:
    """A member memory as a timeline shows it."""
    return ThreadMember(
        memory_id=memory.id,
        kind=memory.kind,
        occurred_at=memory.occurred_at,
        session_id=memory.session_id,
        speaker=(memory.speaker or memory.role) if isinstance(memory, Turn) else None,
        content=_shown(memory),
    )


def _shown(memory: Memory) -> str:
    """A member's text in a timeline: a turn's words (its speaker is shown apart), an episode's
    title and summary (each once)."""
    if isinstance(memory, Turn):
        return memory.said()
    if isinstance(memory, Episode):
        parts = [p.strip() for p in (memory.title, memory.summary or memory.content) if p and p.strip()]
        return " — ".join(dict.fromkeys(parts))
    return memory.content
