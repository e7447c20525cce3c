"""Labelled conversations: a conversation plus questions whose answers are known messages.

The format is Nous's native ingest format with a ``questions`` list::

    {"id": "...", "sessions": [...native sessions...],
     "questions": [{"id": "q1", "question": "...", "category": "temporal",
                    "asked_at": "2024-06-01T09:31:00+00:00",
                    "evidence": [["b1:3", "b1:4"], ["b2:7"]]}]}

``evidence`` is a list of groups of message ids; a group is found when any one of its ids is
retrieved. recall_all@k: every group found in the top k; recall_any@k: at least one. A LoCoMo
question is the special case of one id per group (``from_locomo``). Loading validates the whole
file and names the first bad record.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from nous._time import as_utc
from nous.errors import InvalidInputError
from nous.ingest import Conversation, parse_conversation

LOCOMO_CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop"}


class LabelledQuestion(BaseModel):
    """A question and the groups of message ids that answer it."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    category: str = "all"
    asked_at: datetime | None = None
    evidence: list[list[str]] = Field(min_length=1)

    @field_validator("evidence")
    @classmethod
    def _groups(cls, value: list[list[str]]) -> list[list[str]]:
        groups = [[i.strip() for i in group if i.strip()] for group in value]
        if any(not g for g in groups):
            raise ValueError("every evidence group needs at least one message id")
        return groups

    @field_validator("asked_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None


@dataclass
class LabelledConversation:
    """One conversation and its questions."""

    conversation: Conversation
    questions: list[LabelledQuestion]
    name: str = ""

    def message_texts(self) -> tuple[list[str], list[str]]:
        """(message ids, ``speaker: text``) of every message, in order: what the baselines rank."""
        ids, texts = [], []
        for session in self.conversation.sessions:
            for message in session.messages:
                ids.append(message.id)
                texts.append(f"{message.name or message.role}: {message.content}")
        return ids, texts

    def last_time(self) -> datetime | None:
        """When the conversation's last message was written (sessions are ~30 s per turn)."""
        last = None
        for session in self.conversation.sessions:
            if session.started_at is not None:
                end = session.started_at + timedelta(seconds=30 * len(session.messages))
                last = end if last is None or end > last else last
            for m in session.messages:
                if m.occurred_at is not None and (last is None or m.occurred_at > last):
                    last = m.occurred_at
        return last


def _bad(where: str, problem: str) -> InvalidInputError:
    return InvalidInputError(f"{where}: {problem}", field=where)


def parse_questions(raw: Any, message_ids: set[str]) -> list[LabelledQuestion]:
    """Validate a ``questions`` list; every evidence id must be a message of the conversation."""
    if not isinstance(raw, list):
        raise _bad("questions", "expected a list")
    out: list[LabelledQuestion] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        where = f"questions[{i}]"
        if not isinstance(item, dict):
            raise _bad(where, "expected an object")
        try:
            question = LabelledQuestion.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise _bad(f"{where}.{loc}" if loc else where, first["msg"]) from None
        if question.id in seen:
            raise _bad(where, f"duplicate question id {question.id!r}")
        seen.add(question.id)
        unknown = [m for group in question.evidence for m in group if m not in message_ids]
        if unknown:
            raise _bad(f"{where}.evidence", f"unknown message id {unknown[0]!r} (question {question.id!r})")
        out.append(question)
    return out


def load_labelled(path: Path) -> LabelledConversation:
    """Read a labelled conversation file (native sessions + questions)."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path.name}: not valid UTF-8: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path.name}: not valid JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path.name}: expected a JSON object at the top level")
    if "sessions" not in data:
        raise InvalidInputError(f"{path.name}: sessions: missing (a labelled conversation is native format)")
    if "questions" not in data:
        raise InvalidInputError(f"{path.name}: questions: missing")
    try:
        conversation = parse_conversation(json.dumps({k: v for k, v in data.items() if k != "questions"}))
        ids = {m.id for s in conversation.sessions for m in s.messages}
        questions = parse_questions(data["questions"], ids)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{path.name}: {exc}", field=exc.field) from None
    return LabelledConversation(conversation, questions, path.name)


def from_locomo(path: Path) -> LabelledConversation:
    """A LoCoMo file as a labelled conversation: questions of categories 1-4 with evidence, one
    group per evidence turn, asked just after the conversation's last message. Categories are
    kept as their numbers (papers disagree on the names)."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"{path.name}: cannot read LoCoMo file: {exc}") from None
    conversation = parse_conversation(json.dumps(data), fmt="locomo")
    labelled = LabelledConversation(conversation, [], path.name)
    asked = labelled.last_time()
    for n, qa in enumerate(data.get("qa", []) if isinstance(data, dict) else []):
        category = qa.get("category")
        # Evidence is kept as given (a few LoCoMo ids are malformed and so can never be found).
        evidence = [e.strip() for e in qa.get("evidence", []) if isinstance(e, str) and e.strip()]
        if category not in LOCOMO_CATEGORIES or not evidence:
            continue
        labelled.questions.append(
            LabelledQuestion(
                id=f"{conversation.id}/{n}",
                question=str(qa["question"]),
                category=str(category),
                asked_at=asked,
                evidence=[[e] for e in dict.fromkeys(evidence)],
            )
        )
    return labelled


@dataclass
class Scores:
    """recall_any@k / recall_all@k / groups@k over questions, overall and per category (one code
    path). groups@k is the mean share of a question's evidence groups found in the top k: it moves
    when a question needing many memories gets some of them, where all@k stays 0."""

    ks: tuple[int, ...]
    hits: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    per_category: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )

    def add(self, question: LabelledQuestion, ranked: list[list[str]] | dict[int, list[list[str]]]) -> None:
        """Score one question given, per ranked result, the message ids it stands for: one
        ranking cut at every k, or a ranking per k (a covering recall is a different set at each
        limit, not a prefix of the largest)."""
        for k in self.ks:
            found: set[str] = set()
            for ids in (ranked[k] if isinstance(ranked, dict) else ranked)[:k]:
                found.update(ids)
            groups = [bool(found.intersection(g)) for g in question.evidence]
            share = sum(groups) / len(groups) if groups else 0.0
            for name, value in (
                (f"recall_any@{k}", float(any(groups))),
                (f"recall_all@{k}", float(all(groups))),
                (f"groups@{k}", share),  # the share of the question's evidence groups found
            ):
                self.hits[name].append(value)
                self.per_category[question.category][name].append(value)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: round(float(np.mean(v)), 4) for name, v in sorted(self.hits.items())}
        out["per_category"] = {
            cat: {name: round(float(np.mean(v)), 4) for name, v in sorted(metrics.items())}
            | {"questions": len(next(iter(metrics.values())))}
            for cat, metrics in sorted(self.per_category.items())
        }
        return out
