"""Every create, update, confirm, delete, restore and purge writes an audit row."""

from __future__ import annotations

import pytest

from nous import InvalidInputError, NotFoundError, Nous


async def test_full_lifecycle_is_audited(nous: Nous) -> None:
    result = await nous.learn("The office is on floor 3")
    await nous.update(result.id, content="The office is on floor 4")
    await nous.update(result.id, content="The office is on floor 4")  # no change: no row
    await nous.forget(result.id)
    await nous.restore(result.id)
    entries = await nous.history(result.id)
    assert [e.action.value for e in entries] == ["create", "update", "delete", "restore"]
    update = entries[1]
    assert update.old_value == {"content": "The office is on floor 3"}
    assert update.new_value == {"content": "The office is on floor 4"}
    assert entries[2].old_value == {"active": True} and entries[2].new_value == {"active": False}
    assert all(e.actor == "api" and e.at.tzinfo is not None for e in entries)
    assert entries[0].new_value is not None and entries[0].new_value["content"] == "The office is on floor 3"


async def test_soft_forget_hides_from_recall_and_lists(nous: Nous) -> None:
    result = await nous.learn("The wifi password is hunter2")
    await nous.forget(result.id)
    assert await nous.recall("wifi password") == []
    assert await nous.memories("fact") == []
    assert [m.id for m in await nous.memories("fact", include_inactive=True)] == [result.id]
    assert [h.id for h in await nous.recall("wifi password", include_inactive=True)] == [result.id]


async def test_hard_forget_purges_but_keeps_the_audit_trail(nous: Nous) -> None:
    a = await nous.learn("Temporary note to purge")
    b = await nous.learn("Another note")
    await nous.link(a.id, b.id, "relates_to")
    await nous.forget(a.id, hard=True)
    with pytest.raises(NotFoundError):
        await nous.get(a.id)
    assert all(h.id != a.id for h in await nous.recall("temporary note to purge"))
    assert await nous.store.edges(nous.agent_id, [b.id]) == []
    assert [e.action.value for e in await nous.history(a.id)] == ["create", "link", "purge"]


async def test_episode_end_is_an_audited_update(nous: Nous) -> None:
    episode = await nous.start_episode("Fixing the build")
    await nous.end_episode(episode.id, summary="Pinned the compiler", lessons=["pin toolchains"])
    entries = await nous.history(episode.id)
    assert [e.action.value for e in entries] == ["create", "update"]
    assert entries[1].new_value is not None
    assert entries[1].new_value["summary"] == "Pinned the compiler"
    assert entries[1].old_value is not None and entries[1].old_value["outcome"] == "ongoing"


async def test_supersede_marks_the_old_memory_replaced_with_an_edge_and_a_history_row(nous: Nous) -> None:
    old = await nous.learn("The standup is at 9:30", subject="standup")
    new = await nous.learn("Team lunch is on Fridays", subject="lunch")  # unrelated: not superseded on write
    replaced = await nous.supersede(old.id, by=new.id)
    assert replaced.superseded_by == new.id and replaced.valid_to is not None
    assert [m.id for m in await nous.memories("fact")] == [new.id]  # current only
    assert [m.id for m in await nous.memories("fact", superseded_only=True)] == [old.id]
    entries = await nous.history(old.id)
    assert entries[-1].action.value == "supersede" and entries[-1].new_value is not None
    assert entries[-1].new_value["superseded_by"] == new.id
    edges = await nous.edges(old.id)
    assert [(e.source_id, e.target_id, e.relation.value) for e in edges] == [(new.id, old.id, "supersedes")]
    assert await nous.edges(new.id) == edges  # either end
    with pytest.raises(InvalidInputError):
        await nous.supersede(new.id, by=new.id)
    with pytest.raises(NotFoundError):
        await nous.supersede(old.id, by="no-such-memory-id-at-all-000000000000")


async def test_memories_filter_by_subject_category_lifecycle_and_time(nous: Nous) -> None:
    from datetime import UTC, datetime

    a = await nous.learn("Ravi likes green tea", subject="Ravi", category="preference")
    b = await nous.learn("Ravi works in Lisbon", subject="Ravi", category="person")
    c = await nous.learn(
        "Mei started the migration", subject="Mei", occurred_at=datetime(2020, 1, 5, tzinfo=UTC)
    )
    assert {m.id for m in await nous.memories("fact", subject="Ravi")} == {a.id, b.id}
    assert [m.id for m in await nous.memories("fact", category="preference")] == [a.id]
    assert [m.id for m in await nous.memories("fact", until=datetime(2021, 1, 1, tzinfo=UTC))] == [c.id]
    assert c.id not in {m.id for m in await nous.memories("fact", since=datetime(2021, 1, 1, tzinfo=UTC))}
    assert {m.id for m in await nous.memories("fact", lifecycle=["active"])} == {a.id, b.id, c.id}
    assert await nous.memories("fact", lifecycle=["dormant"]) == []
    with pytest.raises(InvalidInputError):
        await nous.memories("fact", lifecycle=["sleepy"])
    with pytest.raises(InvalidInputError):
        await nous.memories(
            "fact", since=datetime(2022, 1, 1, tzinfo=UTC), until=datetime(2021, 1, 1, tzinfo=UTC)
        )
