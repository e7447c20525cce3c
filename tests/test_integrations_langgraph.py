"""NousStore under real LangGraph: the BaseStore contract (get, put, search, delete,
list_namespaces, blocking and async), dedup and history through Nous, and a compiled graph whose
nodes write and read memories through the store, on both backends."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, PutOp

from nous import Nous, Settings, SyncNous
from nous.embeddings.base import EmbeddingProvider
from nous.integrations.langgraph import NousStore

ALICE = ("memories", "alice")
BOB = ("memories", "bob")


async def test_put_get_update_and_delete_keep_values_exactly_with_history(nous: Nous) -> None:
    store = NousStore(nous)
    value = {"content": "Alice prefers morning meetings", "kind": "preference", "weight": 2, "x": [1, None]}
    await store.aput(ALICE, "meetings", value)
    item = await store.aget(ALICE, "meetings")
    assert item is not None and item.value == value and item.key == "meetings" and item.namespace == ALICE
    assert await store.aget(BOB, "meetings") is None  # another namespace, another scope
    assert await store.aget(ALICE, "missing") is None

    fact = (await nous.memories("fact", subject="meetings", user_id="memories.alice"))[0]
    assert fact.content == "Alice prefers morning meetings" and fact.user_id == "memories.alice"

    await store.aput(ALICE, "meetings", {"content": "Alice moved her meetings to the afternoon"})
    updated = await store.aget(ALICE, "meetings")
    assert updated is not None and updated.value == {"content": "Alice moved her meetings to the afternoon"}
    assert updated.created_at == item.created_at and updated.updated_at > item.updated_at
    history = await nous.history(fact.id)
    assert [h.action.value for h in history] == ["create", "update"]
    assert history[-1].new_value is not None
    assert history[-1].new_value["content"] == "Alice moved her meetings to the afternoon"

    await store.adelete(ALICE, "meetings")
    assert await store.aget(ALICE, "meetings") is None
    assert not (await nous.get(fact.id)).active  # forgotten, audited, not purged

    await store.aput(ALICE, "meetings", {"content": "Alice has no meetings on Fridays"})
    await store.abatch([PutOp(ALICE, "meetings", None)])  # a put of None deletes too
    assert await store.aget(ALICE, "meetings") is None


async def test_a_duplicate_under_a_new_key_is_stored_once_and_both_keys_read_it(nous: Nous) -> None:
    store = NousStore(nous)
    await store.aput(ALICE, "a", {"content": "Alice is allergic to peanuts", "source": "chat 1"})
    await store.aput(ALICE, "b", {"content": "Alice is allergic to peanuts", "source": "chat 2"})
    first, second = await store.aget(ALICE, "a"), await store.aget(ALICE, "b")
    assert first is not None and second is not None
    assert second.value == first.value == {"content": "Alice is allergic to peanuts", "source": "chat 1"}
    hits = await store.asearch(ALICE, query="what is Alice allergic to?")
    assert [(h.key, h.value["source"]) for h in hits] == [("a", "chat 1")]  # recall shows it once
    fact = (await nous.memories("fact", subject="a"))[0]
    assert getattr(fact, "confirmation_count", 0) == 1
    # without dedup every key is its own fact
    plain = NousStore(nous, dedup=False)
    await plain.aput(BOB, "a", {"content": "Bob is allergic to peanuts"})
    await plain.aput(BOB, "b", {"content": "Bob is allergic to peanuts"})
    assert len(await plain.asearch(BOB)) == 2


async def test_search_by_meaning_filter_paging_and_namespaces(nous: Nous) -> None:
    store = NousStore(nous)
    await store.aput(
        ALICE, "tea", {"content": "Alice drinks green tea every morning", "topic": "food", "n": 1}
    )
    await store.aput(
        ALICE, "car", {"content": "Alice drives a red bicycle to work", "topic": "travel", "n": 2}
    )
    await store.aput(BOB, "tea", {"content": "Bob cannot stand coffee", "topic": "food", "n": 3})
    await store.aput(("projects", "nous", "notes"), "db", {"text": "The ledger runs on PostgreSQL", "n": 4})
    await nous.learn("A fact written outside the store", user_id="memories.alice")

    hits = await store.asearch(("memories",), query="what does Alice drink in the morning?")
    assert hits and hits[0].key == "tea" and hits[0].namespace == ALICE
    assert hits[0].score is not None and 0 < hits[0].score <= 1
    assert all(h.namespace[0] == "memories" for h in hits)

    assert {h.key for h in await store.asearch(ALICE)} == {"tea", "car"}
    food = await store.asearch(("memories",), filter={"topic": "food"})
    assert {(h.namespace, h.key) for h in food} == {(ALICE, "tea"), (BOB, "tea")}
    assert [h.key for h in await store.asearch((), filter={"n": {"$gte": 4}})] == ["db"]
    assert {h.key for h in await store.asearch((), filter={"n": {"$gt": 1, "$lt": 4}})} == {"car", "tea"}
    everything = await store.asearch((), limit=10)
    assert len(everything) == 4  # the fact written outside the store is not an item
    paged = await store.asearch((), limit=2) + await store.asearch((), limit=2, offset=2)
    assert [(h.namespace, h.key) for h in paged] == [(h.namespace, h.key) for h in everything]

    assert await store.alist_namespaces() == [
        ("memories", "alice"),
        ("memories", "bob"),
        ("projects", "nous", "notes"),
    ]
    assert await store.alist_namespaces(prefix=("projects",)) == [("projects", "nous", "notes")]
    assert await store.alist_namespaces(suffix=("alice",)) == [ALICE]
    assert await store.alist_namespaces(max_depth=1) == [("memories",), ("projects",)]
    assert await store.alist_namespaces(limit=1, offset=1) == [BOB]


def test_the_blocking_methods_work_over_a_sync_nous(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    with SyncNous(settings, database_url=database_url, embedding_provider=provider) as nous:
        store = NousStore(nous)
        store.put(ALICE, "tz", {"content": "Alice lives in Lisbon"})
        item = store.get(ALICE, "tz")
        assert item is not None and item.value == {"content": "Alice lives in Lisbon"}
        assert [h.key for h in store.search(ALICE, query="where does Alice live?")] == ["tz"]
        assert store.list_namespaces() == [ALICE]
        store.delete(ALICE, "tz")
        assert store.get(ALICE, "tz") is None


async def test_the_blocking_methods_over_an_async_nous_say_what_to_use(nous: Nous) -> None:
    with pytest.raises(TypeError, match="SyncNous"):
        NousStore(nous).get(ALICE, "tz")


class Chat(TypedDict):
    user: str
    message: str
    answer: str


async def remember(state: Chat, *, store: BaseStore) -> dict[str, Any]:
    if state["message"].startswith("remember "):
        fact = state["message"].removeprefix("remember ")
        await store.aput(("memories", state["user"]), str(abs(hash(fact))), {"content": fact})
    return {}


async def answer(state: Chat, *, store: BaseStore) -> dict[str, Any]:
    hits = await store.asearch(("memories", state["user"]), query=state["message"], limit=1)
    return {"answer": hits[0].value["content"] if hits else "I don't know."}


async def test_a_graph_writes_and_reads_its_long_term_memory_through_nous(nous: Nous) -> None:
    graph = StateGraph(Chat)
    graph.add_node("remember", remember)
    graph.add_node("answer", answer)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "answer")
    graph.add_edge("answer", END)
    app = graph.compile(store=NousStore(nous))

    await app.ainvoke({"user": "alice", "message": "remember My sister Ana lives in Porto", "answer": ""})
    await app.ainvoke({"user": "alice", "message": "remember I play the cello on Sundays", "answer": ""})
    out = await app.ainvoke({"user": "alice", "message": "Which city does Ana live in?", "answer": ""})
    assert out["answer"] == "My sister Ana lives in Porto"
    other = await app.ainvoke({"user": "bob", "message": "Which city does Ana live in?", "answer": ""})
    assert other["answer"] == "I don't know."  # bob's namespace holds nothing
    # the graph's memories are Nous facts of alice's scope, recallable by Nous itself
    hits = await nous.recall("what instrument does she play?", user_id="memories.alice")
    assert hits and hits[0].content == "I play the cello on Sundays"
