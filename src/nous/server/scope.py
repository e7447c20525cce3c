"""Who a request speaks for, and what its key may reach.

An agent's key reaches all of that agent's memory. A user-bound key (an agent's key made for one
of its users) is narrower: it reads its user's memories and the agent's shared ones, changes only
its user's own, and its sessions are its user's alone. Agent-wide views (stats, events,
calibration, proposals, export, import) and the agent's shared organs (identity, censors,
procedures) are for the agent's key; a user-bound key reads, and its actions are checked against,
only the censors that bind its user (the agent's shared ones and its user's own). Another
agent's or user's memory answers 404 exactly as a missing id does, so no answer tells one caller
what another has.
"""

from typing import Any

from pydantic import BaseModel

from nous.api import Nous
from nous.errors import NotFoundError, PermissionDeniedError
from nous.models import Edge, Memory
from nous.models.session import SessionState


class Caller(BaseModel):
    """Who a request speaks for: an agent, and for a user-bound key, one of its users."""

    agent_id: str
    user_id: str | None = None

    def acting_user(self, user_id: str | None) -> str | None:
        """The user a call acts for. A user-bound key acts only as its own user (another user_id is
        refused, not silently replaced, so a client sees its mistake); an agent's key may act for
        any of its users, or for the agent as a whole when none is given."""
        if user_id is not None and not user_id.strip():
            user_id = None
        if self.user_id is None:
            return user_id
        if user_id not in (None, self.user_id):
            raise PermissionDeniedError(
                "this API key acts only as its own user; omit user_id or give that user"
            )
        return self.user_id

    def session_key(self, session_id: str) -> str:
        """The stored id of this caller's session ``session_id``. A user-bound key's sessions are
        kept under its user, so two users of one agent may both use "s1" and neither reaches the
        other's (the length prefix keeps any user id and session id apart)."""
        if self.user_id is None:
            return session_id
        return f"~{len(self.user_id)}:{self.user_id}:{session_id}"

    def session_keys(self, session_id: str | None) -> str | None:
        return None if session_id is None else self.session_key(session_id)

    def own_session_id(self, stored: str | None) -> str | None:
        """A stored session id as this caller names it (``session_key`` undone); None if there is
        none or it is not this caller's session."""
        if stored is None:
            return None
        prefix = self.session_key("")
        return stored[len(prefix) :] if stored.startswith(prefix) else None

    def own_session(self, state: SessionState) -> SessionState | None:
        """``state`` with the caller's own session id, or None if it is not the caller's session."""
        own = self.own_session_id(state.session_id)
        return None if own is None else state.model_copy(update={"session_id": own})

    def outside(self, answer: dict[str, Any], session_id: str) -> dict[str, Any]:
        """``answer`` with the caller's own session id in place of the stored one."""
        if "session_id" in answer:
            answer["session_id"] = session_id
        return answer

    def require_agent_key(self, what: str) -> None:
        """PermissionDeniedError for a user-bound key asking for an agent-wide ``what``."""
        if self.user_id is not None:
            raise PermissionDeniedError(
                f"{what} is for the agent's key; a user-bound key reaches only its user's memories"
            )


async def visible(nous: Nous, caller: Caller, memory_id: str) -> Memory:
    """The caller's memory (a user-bound key sees its user's and the shared ones); NotFoundError
    (404) otherwise, worded as for a missing id."""
    memory = await nous.get(memory_id)
    if caller.user_id is not None and memory.user_id not in (None, caller.user_id):
        raise NotFoundError(f"no memory with id {memory_id!r}")
    return memory


async def owned(nous: Nous, caller: Caller, memory_id: str) -> Memory:
    """The caller's memory to change: as ``visible``, and a user-bound key may not change the
    agent's shared memory (403; it can read that memory, so the answer reveals nothing)."""
    memory = await visible(nous, caller, memory_id)
    if caller.user_id is not None and memory.user_id is None:
        raise PermissionDeniedError(
            f"memory {memory_id!r} is the agent's shared memory; a user-bound key changes only its user's"
        )
    return memory


async def linked(
    nous: Nous, caller: Caller, memory: Memory, *, limit: int = 200
) -> list[tuple[Edge, Memory]]:
    """The edges touching ``memory``, each with the memory at its other end, newest first: only
    those whose other end the caller sees (a user-bound key does not learn of another user's
    memory through a link), and at most ``limit``."""
    found: list[tuple[Edge, Memory]] = []
    for edge in await nous.edges(memory.id):
        other_id = edge.target_id if edge.source_id == memory.id else edge.source_id
        try:
            other = await visible(nous, caller, other_id)
        except NotFoundError:  # purged, or another user's
            continue
        found.append((edge, other))
        if len(found) >= limit:
            break
    return found
