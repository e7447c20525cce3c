"""Export and import of an agent's memories and edges as JSON Lines.

The first line is a header; then one ``{"memory": {...}}`` line per memory and one
``{"edge": {...}}`` line per edge. Import validates the whole file before writing,
names the first bad line, and is idempotent (ids are kept; a memory or edge already stored is
left alone, with no new audit row), so an interrupted import resumes cleanly when run again.

An export made ``with_vectors`` also carries each memory's stored embedding beside it:
``"embedding": {"content_hash": ..., "float32": <base64, little-endian>}``. An import told to
reuse them takes a vector only if the header names the importer's embedding model, the vector
has the model's dimensions and the memory's text still hashes to ``content_hash``; any other
memory is embedded again. Moving a large store then costs no embedding. Only trusted files may
be imported so: a stored vector is reused for the same text by every agent of the store, so
the REST import never reuses them. Readers that do not know the field ignore it.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
from pydantic import ValidationError

from nous._time import utcnow
from nous.errors import InvalidInputError
from nous.memory import MemoryRepository
from nous.models import MEMORY_TYPES, Edge, HistoryAction, Memory, MemoryKind
from nous.storage import WriteOp
from nous.storage.base import PutEdge
from nous.storage.codec import content_hash

FORMAT_VERSION = 1
IMPORT_BATCH = 256
EXPORT_BATCH = 500  # memories whose vectors are read in one query
_IMPORT_NAMESPACE = uuid.UUID("5b0c6c0e-8f1e-4e55-9d7e-6e6f75730001")


async def export_lines(repo: MemoryRepository, *, with_vectors: bool = False) -> AsyncIterator[str]:
    """The export of one agent, line by line (without newlines); ``with_vectors``: each memory's
    stored embedding too (see the module doc)."""
    yield json.dumps(
        {
            "nous_export": FORMAT_VERSION,
            "agent_id": repo.agent_id,
            "exported_at": utcnow().isoformat(),
            "embedding_model": repo.embedder.model_name,
        }
    )
    batch: list[Memory] = []
    async for memory in repo.store.iter_memories(repo.agent_id):
        batch.append(memory)
        if len(batch) == EXPORT_BATCH:
            for line in await _memory_lines(repo, batch, with_vectors):
                yield line
            batch = []
    for line in await _memory_lines(repo, batch, with_vectors):
        yield line
    for edge in await repo.store.all_edges(repo.agent_id):
        yield json.dumps({"edge": edge.model_dump(mode="json")})


async def _memory_lines(repo: MemoryRepository, memories: list[Memory], with_vectors: bool) -> list[str]:
    hashes = [content_hash(m) for m in memories]
    stored = await repo.store.embeddings_by_hash(hashes, repo.embedder.model_name) if with_vectors else {}
    lines = []
    for memory, h in zip(memories, hashes, strict=True):
        record: dict[str, Any] = {"memory": {"kind": memory.kind.value, **memory.model_dump(mode="json")}}
        if h in stored:
            raw = np.asarray(stored[h], dtype="<f4").tobytes()
            record["embedding"] = {"content_hash": h, "float32": base64.b64encode(raw).decode("ascii")}
        lines.append(json.dumps(record))
    return lines


def _remapped_id(agent_id: str, old_id: str) -> str:
    """A stable new id for a memory copied into another agent (ids are unique store-wide)."""
    return str(uuid.uuid5(_IMPORT_NAMESPACE, f"{agent_id}:{old_id}"))


def _remap(data: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    for key in ("id", "superseded_by", "episode_id", "source_id", "target_id"):
        if data.get(key) in mapping:
            data[key] = mapping[data[key]]
    provenance = data.get("provenance")
    if isinstance(provenance, dict) and provenance.get("episode_id") in mapping:
        data["provenance"] = {**provenance, "episode_id": mapping[provenance["episode_id"]]}
    return data


Record = tuple[int, str, dict[str, Any]]  # line number, "memory" or "edge", the object


@dataclass
class ExportFile:
    """An export's records, the embedding model its header names, and the vectors it carries
    (content hash -> vector; raw, checked by ``vectors_for``)."""

    records: list[Record] = field(default_factory=list)
    model: str | None = None
    vectors: dict[str, bytes] = field(default_factory=dict)

    def vectors_for(self, model: str, dimensions: int) -> dict[str, np.ndarray]:
        """The carried vectors an importer embedding with ``model`` may reuse: none if the file
        was written with another model; of the others, those of the right size and finite."""
        if self.model != model:
            return {}
        out: dict[str, np.ndarray] = {}
        for h, raw in self.vectors.items():
            if len(raw) == 4 * dimensions:
                vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
                if np.isfinite(vector).all():
                    out[h] = vector
        return out


def memory_ids(records: list[Record]) -> list[str]:
    return [d["id"] for _, kind, d in records if kind == "memory" and isinstance(d.get("id"), str)]


def _carried(record: dict[str, Any], into: dict[str, bytes]) -> None:
    """Keep a memory line's ``embedding`` (if well-formed) in ``into``; a malformed one is
    ignored like any field this reader does not know: its memory is embedded again."""
    embedding = record.get("embedding")
    if not isinstance(embedding, dict):
        return
    h, data = embedding.get("content_hash"), embedding.get("float32")
    if isinstance(h, str) and isinstance(data, str):
        try:
            into[h] = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return


def read_records(lines: Iterable[str]) -> ExportFile:
    """Every line of an export parsed (the header checked); InvalidInputError names a bad line."""
    file = ExportFile()
    raw = file.records
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
            if "nous_export" in record:
                if record["nous_export"] != FORMAT_VERSION:
                    raise ValueError(f"unsupported export format {record['nous_export']!r}")
                model = record.get("embedding_model")
                file.model = model if isinstance(model, str) else None
                continue
            kind = "memory" if "memory" in record else "edge" if "edge" in record else None
            if kind is None or not isinstance(record[kind], dict):
                raise ValueError("expected a 'memory' or 'edge' object")
            raw.append((number, kind, dict(record[kind])))
            if kind == "memory":
                _carried(record, file.vectors)
        except ValueError as exc:
            raise InvalidInputError(f"line {number}: {exc}", field=f"line {number}") from None
    return file


def parse_records(
    raw: list[Record], agent_id: str, foreign: set[str] | frozenset[str] = frozenset()
) -> tuple[list[Memory], list[Edge]]:
    """Validate the records; the memories and edges, re-scoped to ``agent_id``.

    Memories exported from another agent, and ids ``foreign`` names (another agent's memories in
    this store), get new, deterministic ids (so importing twice is still idempotent), and
    references between them follow. So an import never fails on, nor tells of, an id it does
    not own.
    """
    mapping = {
        data["id"]: _remapped_id(agent_id, data["id"])
        for _, kind, data in raw
        if kind == "memory"
        and isinstance(data.get("id"), str)
        and (data.get("agent_id", agent_id) != agent_id or data["id"] in foreign)
    }
    memories: list[Memory] = []
    edges: list[Edge] = []
    for number, kind, data in raw:
        try:
            data = _remap(data, mapping)
            data["agent_id"] = agent_id
            if kind == "edge":
                edges.append(Edge.model_validate(data))
                continue
            cls = MEMORY_TYPES[MemoryKind(data.pop("kind", None))]
            memories.append(cls.model_validate(data))
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InvalidInputError(f"line {number}: {detail}", field=f"line {number}") from None
    return memories, edges


async def import_records(
    repo: MemoryRepository,
    memories: list[Memory],
    edges: list[Edge],
    progress: Callable[[int], None] | None = None,
    vectors: dict[str, np.ndarray] | None = None,
    actor: str = "api",
) -> int:
    """Write validated records in batches; each batch is one transaction. ``vectors`` (content
    hash -> embedding, from ``ExportFile.vectors_for``) are reused instead of embedding again.

    What the store already has is left alone: a memory whose id is stored (active, forgotten or
    changed since) is neither written again nor audited again, and an edge that exists is not
    linked again; so importing a file twice changes nothing the second time. Returns how many
    memories were new; ``progress`` counts the others too."""
    for memory in memories:
        repo.validate(memory)
    stored = set(await repo.store.get_many(repo.agent_id, list({m.id for m in memories})))
    seen: set[str] = set()
    new: list[Memory] = []
    for memory in memories:
        if memory.id not in stored and memory.id not in seen:
            seen.add(memory.id)
            new.append(memory)
    if progress and len(new) < len(memories):
        progress(len(memories) - len(new))
    async with repo.store.bulk_load():  # into an empty store, the vector index is built at the end
        for i in range(0, len(new), IMPORT_BATCH):
            batch = new[i : i + IMPORT_BATCH]
            embedded, _ = await repo.embed(batch, known=vectors)
            await repo.create_many(batch, actor=actor, action=HistoryAction.IMPORT, embedded=embedded)
            if progress:
                progress(len(batch))
    known = {m.id for m in memories}
    missing = {e.source_id for e in edges} | {e.target_id for e in edges}
    present = set(await repo.store.get_many(repo.agent_id, list(missing - known))) | known
    linked = {
        (e.source_id, e.target_id, e.relation) for e in await repo.store.edges(repo.agent_id, list(missing))
    }
    ops: list[WriteOp] = []
    for e in edges:
        key = (e.source_id, e.target_id, e.relation)
        if e.source_id in present and e.target_id in present and key not in linked:
            linked.add(key)
            ops.append(PutEdge(e))
            ops.append(
                repo.audit(
                    e.source_id,
                    HistoryAction.LINK,
                    new={"target_id": e.target_id, "relation": e.relation.value, "weight": e.weight},
                    actor=actor,
                )
            )
    if ops:
        await repo.store.apply(ops)
    return len(new)


def read_lines(stream: IO[str]) -> list[str]:
    try:
        return stream.read().splitlines()
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"file is not valid UTF-8: {exc}") from None
