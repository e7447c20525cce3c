"""Topic threads over REST: the caller's threads (newest activity first, or the best matching a
query) and one thread with its members in time order. A user-bound key reaches its user's
threads and the agent's shared ones (``ThreadRef``, ``UserRef``)."""

from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel

from nous.models.threads import Thread
from nous.server.bodies import Cursor, PathId
from nous.server.callers import Agent, Who
from nous.server.routes import WINDOW, _offset, _page
from nous.server.scope import ThreadRef, UserRef


class ThreadPage(BaseModel):
    """Threads, newest activity first (or best match first for a query); ``next_cursor`` names
    the next page, within the first 1,000."""

    items: list[Thread]
    next_cursor: str | None = None


async def list_threads(
    caller: Who,
    nous: Agent,
    user_id: Annotated[str | None, UserRef()] = Query(
        default=None,
        max_length=200,
        description="Whose threads: that user's and the agent's shared ones. Omit: a user-bound key's "
        "own user; for the agent's key, every thread.",
    ),
    # A query string must fit the server's request line (h11 takes 16 KB of head): 1,000
    # characters are 12 KB percent-encoded at worst (four bytes each); at 10,000 the connection was
    # dropped unanswered.
    query: str | None = Query(
        default=None, max_length=1_000, description="A topic or question: the best matching threads first."
    ),
    limit: int = Query(default=20, ge=1, le=1000),
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Topic threads: ``Nous.threads``."""
    offset = _offset(cursor)
    found = await nous.threads(user_id=user_id, limit=min(offset + limit + 1, WINDOW), query=query)
    return _page([t.model_dump(mode="json") for t in found], offset, limit)


async def get_thread(thread_id: Annotated[PathId, ThreadRef()], caller: Who, nous: Agent) -> Thread:
    """One topic thread with its members in time order: ``Nous.thread``."""
    return await nous.thread(thread_id)
