"""The category of an extracted fact (``nous.models.FactCategory``), by what it says.

First match wins: a preference ("I love", "my favourite", "I'd rather"), a lesson ("I learned
that", "turns out"), who the person is (a role, where they live or work, their family and
pets), a technical detail (software, versions, file names), an event (something done, planned or
dated); anything else is ``other``. Works on a person's own words and on third-person facts.
"""

from __future__ import annotations

import re

from nous.models import FactCategory

_SUBJECT = r"(?:I|we|they|user|(?!It\b|This\b|That\b|There\b|What\b|Here\b)[A-Z][a-z]+)"
_ADVERB = r"(?:really\s+|also\s+|absolutely\s+|just\s+|still\s+|do\s+|does\s+|generally\s+|usually\s+)?"
_PREFERENCE = re.compile(
    rf"\b(?:I|we|they)\s+{_ADVERB}(?:love|like|enjoy|prefer|hate|adore|dislike|can't stand)\b|"
    rf"\b(?:user|(?!It\b|This\b|That\b)[A-Z][a-z]+)\s+{_ADVERB}(?:loves|likes|enjoys|prefers|hates|adores|"
    r"dislikes)\b|\bfavou?rite\b|\b(?:a (?:big |huge )?fan of|passionate about|keen on|"
    r"vegetarian|vegan|would rather|'d rather|wants the assistant to)\b",
)
_LESSON = re.compile(
    r"\b(?:learn(?:ed|t) that|realiz(?:ed|es) that|realis(?:ed|es) that|lesson|turns out|turned out|"
    r"next time|the key is|the trick is|should have)\b",
    re.IGNORECASE,
)
_PERSON = re.compile(
    rf"\b{_SUBJECT}(?:'m| am| is| was)\s+(?:a|an)\s+(?!bit\b|little\b|lot\b)\w+|"
    rf"\b{_SUBJECT}(?:'m| am| is)\s+(?:from|\d+ years old|married|divorced|pregnant|retired|single|allergic)\b|"
    rf"\b{_SUBJECT}(?:'m| am| is)\s+[A-Z][a-z]+,|\bname is\b|"
    rf"\b{_SUBJECT}\s+(?:live|lives|lived|grew up|was born|work|works|worked)\s+(?:in|at|as|for)\b|"
    r"\b(?:[Mm]y|[Tt]heir|user's|[A-Z][a-z]+'s)\s+(?:name|wife|husband|partner|boyfriend|girlfriend|kids?|children|son|"
    r"daughter|mom|mother|dad|father|parents|sister|brother|family|grandma|grandmother|grandpa|"
    r"grandfather|dog|cat|pet|birthday|age|job|boss|hometown|friends?)\b",
)
TECHNICAL = re.compile(
    r"\b[A-Z][\w.+#-]*\s+v?\d+(?:\.\d+)+\b|\b[\w-]+\.(?:py|js|ts|tsx|jsx|css|html|json|yaml|yml|toml|sql|"
    r"md|sh|go|rs|java|rb|env|txt|cfg|ini)\b|\b(?:api|apis|database|server|deploy\w*|code|coding|python|"
    r"javascript|typescript|java|sql|sqlite|postgres\w*|mysql|mongodb|redis|kafka|framework|library|"
    r"libraries|function|endpoints?|config\w*|docker|kubernetes|git|github|unit tests?|test suite|"
    r"test coverage|integration tests?|bug|schema|query|queries|cache|caching|frontend|backend|css|html|react|flask|django|node|npm|app|"
    r"application|algorithm|repository|repo|cloud|aws|gcp|azure|linux|compiler|package|dependenc\w+|"
    r"authentication|authorization|migrations?|debug\w*|latency|response time|ms|cpu|gpu|ci|"
    r"pipeline|software|website|web app|mobile app|ui|ux|dom|json|http|rest|crud|orm|gunicorn|nginx|"
    r"blueprints?|modules?|refactor\w*|commits?|branch(?:es)?|pull request|sprint|mvp|prototype|"
    r"spreadsheet|excel|formula|theorem|equation|probability|statistics|geometry|calculus)\b",
    re.IGNORECASE,
)
_EVENT = re.compile(
    r"\b(?!(?:need|feed|speed|indeed|seed|breed|proceed|succeed|exceed|embed|bed|red|shed)\b)\w+ed\b|\b(?:went|got|made|took|bought|began|met|won|lost|ran|saw|came|left|gave|built|wrote|"
    r"sent|spent|paid|found|told|flew|drove|moved|started|joined|visited|finished|adopted|planning|plan|"
    r"plans|will|going to|scheduled|booked|next|last|yesterday|tomorrow|recently|ago|since|"
    r"January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|\d{4})\b",
    re.IGNORECASE,
)


def categorize(text: str) -> str:
    """The FactCategory value for ``text``."""
    if _PREFERENCE.search(text):
        return FactCategory.PREFERENCE.value
    if _LESSON.search(text):
        return FactCategory.LESSON.value
    if _PERSON.search(text):
        return FactCategory.PERSON.value
    if TECHNICAL.search(text):
        return FactCategory.TECHNICAL.value
    if _EVENT.search(text):
        return FactCategory.EVENT.value
    return FactCategory.OTHER.value
