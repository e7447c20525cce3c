"""The labelled conversation format: good files load, each kind of bad file names its record,
and the one scorer counts evidence groups the documented way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nous import InvalidInputError
from nous.bench.labelled import LabelledQuestion, Scores, from_locomo, load_labelled

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo"


def _chat() -> dict[str, Any]:
    return {
        "id": "chat-1",
        "sessions": [
            {
                "id": "b1",
                "started_at": "2024-03-15T09:00:00+00:00",
                "messages": [
                    {"id": "b1:0", "role": "user", "content": "My first sprint ends on March 29."},
                    {"id": "b1:1", "role": "assistant", "content": "Noted: sprint one ends March 29."},
                ],
            },
            {
                "id": "b2",
                "started_at": "2024-04-05T09:00:00+00:00",
                "messages": [{"id": "b2:0", "role": "user", "content": "I moved the deadline to April 12."}],
            },
        ],
        "questions": [
            {
                "id": "q1",
                "question": "When does my first sprint end?",
                "category": "information_extraction",
                "asked_at": "2024-04-05T10:00:00+00:00",
                "evidence": [["b1:0", "b1:1"], ["b2:0"]],
            }
        ],
    }


def _write(tmp_path: Path, data: Any, name: str = "chat.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_a_good_file_loads_with_groups_and_times(tmp_path: Path) -> None:
    item = load_labelled(_write(tmp_path, _chat()))
    assert item.name == "chat.json" and item.conversation.id == "chat-1"
    (q,) = item.questions
    assert q.evidence == [["b1:0", "b1:1"], ["b2:0"]]
    assert q.asked_at is not None and q.asked_at.utcoffset() is not None
    ids, texts = item.message_texts()
    assert ids == ["b1:0", "b1:1", "b2:0"] and texts[1] == "assistant: Noted: sprint one ends March 29."


def _mutated(change: Any) -> dict[str, Any]:
    data = _chat()
    change(data)
    return data


BAD_FILES: list[tuple[str, Any, str]] = [
    ("not json", "{not json", "not valid JSON"),
    ("not an object", "[1, 2]", "expected a JSON object"),
    ("no sessions", {"questions": []}, "sessions: missing"),
    ("no questions", _mutated(lambda d: d.pop("questions")), "questions: missing"),
    ("questions not a list", _mutated(lambda d: d.update(questions={})), "questions: expected a list"),
    (
        "question not an object",
        _mutated(lambda d: d["questions"].append("q")),
        "questions[1]: expected an object",
    ),
    ("question text missing", _mutated(lambda d: d["questions"][0].pop("question")), "questions[0].question"),
    ("evidence empty", _mutated(lambda d: d["questions"][0].update(evidence=[])), "questions[0].evidence"),
    ("empty group", _mutated(lambda d: d["questions"][0].update(evidence=[[]])), "questions[0].evidence"),
    (
        "unknown message id",
        _mutated(lambda d: d["questions"][0].update(evidence=[["b9:9"]])),
        "unknown message id 'b9:9' (question 'q1')",
    ),
    (
        "duplicate question id",
        _mutated(lambda d: d["questions"].append(dict(d["questions"][0]))),
        "questions[1]: duplicate question id 'q1'",
    ),
    ("bad asked_at", _mutated(lambda d: d["questions"][0].update(asked_at="soon")), "questions[0].asked_at"),
    (
        "bad message",
        _mutated(lambda d: d["sessions"][0]["messages"][0].update(content="")),
        "sessions[0].messages[0]",
    ),
]


@pytest.mark.parametrize(("case", "data", "message"), BAD_FILES, ids=[c for c, _, _ in BAD_FILES])
def test_each_kind_of_bad_file_is_refused_naming_the_record(
    tmp_path: Path, case: str, data: Any, message: str
) -> None:
    with pytest.raises(InvalidInputError) as err:
        load_labelled(_write(tmp_path, data))
    assert "chat.json" in str(err.value) and message in str(err.value), (case, str(err.value))


def test_wrong_encoding_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_bytes(json.dumps(_chat()).encode("utf-16"))
    with pytest.raises(InvalidInputError, match="not valid UTF-8"):
        load_labelled(path)


def test_scorer_counts_a_group_found_by_any_of_its_ids() -> None:
    q = LabelledQuestion(id="q", question="?", category="c", evidence=[["a", "b"], ["c"]])
    scores = Scores((1, 2, 3))
    scores.add(q, [["b"], ["x"], ["c"]])
    figures = scores.summary()
    assert (figures["recall_any@1"], figures["recall_all@1"]) == (1.0, 0.0)
    assert (figures["recall_any@2"], figures["recall_all@2"]) == (1.0, 0.0)
    assert (figures["recall_any@3"], figures["recall_all@3"]) == (1.0, 1.0)
    assert figures["per_category"]["c"]["questions"] == 1


def test_locomo_becomes_one_group_per_evidence_turn() -> None:
    item = from_locomo(LOCOMO / "30.json")
    assert len(item.questions) > 50
    assert {q.category for q in item.questions} <= {"1", "2", "3", "4"}
    assert all(all(len(g) == 1 for g in q.evidence) for q in item.questions)
    last = item.last_time()
    assert last is not None and all(q.asked_at == last for q in item.questions)
