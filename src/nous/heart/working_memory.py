"""Working memory: per-session task, frame, focus items and open threads, persisted."""

from __future__ import annotations

from pydantic import ValidationError

from nous._time import utcnow
from nous.memory import MemoryRepository
from nous.memory.repository import invalid_from_pydantic
from nous.models import WorkingMemory, WorkingMemoryItem
from nous.storage.base import PutWorkingMemory


class WorkingMemoryOrgan:
    """Reads and updates working memory; state lives in the store, not in process dicts."""

    def __init__(self, repo: MemoryRepository) -> None:
        self.repo = repo

    async def get(self, session_id: str) -> WorkingMemory:
        """The session's working memory (empty if none yet)."""
        found = await self.repo.store.working_memory(self.repo.agent_id, session_id)
        return found or WorkingMemory(agent_id=self.repo.agent_id, session_id=session_id)

    async def _save(self, wm: WorkingMemory) -> WorkingMemory:
        wm.updated_at = utcnow()
        await self.repo.store.apply([PutWorkingMemory(wm)])
        return wm

    async def set_task(self, session_id: str, task: str | None, *, frame: str | None = None) -> WorkingMemory:
        wm = await self.get(session_id)
        wm.current_task = task
        if frame is not None:
            wm.frame = frame
        return await self._save(wm)

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
        stamp = {"frame": state.frame, "censors": state.active_censors} if state is not None else {}
        try:
            item = WorkingMemoryItem(
                content=content, relevance=relevance, kind=kind, memory_id=memory_id, **stamp
            )
        except ValidationError as exc:
            raise invalid_from_pydantic(exc) from None
        wm = await self.get(session_id)
        wm.focus(item)
        return await self._save(wm)

    async def open_thread(self, session_id: str, thread: str) -> WorkingMemory:
        wm = await self.get(session_id)
        if thread not in wm.open_threads:
            wm.open_threads.append(thread)
        return await self._save(wm)

    async def clear(self, session_id: str) -> WorkingMemory:
        return await self._save(WorkingMemory(agent_id=self.repo.agent_id, session_id=session_id))
