"""What an event handler works with: the agent's repository and write path, and the language model."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nous.llm import Completion, LLMProvider
from nous.llm.offline import OfflineProvider
from nous.memory import MemoryRepository
from nous.memory.write_path import WritePath
from nous.models.events import Event
from nous.models.llm import LLMCall
from nous.storage import WriteOp
from nous.storage.base import RecordLLMCall


@dataclass(slots=True)
class PipelineContext:
    repo: MemoryRepository
    write_path: WritePath
    llm: LLMProvider

    @classmethod
    def offline(cls, repo: MemoryRepository) -> PipelineContext:
        return cls(repo, WritePath(repo), OfflineProvider())

    def usage_sink(self, purpose: str) -> Callable[[Completion | None, bool], Awaitable[None]]:
        """Records each language-model call at once (a call that happened counts, whatever follows)."""

        async def record(completion: Completion | None, ok: bool) -> None:
            await self.repo.store.apply(
                [
                    RecordLLMCall(
                        LLMCall(
                            agent_id=self.repo.agent_id,
                            provider=self.llm.name,
                            model=completion.model if completion else self.llm.model,
                            purpose=purpose,
                            input_tokens=completion.input_tokens if completion else 0,
                            output_tokens=completion.output_tokens if completion else 0,
                            latency_ms=completion.latency_ms if completion else 0.0,
                            ok=ok,
                        )
                    )
                ]
            )

        return record


Handler = Callable[[Event, PipelineContext], Awaitable[list[WriteOp]]]
