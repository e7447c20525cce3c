"""Topic threads on both backends: a user who talks about two topics across sessions gets (at
least) two threads, each holding its topic's messages in time order; threading again, or
rebuilding, gives the same threads; a forgotten memory leaves its thread; another user's
memories never join this user's threads, nor show over REST, MCP or the inspector (issue 32,
item 1)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import pytest

from nous import Nous, Settings
from nous.errors import ConflictError
from nous.memory.threading import ThreadItem, thread_all
from nous.memory.threads import plan_thread_repairs, plan_threads
from nous.server import create_key
from nous.storage.base import PutThread
from tests.test_server import LiveServer, live

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

GARDEN = [
    "I want to grow tomatoes in my garden this spring, the raised beds get full sun.",
    "For tomatoes in raised beds, water deeply twice a week and stake the plants early.",
    "The tomato seedlings in my garden have yellow leaves now, what is wrong with them?",
    "Yellow leaves on tomato seedlings usually mean overwatering; let the garden soil dry between waterings.",
    "My tomatoes are finally ripening in the garden beds, the first harvest is this week!",
    "Harvest the ripe tomatoes when they are fully red and store them out of the fridge.",
]
MARATHON = [
    "I signed up for the Berlin marathon in September and need a running training plan.",
    "A marathon training plan: build weekly mileage slowly, with one long run every Sunday.",
    "My long run for the marathon was 25 kilometres today and my knees hurt afterwards.",
    "Knee pain after long runs: check your running shoes and add strength training twice a week.",
    "I bought new running shoes for the marathon and the long runs feel much better now.",
    "Good running shoes help; taper your marathon training in the last three weeks before race day.",
]


def chat() -> dict[str, Any]:
    """Three sessions weeks apart; topics alternate within and across sessions."""
    order = [
        ("s1", GARDEN[0:2]),
        ("s1", MARATHON[0:2]),
        ("s2", MARATHON[2:4]),
        ("s2", GARDEN[2:4]),
        ("s3", GARDEN[4:6]),
        ("s3", MARATHON[4:6]),
    ]
    sessions: dict[str, list[dict[str, str]]] = {}
    for session, (question, answer) in order:
        messages = sessions.setdefault(session, [])
        for role, text in (("user", question), ("assistant", answer)):
            messages.append({"id": f"{session}:{len(messages)}", "role": role, "content": text})
    return {
        "id": "topics",
        "sessions": [
            {"id": sid, "started_at": (T0 + timedelta(days=14 * n)).isoformat(), "messages": msgs}
            for n, (sid, msgs) in enumerate(sessions.items())
        ],
    }


def _said(content: str) -> str:
    """A turn's text without its speaker ("user: ...")."""
    return content.split(": ", 1)[1] if content.startswith(("user: ", "assistant: ")) else content


async def _threads_by_topic(nous: Nous, user_id: str) -> dict[str, list[str]]:
    """Each topic's thread: the thread holding most of its messages, as member contents in order."""
    found: dict[str, list[str]] = {}
    for thread in [t for t in await nous.threads(user_id=user_id, limit=50) if t.user_id == user_id]:
        full = await nous.thread(thread.id)
        assert full.members is not None
        times = [m.occurred_at for m in full.members]
        assert times == sorted(times)
        contents = [_said(m.content) for m in full.members]
        for name, topic in (("garden", GARDEN), ("marathon", MARATHON)):
            if sum(c in topic for c in contents) > sum(c in topic for c in found.get(name, [])):
                found[name] = contents
    return found


async def test_two_topics_across_sessions_make_two_threads(nous: Nous) -> None:
    await nous.ingest(json.dumps(chat()), user_id="ana")
    await nous.process_events()
    threads = [t for t in await nous.threads(user_id="ana", limit=50) if t.user_id == "ana"]
    assert len(threads) >= 2
    assert all(t.label for t in threads)
    by_topic = await _threads_by_topic(nous, "ana")
    garden, marathon = by_topic["garden"], by_topic["marathon"]
    assert garden != marathon
    # each topic's thread holds most of its messages and none of the other topic's
    assert sum(c in GARDEN for c in garden) >= 5 and not any(c in MARATHON for c in garden)
    assert sum(c in MARATHON for c in marathon) >= 5 and not any(c in GARDEN for c in marathon)
    # members run in time order across the three sessions
    assert [c for c in garden if c in GARDEN] == [c for c in GARDEN if c in garden]
    # a query finds the matching thread first
    best = await nous.threads(user_id="ana", query="how is my marathon training going?")
    assert best[0].score is not None
    assert any(
        c in MARATHON for c in [_said(m.content) for m in (await nous.thread(best[0].id)).members or []]
    )


async def _snapshot(nous: Nous) -> dict[str, tuple[str, list[str]]]:
    """Every thread: its label and its members' ids in order."""
    out = {}
    for t in await nous.threads(limit=100):
        members = (await nous.thread(t.id)).members or []
        out[t.id] = (t.label, [m.memory_id for m in members])
    return out


async def test_threading_is_idempotent_and_a_rebuild_is_reproducible(nous: Nous) -> None:
    await nous.ingest(json.dumps(chat()), user_id="ana")
    await nous.process_events()
    built = await _snapshot(nous)
    assert await nous.build_threads() == 0  # nothing left to thread: a second run changes nothing
    assert (await nous.maintain()).threaded == 0
    assert await _snapshot(nous) == built
    # a rebuild threads every memory again in time order (not in the order they arrived, so its
    # threads may differ from those built as events came), and the same every time
    report = await nous.maintain(rebuild_threads=True)
    assert report.threaded == sum(len(members) for _, members in built.values())
    rebuilt = await _snapshot(nous)
    assert await nous.build_threads(rebuild=True) == report.threaded
    assert await _snapshot(nous) == rebuilt


async def test_forgotten_memories_leave_threads_and_users_stay_apart(nous: Nous) -> None:
    await nous.ingest(json.dumps(chat()), user_id="ana")
    other = chat()
    other["id"] = "topics-bob"
    await nous.ingest(json.dumps(other), user_id="bob")
    await nous.process_events()
    ana = [t for t in await nous.threads(user_id="ana", limit=50) if t.user_id == "ana"]
    bob = [t for t in await nous.threads(user_id="bob", limit=50) if t.user_id == "bob"]
    assert ana and bob and {t.user_id for t in ana} == {"ana"} and {t.user_id for t in bob} == {"bob"}
    for thread in ana:
        members = (await nous.thread(thread.id)).members or []
        assert {(await nous.get(m.memory_id)).user_id for m in members} == {"ana"}
    thread = await nous.thread(ana[0].id)
    assert thread.members
    gone = thread.members[0].memory_id
    await nous.forget(gone)
    again = await nous.thread(ana[0].id)
    assert gone not in [m.memory_id for m in again.members or []]
    assert again.size == thread.size - 1


CUSTODY = [
    "My divorce lawyer Hannah Gruber says the custody hearing is in May.",
    "The custody hearing with Hannah Gruber moved to June.",
    "Hannah Gruber wants the custody documents by Friday.",
]


async def _custody_thread(nous: Nous) -> tuple[str, list[str]]:
    """Three facts of one topic threaded together: the thread's id and the facts' ids."""
    ids = [(await nous.learn(text, user_id="ana", dedup=False)).id for text in CUSTODY]
    await nous.build_threads()
    threads = await nous.store.thread_of(nous.agent_id, ids)
    assert len(set(threads.values())) == 1, threads  # one topic, one thread
    return next(iter(threads.values())), ids


async def _stored(nous: Nous, thread_id: str) -> Any:
    """The thread's stored state (not the live count the API shows)."""
    found = await nous.store.threads(nous.agent_id, ids=[thread_id], limit=1, live=False)
    return found[0] if found else None


async def test_a_forget_derives_the_thread_again_and_a_purge_leaves_no_trace(nous: Nous) -> None:
    """A forgotten member leaves its thread's state, not only its member list: the stored size,
    centroid and words are those of the members left, a restore brings it back, and a thread
    whose members are all purged is gone with its label (which named them)."""
    thread_id, ids = await _custody_thread(nous)
    before = await _stored(nous, thread_id)
    assert before.size == 3 and "hannah" in before.keywords
    await nous.forget(ids[0])
    after = await _stored(nous, thread_id)
    assert after.size == 2 and after.version > before.version
    assert await nous.store.stale_threads(nous.agent_id) == []
    vectors = await nous.store.vectors(nous.agent_id, ids[1:])
    assert np.allclose(after.vector_sum, vectors[ids[1]] + vectors[ids[2]], atol=1e-5)
    assert (await nous.thread(thread_id)).size == 2
    # the forget moved the stored state by one member; deriving it whole gives the same state
    (whole,) = await plan_thread_repairs(nous.store, nous.agent_id, [thread_id])
    assert isinstance(whole, PutThread)
    assert (whole.thread.label, whole.thread.size, whole.thread.keywords) == (
        after.label,
        after.size,
        after.keywords,
    )
    assert np.allclose(whole.thread.vector_sum, after.vector_sum, atol=1e-5)
    await nous.restore(ids[0])
    assert (await _stored(nous, thread_id)).size == 3
    for memory_id in ids:
        await nous.forget(memory_id, hard=True)
    assert await _stored(nous, thread_id) is None  # no row keeps "Hannah Gruber and custody hearing"
    assert await nous.store.thread_of(nous.agent_id, ids) == {}
    assert thread_id not in [t.id for t in await nous.threads(limit=100)]


async def test_an_edit_relabels_the_thread_and_maintain_heals_a_stale_one(nous: Nous) -> None:
    thread_id, ids = await _custody_thread(nous)
    label = (await _stored(nous, thread_id)).label
    assert "hannah" in label.lower() or "custody" in label.lower()
    for memory_id, text in zip(
        ids,
        [
            "My sister bakes sourdough bread every Sunday.",
            "The sourdough starter needs feeding with rye flour.",
            "Sourdough bread with a rye starter rises overnight.",
        ],
        strict=True,
    ):
        await nous.update(memory_id, content=text)
    relabelled = await _stored(nous, thread_id)
    assert "custody" not in relabelled.label.lower() and "hannah" not in relabelled.label.lower()
    assert "hannah" not in relabelled.keywords and "sourdough" in relabelled.keywords
    # a memory deactivated by another path (here the repository itself) leaves the thread stale
    # until the next ``maintain`` derives it again
    await nous.repo.update(ids[2], {"active": False})
    assert await nous.store.stale_threads(nous.agent_id) == [thread_id]
    await nous.maintain()
    assert await nous.store.stale_threads(nous.agent_id) == []
    assert (await _stored(nous, thread_id)).size == 2


async def test_two_runs_deciding_from_the_same_state_cannot_both_write(nous: Nous) -> None:
    """Read-decide-write is guarded: the run that writes second fails whole (its event is retried
    and then finds the memories threaded), whether it would start the same threads, add to a
    thread the first changed, or thread a memory the first threaded."""
    await nous.ingest(json.dumps(chat()), user_id="ana")  # no events processed: nothing threaded
    first, count = await plan_threads(nous.store, nous.agent_id)
    second, _ = await plan_threads(nous.store, nous.agent_id)
    assert count >= len(GARDEN) + len(MARATHON)
    await nous.store.apply(first)
    built = await _snapshot(nous)
    with pytest.raises(ConflictError):
        await nous.store.apply(second)
    assert await _snapshot(nous) == built
    await nous.learn("Ana's tomato plants in the garden beds need more sun", user_id="ana")
    one, added = await plan_threads(nous.store, nous.agent_id)
    other, _ = await plan_threads(nous.store, nous.agent_id)
    assert added == 1
    await nous.store.apply(one)
    grown = await _snapshot(nous)
    with pytest.raises(ConflictError):
        await nous.store.apply(other)
    assert await _snapshot(nous) == grown
    assert (await plan_threads(nous.store, nous.agent_id))[1] == 0


def test_threading_is_deterministic_and_incremental() -> None:
    """Threading in one run or in two (the second continuing from the first's state) agrees."""
    rng = np.random.default_rng(7)
    topics = rng.normal(size=(3, 16))
    items = []
    for i in range(60):
        v = topics[i % 3] + 0.3 * rng.normal(size=16)
        items.append(
            ThreadItem(
                id=f"m{i:02d}",
                user_id=None,
                session_id=f"s{i // 20}",
                occurred_at=T0 + timedelta(minutes=i),
                vector=(v / np.linalg.norm(v)).astype(np.float32),
                words=[],
            )
        )
    whole, threads = thread_all(items, [], lambda item: f"t:{item.id}")
    first, state = thread_all(items[:30], [], lambda item: f"t:{item.id}")
    for t in state:
        t.changed = t.new = False
    rest, _ = thread_all(items[30:], state, lambda item: f"t:{item.id}")
    assert dict(whole) == dict(first + rest)
    assert len(threads) == 3


# -- the interfaces: REST, MCP, the inspector --------------------------------------------------
async def _two_users(settings: Settings) -> dict[str, str]:
    """Ana's and Bob's chats threaded, and keys: the agent's, Ana's and Bob's."""
    async with Nous(settings, agent_id="agent-a") as nous:
        await nous.ingest(json.dumps(chat()), user_id="ana")
        bobs = chat()
        bobs["id"] = "topics-bob"
        await nous.ingest(json.dumps(bobs), user_id="bob")
        await nous.process_events()
        return {
            name: (await create_key(nous.store, agent_id="agent-a", user_id=user))[1]
            for name, user in {"agent": None, "ana": "ana", "bob": "bob"}.items()
        }


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _two_users) as pair:
        yield pair


def _get(server: LiveServer, key: str, path: str, **params: Any) -> httpx.Response:
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        return client.get(path, params=params)


async def test_rest_mcp_and_inspector_show_a_users_threads_only(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    server, keys = served
    every = _get(server, keys["agent"], "/v1/threads", limit=100).json()["items"]
    assert {t["user_id"] for t in every} == {"ana", "bob"}
    anas = _get(server, keys["ana"], "/v1/threads", limit=100).json()["items"]
    assert anas and {t["user_id"] for t in anas} == {"ana"}
    # pages of one follow each other's cursor through the same threads, in the same order
    paged, cursor = [], None
    while True:
        page = _get(server, keys["agent"], "/v1/threads", limit=1, **({"cursor": cursor} if cursor else {}))
        assert page.status_code == 200 and len(page.json()["items"]) == 1
        paged += [t["id"] for t in page.json()["items"]]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            break
    assert paged == [t["id"] for t in every]
    assert _get(server, keys["agent"], "/v1/threads", cursor="x1").status_code == 422
    bobs_thread = next(t["id"] for t in every if t["user_id"] == "bob")
    # another user's thread answers as a missing one does
    hidden = _get(server, keys["ana"], f"/v1/threads/{bobs_thread}")
    missing = _get(server, keys["ana"], "/v1/threads/no-such-thread")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["detail"].replace(bobs_thread, "X") == missing.json()["detail"].replace(
        "no-such-thread", "X"
    )
    best = _get(server, keys["ana"], "/v1/threads", query="tomato seedlings with yellow leaves", limit=1)
    thread = _get(server, keys["ana"], f"/v1/threads/{best.json()['items'][0]['id']}").json()
    times = [m["occurred_at"] for m in thread["members"]]
    assert times == sorted(times) and any("tomato" in m["content"] for m in thread["members"])
    # the longest query allowed fits the request line even at four bytes a character; longer is a 422
    assert _get(server, keys["ana"], "/v1/threads", query="\U0001f345" * 1000).status_code == 200
    too_long = _get(server, keys["ana"], "/v1/threads", query="\U0001f345" * 1001)
    assert too_long.status_code == 422 and too_long.json()["field"] == "query"
    bob_ids = {
        m["memory_id"] for m in _get(server, keys["bob"], f"/v1/threads/{bobs_thread}").json()["members"]
    }

    # MCP: the timeline of a topic, as dated lines, from the caller's threads only
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {keys['ana']}"}, timeout=60)
    async with Client(streamable_http_client(f"{server.url}/mcp/", http_client=http)) as mcp:
        result = await mcp.call_tool(
            "timeline", {"topic": "marathon training and running shoes", "threads": 5}
        )
    assert not result.is_error
    text = json.dumps(result.structured_content)
    assert "marathon" in text and "2026-03-" in text
    assert not any(i in text for i in bob_ids)

    # the inspector: the list links each thread's page, which lists its members in time order
    listed = _get(server, keys["ana"], "/ui/threads")
    assert listed.status_code == 200 and f"/ui/threads/{thread['id']}" in listed.text
    page = _get(server, keys["ana"], f"/ui/threads/{thread['id']}")
    assert page.status_code == 200 and "<script" not in page.text
    links = re.findall(r'href="/ui/memories/([^"]+)"', page.text)
    assert links == [m["memory_id"] for m in thread["members"]]
    assert _get(server, keys["ana"], f"/ui/threads/{bobs_thread}").status_code == 404


def test_a_long_timeline_is_sampled_evenly_and_its_lines_kept_to_one() -> None:
    from nous._sequences import spread
    from nous.server.mcp_tools import _clip

    assert spread(list(range(10)), 40) == list(range(10))
    assert spread(list(range(10)), 1) == [0] and spread(list(range(10)), 0) == []
    sampled = spread(list(range(101)), 5)
    assert sampled == [0, 25, 50, 75, 100]  # the first and the last kept, evenly between
    assert _clip("user said:\n\n### Plan\n1. **first**", 300) == "user said: ### Plan 1. **first**"
    clipped = _clip("word " * 100, 30)
    assert len(clipped) == 30 and clipped.endswith("…")


def test_labels_do_not_start_or_end_on_a_verb() -> None:
    from nous.language.topics import without_edge_verbs

    assert without_edge_verbs("adopt incremental typechecking") == "incremental typechecking"
    assert without_edge_verbs("production happen") == "production"
    assert without_edge_verbs("Jonas cannot") == "Jonas"
    assert without_edge_verbs("partial writes") == "partial writes"  # a plural noun there
    assert without_edge_verbs("went hiking trip") == "hiking trip"  # a gerund is kept
    assert without_edge_verbs("deploy") == ""


def test_a_label_from_keywords_names_no_speaker_and_no_chat_word() -> None:
    """With no telling phrase, a label falls back to the thread's commonest words: the speakers'
    names ("Thanks, Gina!") and chat words ("bye") are no topic."""
    from nous.memory.threads import label_of

    at = datetime(2023, 6, 1, tzinfo=UTC)
    keywords = {"gina": 9, "bye": 8, "jon": 7, "studio": 5, "fashion": 4, "dance": 3}
    label = label_of([], keywords, at, names=["Jon", "Gina"])
    assert label == "Studio: fashion and dance"


def test_a_date_ties_no_thread() -> None:
    """A month or a weekday is when, not what: two memories that both say "May" or "Friday" are
    not on one topic for it."""
    from nous.memory.threading import item_words

    words = item_words("Cutover of the payments ledger is planned for May 5; the sync moves to Friday.")
    assert "ledger" in words and "cutover" in words
    assert not {"may", "friday"} & set(words)


def test_the_peoples_names_tie_no_thread() -> None:
    """In a chat between Jon and Gina each says the other's name every few messages, and every
    fact about Gina carries hers: a turn's speaker, the name said to the other speaker and a
    fact's subject are not among the words that tie a memory to a topic. The words are the
    memory's own, the same however it is read (threaded in a batch, or leaving on a forget)."""
    from nous.memory.threads import thread_item
    from nous.models import Fact, Turn

    at = datetime(2023, 6, 1, tzinfo=UTC)
    turn = Turn(
        agent_id="a",
        content="Jon: Thanks, Gina! The dance studio opens on Monday.",
        speaker="Jon",
        occurred_at=at,
    )
    fact = Fact(agent_id="a", content="Gina opened an online clothing store.", subject="Gina", occurred_at=at)
    vector = np.ones(4, dtype=np.float32) / 2
    for memory in (turn, fact):
        words = thread_item(memory, vector).words
        assert words and not {"gina", "jon"} & set(words), words
        assert thread_item(memory, vector).words == words
    assert "studio" in thread_item(turn, vector).words
    assert "store" in thread_item(fact, vector).words
    place = Turn(agent_id="a", content="Jon: We went to Paris, France.", speaker="Jon", occurred_at=at)
    assert "france" in thread_item(place, vector).words  # a place after a comma is no name said to someone
    places = Turn(
        agent_id="a",
        content="Jon: Thanks, Gina! We saw Rome, Paris, and Lyon, France, in May.",
        speaker="Jon",
    )
    kept = set(thread_item(places, vector).words)
    assert {"rome", "paris", "lyon", "france"} <= kept and "gina" not in kept, kept


def test_a_one_memory_thread_is_labelled_by_its_opening() -> None:
    from nous.memory.threads import label_of
    from nous.models import Turn

    at = datetime(2024, 5, 1, tzinfo=UTC)
    cheer = Turn(
        agent_id="a", content="Gina: Wow! You've got drive! Keep it up and you'll make it.", speaker="Gina"
    )
    assert label_of([cheer], {}, at) == "Wow! You've got drive! Keep it up and you'll make it."
    long = Turn(
        agent_id="a",
        content="Jon: Wow, Gina, I'm stoked about this! Taking a risk is scary, but I'm ready for it.",
        speaker="Jon",
    )
    assert label_of([long], {}, at) == "Wow, Gina, I'm stoked about this! Taking a risk is scary…"
    topical = Turn(agent_id="a", content="Jon: The dance studio needs a sprung floor.", speaker="Jon")
    assert label_of([topical], {}, at) == "The dance studio needs a sprung floor."
    assert label_of([topical, cheer], {}, at) == "Dance studio"  # two memories: their topic


def test_a_label_names_things_and_a_one_episode_thread_is_its_title() -> None:
    """ "Turtles: cute and life" read as a label with an adjective for a topic; "gorgeous",
    "anytime" and "comfy" name nothing, while a noun, a gerund or a word the lexicon does not
    know (a product) does. A thread of one episode is labelled by the episode's title, once."""
    from nous.language.topics import names_a_thing
    from nous.memory.threads import label_of
    from nous.models import Episode

    for phrase in ("gorgeous", "anytime", "comfy", "feels"):
        assert not names_a_thing(phrase), phrase
    for phrase in ("hair", "gaming", "Formspree API", "color looks", "back"):
        assert names_a_thing(phrase), phrase
    at = datetime(2023, 6, 1, tzinfo=UTC)
    episode = Episode(
        agent_id="a",
        content="High scores: meetings and feels",
        title="High scores: meetings and feels",
        summary="Nate talked about his high scores and a meeting.",
        started_at=at,
        occurred_at=at,
    )
    assert label_of([episode], {}, at) == "High scores: meetings and feels"
