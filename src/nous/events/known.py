"""Is an extracted fact something the store already holds?

The write path keeps two close statements apart when a detail differs, and rightly so for what
people write on purpose: "Maya is vegetarian, as are two other team members" and "Maya is
vegetarian and so are two others, so dinners need real vegetarian options, not just salad" have
a negation on one side only, so it calls them a possible contradiction and stores both. An
extracted fact is a person's passing restatement, so the pipeline asks first whether it *adds*
anything: it restates a stored fact of the same scope when their cosine reaches the write
path's duplicate threshold, every number, month or weekday it states is in the stored fact, and
two thirds of its content words (its subject's aside; function words and common verbs aside)
occur there. A restatement confirms the stored fact instead of being written again.

Extracted facts add to what is known about a person, as the write path treats events whatever
the category: a changed detail ("went camping" / "went to a pottery class", "uses Flask 2.3" /
"moved the API to FastAPI") is another fact. One replaces a stored fact only when it states a
change ("moved to", "no longer", "switched") and is close to it (cosine at least the duplicate
threshold, as the write path's table says of updates). The write path alone would let a
same-subject fact with a change marker retire the newest fact of that subject however far it is
("The user has been vegetarian since they moved to Lisbon" retiring "The user is building a
budget tracker"); such a fact is stored as new instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nous.events.context import PipelineContext
from nous.language.lexicon import GENERIC, STOP_WORDS
from nous.memory.dedup import DUPLICATE_THRESHOLD, SimilarityCheck, Tier
from nous.models import Fact, MemoryKind

RESTATED_SHARE = 2 / 3
# Numbers, months and weekdays, whole or abbreviated ("Maya" and "Marcus" are names, not months).
_NUMBER = re.compile(
    r"\d+(?:[.,:]\d+)*|\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|"
    r"aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|mon(?:day)?|tue(?:s|sday)?|"
    r"wed(?:nesday)?|thu(?:rs|rsday)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9]+")
_FUNCTION = STOP_WORDS | GENERIC | frozenset({"user", "family", "team", "themselves", "went", "did"})


def _words(text: str) -> set[str]:
    words = {w for w in _WORD.findall(text.lower()) if w not in _FUNCTION}
    return {w.rstrip("s") for w in words if w.rstrip("s") and w.rstrip("s") not in _FUNCTION}


def restates(candidate: str, stored: str, subject: str | None = None) -> bool:
    """Whether ``candidate`` says nothing ``stored`` does not (numbers and most content words)."""
    if not {n.lower() for n in _NUMBER.findall(candidate)} <= {n.lower() for n in _NUMBER.findall(stored)}:
        return False
    words = _words(candidate) - (_words(subject) if subject else set())
    return bool(words) and len(words & _words(stored)) / len(words) >= RESTATED_SHARE


@dataclass(frozen=True, slots=True)
class Prior:
    """What the store already holds that bears on an extracted fact, and how to write it."""

    restated: str | None = None  # a stored fact it restates: confirm that one instead
    supersedes: str | None = None  # the close fact it updates, named so no other is taken
    dedup: bool = True  # False: store it as new (the write path would retire a fact it only adds to)


async def prior(ctx: PipelineContext, fact: Fact) -> Prior:
    """Whether ``fact`` restates a stored fact of its scope, updates a close one, or must be
    stored as new so that the write path retires nothing."""

    async def check(additive: bool) -> SimilarityCheck:
        return await ctx.write_path.check_similar(
            fact.content, MemoryKind.FACT, user_id=fact.user_id, subject=fact.subject, additive=additive
        )

    as_event = await check(additive=True)
    for match in sorted(as_event.matches, key=lambda m: -m.similarity):
        if match.similarity >= DUPLICATE_THRESHOLD and restates(fact.content, match.content, fact.subject):
            return Prior(restated=match.id)
    if as_event.duplicate is not None:
        return Prior()  # the write path confirms it
    close = [m for m in as_event.of_tier(Tier.UPDATE) if m.similarity >= DUPLICATE_THRESHOLD]
    if close:
        return Prior(supersedes=close[0].id)
    would = as_event if fact.category == "event" else await check(additive=False)
    if would.duplicate is not None:
        return Prior()
    return Prior(dedup=not would.of_tier(Tier.UPDATE))
