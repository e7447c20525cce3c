"""A conversation ingest as a durable job: the ``ingest.requested`` event carries the parsed
conversation, and the outbox worker stores it. Ingest skips the sessions already stored (each is
written in one transaction under an id derived from the conversation and session ids), so a job
whose worker stopped mid-way is simply run again by the next worker and every message is stored
once."""

from __future__ import annotations

from nous.events.context import PipelineContext
from nous.heart.episodes import Episodes
from nous.heart.sessions import Sessions
from nous.ingest.formats import Conversation
from nous.ingest.ingest import ingest_conversation
from nous.models.events import Event
from nous.storage import WriteOp

# Messages stored so far by the jobs running in this process, by job (event) id: what a job's
# progress reads while it runs here. A pending job has done none; a done one, all.
PROGRESS: dict[str, int] = {}


def job_payload(conversation: Conversation, user_id: str | None) -> dict[str, object]:
    """The event payload of an ingest job."""
    total = sum(len(s.messages) for s in conversation.sessions)
    return {"conversation": conversation.model_dump(mode="json"), "user_id": user_id, "total": total}


async def run_ingest(event: Event, ctx: PipelineContext) -> list[WriteOp]:
    """Store the event's conversation (its writes commit as it goes; the event's done mark follows)."""
    conversation = Conversation.model_validate(event.payload["conversation"])
    sessions = Sessions(ctx.repo, Episodes(ctx.repo))
    PROGRESS[event.id] = 0

    def progress(messages: int) -> None:
        PROGRESS[event.id] = PROGRESS.get(event.id, 0) + messages

    try:
        await ingest_conversation(
            ctx.repo, conversation, sessions=sessions, user_id=event.payload.get("user_id"), progress=progress
        )
    finally:
        PROGRESS.pop(event.id, None)
    return []
