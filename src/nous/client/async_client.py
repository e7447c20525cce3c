"""A Python client for `nous serve` with the method names of ``Nous``, so a script moves from the
embedded engine to a server by changing one line:

    nous = Nous()                                            # embedded
    nous = AsyncClient("http://127.0.0.1:8765", key=KEY)     # the same calls, over HTTP

Problem-details errors come back as the same typed errors the engine raises.
"""

from __future__ import annotations

from datetime import datetime
from types import TracebackType
from typing import Any

import httpx

from nous.errors import (
    AuthenticationError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    NousError,
    StorageError,
)
from nous.models import MEMORY_TYPES, Memory, MemoryKind, RecallHit, WriteResult, WriteStatus


def _memory(data: dict[str, Any]) -> Memory:
    body = dict(data)
    kind = MemoryKind(body.pop("type", None) or body.pop("kind"))
    return MEMORY_TYPES[kind].model_validate(body)


def _error(response: httpx.Response) -> NousError:
    try:
        body = response.json()
        detail = str(body.get("detail") or body.get("title") or response.text)
    except ValueError:
        body, detail = {}, response.text[:500]
    status = response.status_code
    if status in (401, 403):
        return AuthenticationError(detail)
    if status == 404:
        return NotFoundError(detail)
    if status == 409:
        return ConflictError(detail)
    if status in (400, 413, 422):
        return InvalidInputError(detail, field=body.get("field") if isinstance(body, dict) else None)
    if status >= 500:
        return StorageError(f"server error {status}: {detail}")
    return NousError(f"HTTP {status}: {detail}")


class AsyncClient:
    """The REST API of one agent (the key's) as ``Nous``-like async methods."""

    def __init__(self, url: str, *, key: str | None = None, timeout: float = 60.0) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.AsyncClient(base_url=url.rstrip("/"), headers=headers, timeout=timeout)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, *, json: Any = None, params: Any = None) -> Any:
        try:
            response = await self._http.request(method, path, json=json, params=params)
        except httpx.HTTPError as exc:
            raise StorageError(f"cannot reach the Nous server at {self._http.base_url}: {exc}") from exc
        if response.status_code >= 400:
            raise _error(response)
        return response.json()

    # -- the Nous methods ---------------------------------------------------------------------
    async def health(self) -> dict[str, Any]:
        return dict(await self._call("GET", "/health"))

    async def learn(self, content: str, **fields: Any) -> WriteResult:
        return await self._create({"type": "fact", "content": content, **fields})

    async def add_procedure(self, name: str, description: str, **fields: Any) -> WriteResult:
        return await self._create({"type": "procedure", "name": name, "content": description, **fields})

    async def add_censor(self, trigger_pattern: str, **fields: Any) -> WriteResult:
        return await self._create({"type": "censor", "content": trigger_pattern, **fields})

    async def record_decision(self, description: str, **fields: Any) -> Memory:
        return (await self._create({"type": "decision", "content": description, **fields})).memory

    async def _create(self, body: dict[str, Any]) -> WriteResult:
        data = await self._call("POST", "/v1/memories", json=body)
        return WriteResult(
            status=WriteStatus(data["status"]),
            memory=_memory({"type": data["type"], **data["memory"]}),
            existing_id=data.get("existing_id"),
            similarity=data.get("similarity"),
            warnings=data.get("warnings") or [],
        )

    async def get(self, memory_id: str) -> Memory:
        return _memory(await self._call("GET", f"/v1/memories/{memory_id}"))

    async def update(self, memory_id: str, **changes: Any) -> Memory:
        return _memory(await self._call("PATCH", f"/v1/memories/{memory_id}", json=changes))

    async def forget(self, memory_id: str, *, hard: bool = False) -> Memory:
        return _memory(await self._call("DELETE", f"/v1/memories/{memory_id}", params={"hard": hard}))

    async def restore(self, memory_id: str) -> Memory:
        return _memory(await self._call("POST", f"/v1/memories/{memory_id}/restore"))

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        return list(await self._call("GET", f"/v1/memories/{memory_id}/history"))

    async def memories(self, kinds: list[str] | str | None = None, *, limit: int = 50) -> list[Memory]:
        params: dict[str, Any] = {"limit": limit}
        if kinds:
            params["types"] = [kinds] if isinstance(kinds, str) else kinds
        return [_memory(m) for m in (await self._call("GET", "/v1/memories", params=params))["items"]]

    async def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        kinds: list[str] | str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        session_id: str | None = None,
        frame: str | None = None,
        preset: str | None = None,
        min_score: float | None = None,
    ) -> list[RecallHit]:
        body: dict[str, Any] = {"query": query, "limit": limit, "session_id": session_id, "frame": frame}
        body |= {
            "preset": preset,
            "types": [kinds] if isinstance(kinds, str) else kinds,
            "min_score": min_score,
        }
        body |= {"since": since.isoformat() if since else None, "until": until.isoformat() if until else None}
        data = await self._call("POST", "/v1/recall", json={k: v for k, v in body.items() if v is not None})
        return [
            RecallHit(
                id=r["id"],
                kind=MemoryKind(r["type"]),
                content=r["content"],
                score=r["score"],
                signals=r["signals"],
                occurred_at=r["occurred_at"],
                current=r["current"],
                memory=_memory({"type": r["type"], **r["memory"]}),
            )
            for r in data["results"]
        ]

    async def check_similar(
        self, content: str, kind: str = "fact", *, subject: str | None = None
    ) -> dict[str, Any]:
        body = {"content": content, "type": kind, "subject": subject}
        return dict(await self._call("POST", "/v1/memories/check-similar", json=body))

    async def pre_turn(self, session_id: str, user_text: str, *, budget: int | None = None) -> dict[str, Any]:
        body = {"text": user_text, "budget": budget}
        return dict(await self._call("POST", f"/v1/sessions/{session_id}/turns", json=body))

    async def post_turn(
        self, session_id: str, reply: str, *, tools_used: list[str] | None = None
    ) -> dict[str, Any]:
        body = {"reply": reply, "tools_used": tools_used or []}
        return dict(await self._call("POST", f"/v1/sessions/{session_id}/reply", json=body))

    async def end_session(self, session_id: str, *, reflection: str | None = None) -> dict[str, Any]:
        return dict(
            await self._call("POST", f"/v1/sessions/{session_id}/end", json={"reflection": reflection})
        )

    async def check_action(self, action_text: str, *, session_id: str | None = None) -> dict[str, Any]:
        body = {"action": action_text, "session_id": session_id}
        return dict(await self._call("POST", "/v1/check-action", json=body))

    async def stats(self) -> dict[str, Any]:
        return dict(await self._call("GET", "/v1/stats"))
