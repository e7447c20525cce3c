"""Censors: what not to do. Enforced on actions (``check_action``), escalated, edited, retired.

A censor fires on an action text by its trigger pattern or by meaning (see
``nous.heart.censor_rules``). Each firing is counted (with ``record``), and a ``warn`` censor
that has fired ``escalation_threshold`` times becomes a ``block`` one. ``absolute`` is set by a
person only: escalation stops at ``block``, and no override lifts an ``absolute`` censor.

A censor made for one user (``user_id``) binds that user alone: only that user's actions are
checked against it, so only they fire it, count towards its escalation or show it in context. A
censor with no user is the agent's, shared: it binds every user, and actions for no user.

Every change to a censor (an activation, a false-positive report, an edit, retirement) is one
history row. Changes to one agent's censors are serialised in this process, so concurrent checks
never lose an activation; two processes checking the same censor at the same instant can still
both read the same count (the store has no atomic increment), so a count may then be one short.
"""

from __future__ import annotations

import asyncio
import weakref
from datetime import datetime
from typing import Any, Literal

from nous._text import validate_content
from nous._time import utcnow
from nous.errors import EmbeddingError, InvalidInputError
from nous.heart.censor_rules import (
    ActionCheck,
    CensorMatch,
    decide,
    describe,
    fires_by_meaning,
    match_patterns,
    similarities,
    validate_pattern,
)
from nous.memory import MemoryRepository
from nous.memory.cas import with_retries
from nous.memory.parsing import enum_value
from nous.memory.repository import build
from nous.memory.write_path import WritePath
from nous.models import Censor, CensorAction, HistoryAction, MemoryKind, Provenance, WriteResult
from nous.storage import Store
from nous.storage.base import PutMemory
from nous.storage.codec import content_hash

_ESCALATION = {CensorAction.WARN: CensorAction.BLOCK}
_MAX_CENSORS = 10_000
_SNIPPET_CHARS = 200
# One lock per (store, agent): views of the same agent (``Nous.for_agent``) share it.
_LOCKS: weakref.WeakKeyDictionary[Store, dict[str, asyncio.Lock]] = weakref.WeakKeyDictionary()


def censor_content(trigger_pattern: str, reason: str | None) -> str:
    """The stored (and embedded) text of a censor."""
    return f"{trigger_pattern} — {reason}" if reason else trigger_pattern


class Censors:
    """Add, check, edit and retire censors."""

    def __init__(self, repo: MemoryRepository, write_path: WritePath) -> None:
        self.repo = repo
        self.write_path = write_path
        self._lock = _LOCKS.setdefault(repo.store, {}).setdefault(repo.agent_id, asyncio.Lock())

    async def add(
        self,
        trigger_pattern: str,
        *,
        action: str | CensorAction = CensorAction.WARN,
        reason: str | None = None,
        domain: str | None = None,
        escalation_threshold: int = 3,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        occurred_at: datetime | None = None,
        dedup: bool = True,
        actor: str = "api",
    ) -> WriteResult:
        """Store a censor (set at ``occurred_at``, default now; with ``user_id``, for that user
        only) through search-before-store. The trigger is a case-insensitive regex, validated
        here (InvalidInputError on a bad or catastrophic pattern)."""
        validate_pattern(trigger_pattern)
        act = enum_value(CensorAction, action, field="action")
        censor = build(
            Censor,
            agent_id=self.repo.agent_id,
            content=censor_content(trigger_pattern, reason),
            trigger_pattern=trigger_pattern,
            action=act,
            reason=reason,
            domain=domain,
            category=domain,
            escalation_threshold=escalation_threshold,
            tags=tags,
            metadata=metadata,
            user_id=user_id,
            occurred_at=occurred_at,
            valid_from=occurred_at,
            provenance=Provenance(source=actor),
        )
        return await self.write_path.store(censor, actor=actor, dedup=dedup)

    async def active(
        self, *, limit: int = 200, user_id: str | None = None, every_user: bool = False
    ) -> list[Censor]:
        """Censors in force (retired and superseded ones left out), newest first: those that bind
        ``user_id`` (that user's own and the agent's shared ones; with no user, the shared ones
        only), or with ``every_user`` all of the agent's, whichever user they were made for."""
        scope: dict[str, Any] = {}
        if not every_user:
            scope = {"user_id": user_id, "shared": True} if user_id else {"shared_only": True}
        found = await self.repo.query(kinds=(MemoryKind.CENSOR,), limit=limit, **scope)
        return [c for c in found if isinstance(c, Censor)]

    async def get(self, censor_id: str) -> Censor:
        """One censor by id or 6+ character prefix (retired ones too)."""
        return await self.repo.get_typed(censor_id, Censor)

    # -- enforcement ---------------------------------------------------------------------------
    async def check_action(
        self,
        action_text: str,
        *,
        record: bool = True,
        actor: str = "api",
        override: bool = False,
        session_id: str | None = None,
        user_id: str | None = None,
    ) -> ActionCheck:
        """Judge an action the agent is about to take, for ``user_id``, against the censors that
        bind that user (``active``): another user's censor never fires on it nor counts it.

        ``decision`` is the strongest action among the censors that fire: ``allow``, ``warn``
        (go ahead, tell someone) or ``block``. An ``absolute`` censor counts as ``block`` and
        is never overridable; ``override=True`` turns a plain ``block`` into ``warn`` only.
        With ``record`` each firing is counted (and may escalate the censor); ``session_id``
        is noted in the censor's history.
        """
        text = validate_content(action_text, field="action_text", max_bytes=self.repo.max_content_bytes)
        censors = await self.active(limit=_MAX_CENSORS, user_id=user_id)
        warnings: list[str] = []
        try:
            similarity = await similarities(self.repo, text, censors)
        except EmbeddingError as exc:
            similarity = {}
            warnings.append(f"semantic check unavailable, patterns only: {exc}")
        hits = await match_patterns([c.trigger_pattern for c in censors], text)
        matches: list[CensorMatch] = []
        for censor, hit in zip(censors, hits, strict=True):
            sim = similarity.get(censor.id)
            if hit is None:
                warnings.append(f"censor {censor.id[:8]}: pattern ran out of time; treated as a match")
            elif not hit and not fires_by_meaning(censor, text, sim):
                continue
            how: Literal["pattern", "semantic"] = "semantic" if hit is False else "pattern"
            escalated = False
            if record:
                context: dict[str, Any] = {
                    "how": how,
                    "similarity": None if sim is None else round(sim, 4),
                    "text": text[:_SNIPPET_CHARS],
                }
                if session_id is not None:
                    context["session_id"] = session_id
                censor, escalated = await self._activate(censor.id, actor=actor, context=context)
            match = CensorMatch(
                censor=censor,
                action=censor.action,
                escalated=escalated,
                how=how,
                similarity=None if sim is None else round(sim, 4),
                timed_out=hit is None,
            )
            match.reason = describe(match)
            matches.append(match)
        verdict = decide(matches, override=override)
        verdict.warnings = warnings
        return verdict

    async def check(
        self, text: str, *, record: bool = True, actor: str = "api", user_id: str | None = None
    ) -> list[CensorMatch]:
        """The censors that fire on ``text`` (``check_action`` without the verdict)."""
        return (await self.check_action(text, record=record, actor=actor, user_id=user_id)).matches

    async def _activate(self, censor_id: str, *, actor: str, context: dict[str, Any]) -> tuple[Censor, bool]:
        """Count one firing; a warn censor at its escalation threshold becomes block."""

        async def attempt() -> tuple[Censor, bool]:  # another process may count the same censor
            current = await self.get(censor_id)
            count = current.activation_count + 1
            changes: dict[str, Any] = {"activation_count": count}
            escalated = current.action in _ESCALATION and count >= current.escalation_threshold
            if escalated:
                changes["action"] = _ESCALATION[current.action]
            return await self._write(current, changes, actor=actor, note={"activation": context}), escalated

        async with self._lock:
            return await with_retries(attempt)

    async def _write(
        self,
        current: Censor,
        changes: dict[str, Any],
        *,
        actor: str,
        note: dict[str, Any] | None = None,
        action: HistoryAction = HistoryAction.UPDATE,
    ) -> Censor:
        """Apply changes that leave the embedded text alone, with one history row (old, new and
        ``note``). Callers hold the lock and pass the censor as just read; if another process
        changed it since, StaleWriteError (nothing written) and the caller reads again."""
        updated = Censor.model_validate({**current.model_dump(), **changes, "updated_at": utcnow()})
        self.repo.validate(updated)
        old, new = current.model_dump(mode="json"), updated.model_dump(mode="json")
        await self.repo.store.apply(
            [
                PutMemory(
                    memory=updated,
                    content_hash=content_hash(updated),
                    keep_embedding=True,
                    expect_updated_at=current.updated_at,  # compare-and-swap: no lost count
                ),
                self.repo.audit(
                    updated.id,
                    action,
                    old={k: old[k] for k in changes},
                    new={**{k: new[k] for k in changes}, **(note or {})},
                    actor=actor,
                ),
            ]
        )
        return updated

    # -- management ----------------------------------------------------------------------------
    async def report_false_positive(
        self, censor_id: str, note: str | None = None, *, actor: str = "api"
    ) -> Censor:
        """Record that the censor fired on an action it should not have (counted, in history)."""
        if note is not None:
            note = validate_content(note, field="note", max_bytes=self.repo.max_content_bytes)

        async def attempt() -> Censor:
            current = await self.get(censor_id)
            changes = {"false_positive_count": current.false_positive_count + 1}
            return await self._write(current, changes, actor=actor, note={"false_positive": note or ""})

        async with self._lock:
            return await with_retries(attempt)

    async def edit(
        self,
        censor_id: str,
        *,
        trigger_pattern: str | None = None,
        action: str | CensorAction | None = None,
        reason: str | None = None,
        escalation_threshold: int | None = None,
        reset_activations: bool = False,
        actor: str = "api",
    ) -> Censor:
        """Change a censor's pattern, action, reason or threshold (audited; a new pattern or
        reason is re-embedded; an empty reason clears it). The activation count is kept, whatever
        changes, unless ``reset_activations`` sets it back to 0 (a warn censor whose count is
        already at its threshold becomes block at its next firing)."""
        if (
            trigger_pattern is None
            and action is None
            and reason is None
            and escalation_threshold is None
            and not reset_activations
        ):
            raise InvalidInputError(
                "nothing to edit: give a pattern, action, reason, threshold or a reset of the count"
            )
        if trigger_pattern is not None:
            validate_pattern(trigger_pattern)
        act = enum_value(CensorAction, action, field="action") if action is not None else None
        async with self._lock:
            current = await self.get(censor_id)
            changes: dict[str, Any] = {}
            if trigger_pattern is not None:
                changes["trigger_pattern"] = trigger_pattern
            if reason is not None:
                changes["reason"] = reason or None
            if trigger_pattern is not None or reason is not None:
                changes["content"] = censor_content(
                    changes.get("trigger_pattern", current.trigger_pattern),
                    changes.get("reason", current.reason),
                )
            if act is not None and act != current.action:
                changes["action"] = act
            if escalation_threshold is not None:
                changes["escalation_threshold"] = escalation_threshold
            if reset_activations and current.activation_count:
                changes["activation_count"] = 0
            if not changes:  # every value given is the one in force: nothing to write
                return current
            updated = await self.repo.update(current.id, changes, actor=actor, kind=MemoryKind.CENSOR)
        assert isinstance(updated, Censor)
        return updated

    async def retire(self, censor_id: str, reason: str | None = None, *, actor: str = "api") -> Censor:
        """Take a censor out of force for good: it never fires again, its history stays
        (``restore`` on the Nous API brings it back)."""
        if reason is not None:
            reason = validate_content(reason, field="reason", max_bytes=self.repo.max_content_bytes)
        async with self._lock:
            current = await self.get(censor_id)
            if not current.active:
                return current
            return await self._write(
                current,
                {"active": False},
                actor=actor,
                note={"retired": reason or ""},
                action=HistoryAction.DELETE,
            )
