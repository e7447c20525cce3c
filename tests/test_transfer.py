"""Export and import round-trip; a bad file stores nothing and names the bad line."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nous import InvalidInputError, Nous, Settings
from nous.embeddings.base import EmbeddingProvider
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
    assert [(h.actor, (h.new_value or {}).get("target_id")) for h in links] == [("api", decision.episode_id)]
    hits = await target.recall("which vendor did we choose?", limit=1)
    assert hits and hits[0].id in {m.id for m in restored.values()}
    # importing again changes nothing (no memory written, no audit row, no link), and neither
    # does restoring into the same agent: each says none was new out of the file's three
    before = (await target.stats(), await target.store.all_edges("restored"))
    trails = {m: await target.history(m) for m in restored_ids(restored)}
    told: list[int] = []
    assert await target.import_jsonl(path, on_parsed=told.append) == 0 and told == [3]
    assert (await target.stats(), await target.store.all_edges("restored")) == before
    assert {m: await target.history(m) for m in trails} == trails
    assert await nous.import_jsonl(path) == 0
    assert sum((await nous.stats()).active_by_kind.values()) == 3


def restored_ids(memories: dict[str, Any]) -> list[str]:
    return [m.id for m in memories.values()]


async def test_import_adds_only_what_is_missing(nous: Nous, tmp_path: Path) -> None:
    """A file holding memories the store has and ones it lacks writes the missing ones alone
    (with their links); the stored ones keep their state, forgotten included."""
    await _seed(nous)
    path = tmp_path / "export.jsonl"
    await nous.export_jsonl(path)
    decision = next(m for m in await nous.memories(limit=10) if isinstance(m, Decision))
    assert decision.episode_id is not None
    await nous.forget(decision.id, hard=True)
    fact = next(m for m in await nous.memories("fact", limit=10))
    await nous.forget(fact.id)
    assert await nous.import_jsonl(path, actor="cli") == 1
    back = await nous.get(decision.id)
    assert back.content == decision.content
    assert not (await nous.get(fact.id)).active  # present (forgotten): left as it is
    links = [h for h in await nous.history(decision.id) if h.action.value == "link"]
    assert [(h.actor, (h.new_value or {}).get("target_id")) for h in links] == [("cli", decision.episode_id)]
    episode_links = [h for h in await nous.history(decision.episode_id) if h.action.value == "link"]
    assert episode_links == []


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


def _marked(line: dict[str, Any], axis: int, size: int) -> dict[str, Any]:
    """The line with its carried vector replaced by the unit vector along ``axis`` (``size``
    floats), so that a reused vector is told apart from one embedded again."""
    vector = np.zeros(size, dtype="<f4")
    vector[axis] = 1.0
    embedding = {**line["embedding"], "float32": base64.b64encode(vector.tobytes()).decode("ascii")}
    return {**line, "embedding": embedding}


async def test_vectors_travel_with_an_export_and_are_reused_only_when_safe(
    nous: Nous, tmp_path: Path, provider: EmbeddingProvider
) -> None:
    """An export with vectors carries each memory's embedding; an import that trusts them stores
    them as they are (no embedding), except for a text changed since, or a vector of the wrong
    size; a plain import, or one from a file of another model, embeds again."""
    source_settings = Settings(home=tmp_path / "source", agent_id="test-agent", events_worker="off")
    async with Nous(source_settings, embedding_provider=provider) as source:
        await _seed(source)
        await source.export_jsonl(tmp_path / "plain.jsonl")
        await source.export_jsonl(tmp_path / "full.jsonl", vectors=True)
    plain = [json.loads(x) for x in (tmp_path / "plain.jsonl").read_text().splitlines()]
    header, *lines = [json.loads(x) for x in (tmp_path / "full.jsonl").read_text().splitlines()]
    memories = [x for x in lines if "memory" in x]
    assert not any("embedding" in x for x in plain)
    assert len(memories) == 3 and all("embedding" in x for x in memories)
    size = provider.dimensions
    by_kind = {x["memory"]["kind"]: i for i, x in enumerate(memories)}
    fact, decision, episode = by_kind["fact"], by_kind["decision"], by_kind["episode"]
    memories[fact] = _marked(memories[fact], 0, size)
    memories[decision] = _marked(memories[decision], 1, size)
    memories[decision]["memory"]["content"] = "Pick vendor B"  # the text changed since the export
    memories[episode] = _marked(memories[episode], 2, size - 1)  # not the model's size
    edges = [x for x in lines if "edge" in x]

    def write(name: str, model: str) -> Path:
        path = tmp_path / name
        rows = [{**header, "embedding_model": model}, *memories, *edges]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path

    marked, other_model = write("marked.jsonl", provider.model_name), write("other.jsonl", "other/model")

    async def stored(target: Nous) -> dict[str, np.ndarray]:
        """The stored vector of each memory of ``target``, by kind."""
        found = await target.memories(limit=100)
        vectors = await target.store.vectors(target.agent_id, [m.id for m in found])
        return {m.kind.value: vectors[m.id] for m in found}

    def unit(axis: int) -> np.ndarray:
        return np.eye(size, dtype=np.float32)[axis]

    for target, path, trust in (
        (nous.for_agent("plain"), marked, False),
        (nous.for_agent("other-model"), other_model, True),
    ):
        assert await target.import_jsonl(path, vectors=trust) == 3
        for kind, vector in (await stored(target)).items():
            assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-3), kind
            assert max(abs(vector)) < 0.99, kind  # a real embedding, not a carried unit vector
    assert await nous.import_jsonl(marked, vectors=True) == 3
    vectors = await stored(nous)
    np.testing.assert_array_equal(vectors["fact"], unit(0))  # carried, reused as it was
    changed = await nous.memories(kinds=["decision"], limit=1)
    expected = provider.embed([changed[0].embedding_text()])[0]
    assert float(vectors["decision"] @ expected) == pytest.approx(1.0, abs=1e-3)  # embedded again
    assert max(abs(vectors["episode"])) < 0.99  # the wrong size: embedded again
