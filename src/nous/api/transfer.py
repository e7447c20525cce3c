"""Export and import of an agent's memories and edges as JSON Lines.

The first line is a header; then one ``{"memory": {...}}`` line per memory and one
``{"edge": {...}}`` line per edge. Import validates the whole file before writing,
names the first bad line, and is idempotent (ids are kept), so an interrupted
import resumes cleanly when run again.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import IO, Any

from pydantic import ValidationError

from nous._time import utcnow
from nous.errors import InvalidInputError
from nous.memory import MemoryRepository
from nous.models import MEMORY_TYPES, Edge, HistoryAction, Memory, MemoryKind
from nous.storage.base import PutEdge

FORMAT_VERSION = 1
IMPORT_BATCH = 256


async def export_lines(repo: MemoryRepository) -> AsyncIterator[str]:
    """The export of one agent, line by line (without newlines)."""
    yield json.dumps(
        {
            "nous_export": FORMAT_VERSION,
            "agent_id": repo.agent_id,
            "exported_at": utcnow().isoformat(),
            "embedding_model": repo.embedder.model_name,
        }
    )
    async for memory in repo.store.iter_memories(repo.agent_id):
        yield json.dumps({"memory": {"kind": memory.kind.value, **memory.model_dump(mode="json")}})
    for edge in await repo.store.all_edges(repo.agent_id):
        yield json.dumps({"edge": edge.model_dump(mode="json")})


def parse_lines(lines: Iterable[str], agent_id: str) -> tuple[list[Memory], list[Edge]]:
    """Validate every line of an export; the memories and edges, re-scoped to ``agent_id``."""
    memories: list[Memory] = []
    edges: list[Edge] = []
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
                continue
            if "memory" in record:
                data: dict[str, Any] = dict(record["memory"])
                cls = MEMORY_TYPES[MemoryKind(data.pop("kind"))]
                data.pop("effectiveness", None)
                memories.append(cls.model_validate({**data, "agent_id": agent_id}))
            elif "edge" in record:
                edges.append(Edge.model_validate({**record["edge"], "agent_id": agent_id}))
            else:
                raise ValueError("expected a 'memory' or 'edge' object")
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InvalidInputError(f"line {number}: {detail}", field=f"line {number}") from None
    return memories, edges


async def import_records(
    repo: MemoryRepository,
    memories: list[Memory],
    edges: list[Edge],
    progress: Callable[[int], None] | None = None,
) -> None:
    """Write validated records in batches; each batch is one transaction."""
    for memory in memories:
        repo.validate(memory)
    for i in range(0, len(memories), IMPORT_BATCH):
        batch = memories[i : i + IMPORT_BATCH]
        await repo.create_many(batch, actor="import", action=HistoryAction.IMPORT)
        if progress:
            progress(len(batch))
    known = {m.id for m in memories}
    missing = {e.source_id for e in edges} | {e.target_id for e in edges}
    present = set(await repo.store.get_many(repo.agent_id, list(missing - known))) | known
    await repo.store.apply([PutEdge(e) for e in edges if e.source_id in present and e.target_id in present])


def read_lines(stream: IO[str]) -> list[str]:
    try:
        return stream.read().splitlines()
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"file is not valid UTF-8: {exc}") from None
