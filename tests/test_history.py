"""Every create, update, confirm, delete, restore and purge writes an audit row."""

from __future__ import annotations

import pytest

from nous import NotFoundError, Nous


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
