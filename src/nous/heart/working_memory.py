"""Working memory: per-session task, frame, focus items and open threads, persisted.

Every change is a compare-and-swap on the row's ``updated_at``: if another process changed the
session's working memory since it was read, the change is applied again to a fresh read, so two
processes adding focus items at once both keep theirs.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

from nous._time import utcnow
from nous.memory import MemoryRepository
from nous.memory.cas import with_retries
from nous.memory.repository import invalid_from_pydantic
from nous.models import HistoryAction, WorkingMemory, WorkingMemoryItem
from nous.storage.base import PutWorkingMemory


class WorkingMemoryOrgan:
    """Reads and updates working memory; state lives in the store, not in process dicts."""

    def __init__(self, repo: MemoryRepository) -> None:
        self.repo = repo

    async def get(self, session_id: str) -> WorkingMemory:
        """The session's working memory (empty if none yet)."""
        found = await self.repo.store.working_memory(self.repo.agent_id, session_id)
        return found or WorkingMemory(agent_id=self.repo.agent_id, session_id=session_id)

    async def _modify(self, session_id: str, change: Callable[[WorkingMemory], None]) -> WorkingMemory:
        async def attempt() -> WorkingMemory:
            found = await self.repo.store.working_memory(self.repo.agent_id, session_id)
            expected = found.updated_at if found else None  # before ``change`` touches the object
            wm = found or WorkingMemory(agent_id=self.repo.agent_id, session_id=session_id)
            before = wm.model_dump(mode="json", exclude={"updated_at"})
            change(wm)
            wm.updated_at = utcnow()
            op = PutWorkingMemory(wm, expect_updated_at=expected, check=True)
            after = wm.model_dump(mode="json", exclude={"updated_at"})
            changed = {k for k in after if after[k] != before.get(k)}
            audit = self.repo.audit(  # working memory is audited like any memory (id "working:<session>")
                f"working:{session_id}",
                HistoryAction.UPDATE,
                old={k: before.get(k) for k in changed},
                new={k: after[k] for k in changed},
                actor="api",
            )
            await self.repo.store.apply([op, audit])
            return wm

        return await with_retries(attempt)

    async def set_task(self, session_id: str, task: str | None, *, frame: str | None = None) -> WorkingMemory:
        def change(wm: WorkingMemory) -> None:
            wm.current_task = task
            if frame is not None:
                wm.frame = frame

        return await self._modify(session_id, change)

    async def focus(
        self,
        session_id: str,
        content: str,
        *,
        relevance: float = 0.5,
        kind: str = "note",
        memory_id: str | None = None,
    ) -> WorkingMemory:
        """Add a focus item, stamped with the session's frame and active censors; beyond 20 items
        the least relevant are dropped."""
        state = await self.repo.store.session(self.repo.agent_id, session_id)
        try:
            item = WorkingMemoryItem(
                content=content,
                relevance=relevance,
                kind=kind,
                memory_id=memory_id,
                frame=state.frame if state else None,
                censors=list(state.active_censors) if state else [],
            )
        except ValidationError as exc:
            raise invalid_from_pydantic(exc) from None
        return await self._modify(session_id, lambda wm: wm.focus(item))

    async def open_thread(self, session_id: str, thread: str) -> WorkingMemory:
        def change(wm: WorkingMemory) -> None:
            if thread not in wm.open_threads:
                wm.open_threads.append(thread)

        return await self._modify(session_id, change)

    async def clear(self, session_id: str) -> WorkingMemory:
        def change(wm: WorkingMemory) -> None:
            wm.current_task, wm.frame, wm.items, wm.open_threads = None, None, [], []

        return await self._modify(session_id, change)
