"""What the HTTP providers share: one async client, timeouts and status codes as typed errors."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from nous.errors import LLMError


@dataclass(frozen=True)
class WholeReply:
    """A plain JSON answer to a request for a stream: some servers ignore ``stream: true``."""

    data: dict[str, Any]


class HTTPChat:
    """POSTs JSON to one API and turns transport failures into LLMError."""

    def __init__(self, base_url: str, headers: dict[str, str], timeout_s: float, label: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.label = label
        self.client = httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=timeout_s)

    async def post(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """The decoded JSON reply and the call's latency in milliseconds."""
        started = time.perf_counter()
        try:
            response = await self.client.post(path, json=body)
        except httpx.TimeoutException as exc:
            raise LLMError(f"{self.label} at {self.base_url} timed out: {exc}") from exc
        except httpx.HTTPError as exc:
            raise LLMError(f"{self.label} at {self.base_url} is unreachable: {exc}") from exc
        latency = (time.perf_counter() - started) * 1000
        if response.status_code == 429:
            raise LLMError(f"{self.label} at {self.base_url} is rate limiting (429): {response.text[:200]}")
        if response.status_code != 200:
            raise LLMError(
                f"{self.label} at {self.base_url} answered {response.status_code}: {response.text[:200]}"
            )
        try:
            data = response.json()
        except ValueError as exc:
            raise LLMError(f"{self.label} at {self.base_url} sent a body that is not JSON") from exc
        if not isinstance(data, dict):
            raise LLMError(f"{self.label} at {self.base_url} sent an unexpected body")
        return data, latency

    async def events(self, path: str, body: dict[str, Any]) -> AsyncIterator[dict[str, Any] | WholeReply]:
        """The JSON payloads of a server-sent-events reply (``data: {...}`` lines), in order; or,
        from a server that answered with one JSON document instead of a stream, that document
        alone as a ``WholeReply``."""
        try:
            async with self.client.stream("POST", path, json=body) as response:
                if response.status_code != 200:
                    text = (await response.aread()).decode("utf-8", "replace")[:200]
                    raise LLMError(f"{self.label} at {self.base_url} answered {response.status_code}: {text}")
                kind = response.headers.get("content-type", "")
                if "json" in kind and "event-stream" not in kind:
                    try:
                        whole = json.loads(await response.aread())
                    except ValueError as exc:
                        raise LLMError(
                            f"{self.label} at {self.base_url} sent a body that is not JSON"
                        ) from exc
                    if not isinstance(whole, dict):
                        raise LLMError(f"{self.label} at {self.base_url} sent an unexpected body")
                    yield WholeReply(whole)
                    return
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        return
                    try:
                        event = json.loads(payload)
                    except ValueError as exc:
                        raise LLMError(
                            f"{self.label} at {self.base_url} streamed a line that is not JSON"
                        ) from exc
                    if isinstance(event, dict):
                        yield event
        except httpx.TimeoutException as exc:
            raise LLMError(f"{self.label} at {self.base_url} timed out: {exc}") from exc
        except httpx.HTTPError as exc:
            raise LLMError(f"{self.label} at {self.base_url} is unreachable: {exc}") from exc

    async def aclose(self) -> None:
        await self.client.aclose()
