"""Converting memories to and from storage rows, shared by every backend."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from nous._text import text_hash
from nous.errors import StorageError
from nous.models import MEMORY_TYPES, LifecycleState, Memory, MemoryKind, Provenance
from nous.storage.base import CandidateInfo

# Columns of the memories table: the fields ``Memory`` declares (each stored in its own column) and
# those computed from the memory (its subclass's fields go in ``data``); ``memory_to_row`` fills them.
MODEL_COLUMNS = (*Memory.model_fields, "kind", "search_text", "search_context", "data", "content_hash")
TIME_COLUMNS = frozenset(
    {"valid_from", "valid_to", "occurred_at", "created_at", "updated_at", "last_reviewed_at"}
)
JSON_COLUMNS = frozenset({"tags", "metadata", "provenance", "data", "encoded_censors"})


def content_hash(memory: Memory) -> str:
    """Hash of the text that gets embedded: unchanged hash means no re-embedding."""
    return text_hash(memory.embedding_text())


def memory_to_row(memory: Memory, hash_: str) -> dict[str, Any]:
    """Column values for a memory; JSON columns as Python objects, times as datetimes."""
    return {
        **{name: getattr(memory, name) for name in Memory.model_fields},
        "kind": memory.kind.value,
        "search_text": memory.keyword_text(),
        "search_context": memory.keyword_context(),
        "provenance": memory.provenance.model_dump(mode="json", exclude_defaults=True),
        "data": memory.data(),
        "content_hash": hash_,
        "lifecycle": memory.lifecycle.value,
    }


def _loads(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def row_to_memory(row: dict[str, Any]) -> Memory:
    """Rebuild the typed memory from a row (JSON as text or parsed, times as text or datetime)."""
    try:
        cls = MEMORY_TYPES[MemoryKind(row["kind"])]
    except (KeyError, ValueError) as exc:
        raise StorageError(f"row {row.get('id')!r} has unknown kind {row.get('kind')!r}") from exc
    fields: dict[str, Any] = {name: row[name] for name in Memory.model_fields if name in row}
    fields["tags"] = _loads(row["tags"]) or []
    fields["metadata"] = _loads(row["metadata"]) or {}
    fields["encoded_censors"] = _loads(row["encoded_censors"])
    fields["provenance"] = Provenance(**(_loads(row["provenance"]) or {}))
    fields["active"] = bool(row["active"])
    for name in TIME_COLUMNS:
        value = fields.get(name)
        if isinstance(value, str):
            fields[name] = datetime.fromisoformat(value)
    data = _loads(row["data"]) or {}
    return cls.model_validate({**data, **fields})


def row_to_candidate(row: tuple[Any, ...]) -> CandidateInfo:
    """A CandidateInfo from a row of CANDIDATE_COLUMNS."""
    id_, kind, session, user, occurred, frame, censors, active, superseded, lifecycle = row
    if isinstance(occurred, str):
        occurred = datetime.fromisoformat(occurred)
    return CandidateInfo(
        id_,
        MemoryKind(kind),
        session,
        user,
        occurred,
        frame,
        _loads(censors),
        bool(active),
        superseded,
        LifecycleState(lifecycle),
    )
