"""Export and import round-trip; a bad file stores nothing and names the bad line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nous import InvalidInputError, Nous
from nous.models import Decision


async def _seed(nous: Nous) -> None:
    episode = await nous.start_episode("Vendor selection")
    await nous.learn("Vendor A quoted 40k", subject="vendor A", category="event")
    await nous.record_decision(
        "Pick vendor A",
        confidence=0.7,
        episode_id=episode.id,
        reasons=[{"type": "analysis", "text": "cheapest"}],
    )
    await nous.end_episode(episode.id, summary="Chose vendor A")


async def test_round_trip_into_another_agent(nous: Nous, tmp_path: Path) -> None:
    await _seed(nous)
    path = tmp_path / "export.jsonl"
    lines = await nous.export_jsonl(path)
    assert lines == 1 + 3 + 1  # header, three memories, one edge
    target = nous.for_agent("restored")
    assert await target.import_jsonl(path) == 3
    originals = {m.content: m for m in await nous.memories(limit=100)}
    restored = {m.content: m for m in await target.memories(limit=100)}
    assert restored.keys() == originals.keys()
    assert len(await nous.memories(limit=100)) == 3  # the source agent's memories are untouched
    for content, memory in restored.items():
        assert memory.agent_id == "restored" and memory.id != originals[content].id
        same = {"id", "agent_id", "episode_id", "provenance"}
        assert memory.model_dump(exclude=same) == originals[content].model_dump(exclude=same)
    decision = next(m for m in restored.values() if isinstance(m, Decision))
    episode_ids = {m.id for m in restored.values() if m.kind.value == "episode"}
    assert decision.episode_id in episode_ids
    edges = await target.store.edges("restored", [decision.id])
    assert [(e.source_id, e.target_id) for e in edges] == [(decision.id, decision.episode_id)]
    links = [h for h in await target.history(decision.id) if h.action.value == "link"]
    assert [(h.actor, (h.new_value or {}).get("target_id")) for h in links] == [
        ("import", decision.episode_id)
    ]
    hits = await target.recall("which vendor did we choose?", limit=1)
    assert hits and hits[0].id in {m.id for m in restored.values()}
    # importing again is idempotent, and so is restoring into the same agent
    assert await target.import_jsonl(path) == 3
    assert sum((await target.stats()).active_by_kind.values()) == 3
    assert await nous.import_jsonl(path) == 3
    assert sum((await nous.stats()).active_by_kind.values()) == 3


async def test_bad_line_names_itself_and_stores_nothing(nous: Nous, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = {"memory": {"kind": "fact", "content": "A good fact"}}
    path.write_text("\n".join([json.dumps(good), json.dumps(good), "{not json"]) + "\n")
    with pytest.raises(InvalidInputError, match="line 3"):
        await nous.import_jsonl(path)
    path.write_text(json.dumps({"memory": {"kind": "fact", "content": "ok", "confidence": 7}}) + "\n")
    with pytest.raises(InvalidInputError, match="line 1"):
        await nous.import_jsonl(path)
    path.write_text(json.dumps({"memory": {"kind": "gossip", "content": "x"}}) + "\n")
    with pytest.raises(InvalidInputError, match="line 1"):
        await nous.import_jsonl(path)
    with pytest.raises(InvalidInputError, match="cannot read"):
        await nous.import_jsonl(tmp_path / "missing.jsonl")
    assert sum((await nous.stats()).active_by_kind.values()) == 0
