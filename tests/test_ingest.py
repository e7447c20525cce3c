"""Conversation ingestion: native and LoCoMo formats, provenance, resumption, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nous import InvalidInputError, Nous
from nous.ingest import parse_conversation
from nous.models import Episode, Turn

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo"

NATIVE = {
    "sessions": [
        {
            "id": "s1",
            "started_at": "2025-03-01T09:00:00Z",
            "messages": [
                {"role": "user", "name": "Ana", "content": "I'm training for the Lisbon half marathon."},
                {"role": "assistant", "content": "Great! When is the race?"},
                {"role": "user", "name": "Ana", "content": "April 6th. My goal is under two hours."},
                {"role": "assistant", "content": "That is a solid goal for a first half."},
            ],
        },
        {
            "id": "s2",
            "started_at": "2025-03-20T18:30:00+01:00",
            "messages": [
                {"role": "user", "name": "Ana", "content": "I hurt my knee on a long run."},
            ],
        },
    ]
}


async def test_native_format_becomes_episodes_and_turns(nous: Nous, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(NATIVE))
    report = await nous.ingest(path)
    assert (report.sessions, report.turns, report.sessions_skipped) == (2, 5, 0)
    assert (report.episodes_trivial, report.episodes_merged) == (1, 0)
    episodes = await nous.memories("episode", include_inactive=True)
    assert [(e.occurred_at.isoformat(), e.active) for e in episodes] == [
        ("2025-03-20T17:30:00+00:00", False),  # one message: a trivial session (spec 000 A4)
        ("2025-03-01T09:00:00+00:00", True),
    ]
    first = next(e for e in episodes if isinstance(e, Episode) and e.participants == ["Ana", "assistant"])
    assert first.ended_at is not None and first.ended_at > first.started_at
    # titled by what it is about (its key phrases), before any summary runs; not "who talked"
    assert first.title == first.content == "Half marathon"
    turns = [t for t in await nous.memories("turn", limit=10) if isinstance(t, Turn)]
    assert len(turns) == 5  # turns of trivial sessions are kept
    goal = next(t for t in turns if "two hours" in t.content)
    assert goal.content == "Ana: April 6th. My goal is under two hours."
    assert goal.speaker == "Ana" and goal.episode_id == first.id
    assert goal.provenance.turn_ids == ["s1:2"] and goal.provenance.source == "ingest:native"
    assert goal.context is not None and "When is the race?" in goal.context
    hits = await nous.recall("Is her goal under two hours?", limit=2, kinds="turn")
    assert goal.id in [h.id for h in hits]
    edges = await nous.store.edges(nous.agent_id, [goal.id])
    assert {e.relation.value for e in edges} == {"part_of", "follows"}
    again = await nous.ingest(path)
    assert (again.sessions, again.turns, again.sessions_skipped) == (0, 0, 2)
    assert len(await nous.memories("turn", limit=10)) == 5


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda d: d["sessions"][1]["messages"][0].pop("content"), "sessions[1].messages[0]"),
        (lambda d: d["sessions"][0]["messages"][1].update(content=""), "sessions[0].messages[1]"),
        (lambda d: d["sessions"][1].update(started_at="next tuesday"), "sessions[1]"),
        (lambda d: d["sessions"][0].update(messages="hello"), "sessions[0].messages"),
        (lambda d: d.update(sessions=[]), "sessions"),
    ],
)
async def test_bad_native_file_names_the_record_and_stores_nothing(
    nous: Nous, tmp_path: Path, mutate: object, where: str
) -> None:
    data = json.loads(json.dumps(NATIVE))
    mutate(data)  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError) as info:
        await nous.ingest(path)
    assert str(info.value).startswith(where)
    assert (await nous.stats()).active_by_kind == {}


async def test_unreadable_files_are_refused(nous: Nous, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"sessions": [')
    with pytest.raises(InvalidInputError, match="not valid JSON"):
        await nous.ingest(broken)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InvalidInputError, match="UTF-8"):
        await nous.ingest(binary)
    with pytest.raises(InvalidInputError, match="cannot read"):
        await nous.ingest(tmp_path / "missing.json")


def test_locomo_format_parses_sessions_dates_and_captions() -> None:
    conversation = parse_conversation((LOCOMO / "26.json").read_bytes())
    assert conversation.source_format == "locomo"
    assert conversation.participants == ["Caroline", "Melanie"]
    first = conversation.sessions[0]
    assert first.id == "session_1" and first.started_at is not None
    assert first.started_at.isoformat() == "2023-05-08T13:56:00+00:00"
    assert first.messages[2].id == "D1:3" and first.messages[2].name == "Caroline"
    captioned = [m for s in conversation.sessions for m in s.messages if "[shares a photo of" in m.content]
    assert captioned
    assert sum(len(s.messages) for s in conversation.sessions) == 419


def test_bad_locomo_record_is_named() -> None:
    data = json.loads((LOCOMO / "30.json").read_text())
    data["session_2"][3].pop("text")
    with pytest.raises(InvalidInputError, match=r"^session_2\[3\]"):
        parse_conversation(json.dumps(data))
    data = json.loads((LOCOMO / "30.json").read_text())
    data["session_1_date_time"] = "sometime in spring"
    with pytest.raises(InvalidInputError, match="session_1_date_time"):
        parse_conversation(json.dumps(data))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_locomo_ingestion_keeps_dialogue_ids(nous: Nous) -> None:
    """A whole LoCoMo conversation, on SQLite only: what it adds to the native test above (the
    LoCoMo parse, dialogue ids as provenance) does not depend on the backend, which stores the
    same turns and provenance on both (that test runs on each)."""
    report = await nous.ingest(LOCOMO / "30.json")
    assert report.turns == 369
    hits = await nous.recall("Where did Jon go dancing?", limit=5, kinds="turn")
    assert hits and all(h.memory.provenance.turn_ids[0].startswith("D") for h in hits)
