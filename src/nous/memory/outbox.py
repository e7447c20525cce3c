"""Which memory changes write an event to the outbox (in the same transaction as the change)."""

from __future__ import annotations

from nous.models import Decision, Episode, Fact, Memory
from nous.models.events import Event, EventKind
from nous.storage.base import EmitEvent


def memory_events(before: Memory | None, after: Memory) -> list[EmitEvent]:
    """Events for one memory write: a new fact or decision, an episode that just closed."""
    kind: EventKind | None = None
    if before is None and isinstance(after, Fact) and after.active:
        kind = EventKind.FACT_WRITTEN
    elif before is None and isinstance(after, Decision):
        kind = EventKind.DECISION_RECORDED
    elif (
        isinstance(after, Episode)
        and after.ended_at is not None
        and after.active
        and (before is None or getattr(before, "ended_at", None) is None)
    ):
        kind = EventKind.EPISODE_CLOSED
    if kind is None:
        return []
    payload = {"session_id": after.session_id} if after.session_id else {}
    return [EmitEvent(Event(agent_id=after.agent_id, kind=kind, subject_id=after.id, payload=payload))]


def session_ended_event(agent_id: str, session_id: str) -> EmitEvent:
    """The event of a session's end: placed right after the op that ends it, and written only if
    that op changed something (a session ends once, however many callers try)."""
    return EmitEvent(
        Event(agent_id=agent_id, kind=EventKind.SESSION_ENDED, subject_id=session_id),
        if_changed=True,
    )
