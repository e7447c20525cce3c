"""Identity: who the agent is, in versioned sections, every change in history; and the profile of
each user, built from that user's preference and person facts and the facts whose subject is the
user, with the standing instructions they gave."""

from __future__ import annotations

import asyncio
from datetime import datetime

from nous._text import validate_content
from nous._time import utcnow
from nous._tokens import count_tokens
from nous.errors import InvalidInputError
from nous.language.instructions import INSTRUCTION
from nous.memory import MemoryRepository
from nous.models import Fact, FactCategory, HistoryEntry, Memory, MemoryKind
from nous.models.session import SECTION_BUDGETS, IdentitySection
from nous.storage.base import SetIdentitySection

PROFILE_CATEGORIES = (FactCategory.PREFERENCE, FactCategory.PERSON)


class Identity:
    """Reads and writes the agent's identity sections."""

    def __init__(self, repo: MemoryRepository) -> None:
        self.repo = repo

    async def sections(self) -> list[IdentitySection]:
        """The sections that were set, in the fixed order (character first)."""
        found = {s.section: s for s in await self.repo.store.identity(self.repo.agent_id)}
        return [found[name] for name in SECTION_BUDGETS if name in found]

    async def set(self, section: str, content: str, *, actor: str = "api") -> IdentitySection:
        """Replace one section (its version goes up; the old text stays in history)."""
        if section not in SECTION_BUDGETS:
            raise InvalidInputError(
                f"unknown identity section {section!r}; known: {', '.join(SECTION_BUDGETS)}", field="section"
            )
        text = validate_content(content)
        tokens, budget = count_tokens(text), SECTION_BUDGETS[section]
        if tokens > budget:
            raise InvalidInputError(
                f"identity section {section!r} is {tokens} tokens; its budget is {budget}: shorten it",
                field="content",
            )
        op = SetIdentitySection(self.repo.agent_id, section, text, actor, utcnow())
        await self.repo.store.apply([op])
        return next(s for s in await self.sections() if s.section == section)

    async def history(self, section: str) -> list[HistoryEntry]:
        return await self.repo.store.history(self.repo.agent_id, f"identity:{section}")

    async def standing_instructions(
        self,
        user_id: str | None,
        *,
        about: str | None = None,
        before: datetime | None = None,
        limit: int = 20,
    ) -> list[Memory]:
        """What the user told the agent to do from now on ("Always give grams when I ask about
        recipes"), said before ``before``: that user's, or without a user the agent's own (no
        user's); the ``limit`` newest, closest in meaning to ``about`` first (else newest first)."""
        scope: dict[str, object] = {"user_id": user_id} if user_id else {"shared_only": True}
        told = await self.repo.query(category=INSTRUCTION, until=before, limit=limit, **scope)
        if about is None or len(told) < 2:
            return told
        question, vectors = await asyncio.gather(
            self.repo.embedder.embed_one(about),
            self.repo.store.vectors(self.repo.agent_id, [m.id for m in told]),
        )
        closeness = {i: float(v @ question) for i, v in vectors.items()}
        return sorted(told, key=lambda m: -closeness.get(m.id, -1.0))  # stable: newest first on ties

    async def user_profile(self, user_id: str, *, limit: int = 20) -> list[Fact]:
        """That user's live preference and person facts, and the live facts whose subject is the
        user: their id, in any case ("Alice" for the user "alice", whether the fact belongs to the
        user or to the whole agent), or "the user" in the user's own facts; newest first."""
        found, own, *about = await asyncio.gather(
            self.repo.query(kinds=(MemoryKind.FACT,), user_id=user_id, limit=200),
            self.repo.query(kinds=(MemoryKind.FACT,), user_id=user_id, subject="the user", limit=50),
            # the subject filter is exact: the spellings a name is written in, each one read
            *(
                self.repo.query(kinds=(MemoryKind.FACT,), user_id=user_id, shared=True, subject=s, limit=50)
                for s in _spellings(user_id)
            ),
        )
        facts = {
            f.id: f
            for f in found
            if isinstance(f, Fact) and f.category in PROFILE_CATEGORIES and f.superseded_by is None
        }
        for f in (f for group in about for f in group):
            if (
                isinstance(f, Fact)
                and f.superseded_by is None
                and (f.subject or "").casefold() == user_id.casefold()
            ):
                facts[f.id] = f
        for f in own:
            if isinstance(f, Fact) and f.superseded_by is None:
                facts[f.id] = f
        ordered = sorted(facts.values(), key=lambda f: f.occurred_at or f.created_at, reverse=True)
        return ordered[:limit]


def _spellings(name: str) -> list[str]:
    """The ways a user's id is written as a subject: as given, lower, capitalised, title case."""
    name = name.strip()
    return list(dict.fromkeys(s for s in (name, name.lower(), name.capitalize(), name.title()) if s))
