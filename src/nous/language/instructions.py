"""Standing instructions: what a user tells an agent to do from now on, not only this once.

"Always format code snippets with syntax highlighting when I ask about implementation details",
"Never use jQuery", "From now on, answer in French". Such a message is said once and applies to
every later question it names, which rarely shares its words, so recall rarely finds it: it is
kept as a memory of its own category (``INSTRUCTION``), and the context lists the asker's rules
in "About the user" (``Identity.standing_instructions``, docs/cognitive.md).
"""

from __future__ import annotations

import re
from functools import lru_cache

INSTRUCTION = "instruction"  # the category of a memory that states a standing instruction

# "Always include ...", "Please never use ...", "Make sure to always ..."; the word after
# "always" / "never" must be a verb in its base form ("Always good to hear!" is no instruction).
_ALWAYS = re.compile(
    r"^\s*(?:please\s*,?\s+)?(?:make sure (?:to|you)\s+|be sure to\s+|do\s+)?(always|never)\s+([a-z]+)",
    re.IGNORECASE,
)
# "From now on, ...", "Going forward, ...", "Whenever I ask about X, ...", "Every time I mention Y, ...".
_FROM_NOW = re.compile(
    r"^\s*(?:please\s*,?\s+)?(?:from now on|going forward|(?:whenever|every time|each time) i "
    r"(?:ask|mention|say|talk|bring up|request|need|want))\b",
    re.IGNORECASE,
)
_NOT_AN_INSTRUCTION = frozenset(["mind"])  # "Never mind."
_MAX_CHARS = 400  # a standing instruction is a sentence or two, not a long request


@lru_cache(maxsize=4096)
def _is_base_verb(word: str) -> bool:
    from lemminflect import getAllLemmas

    lemmas = getAllLemmas(word.lower()).get("VERB", ())
    return word.lower() in lemmas


def is_standing_instruction(text: str) -> bool:
    """Whether ``text`` (a user's message, without a speaker label) tells the agent how to act
    from now on: it opens with "always" or "never" and a verb, or with "from now on", "going
    forward", "whenever I" or "every time I"."""
    if len(text) > _MAX_CHARS:
        return False
    if _FROM_NOW.match(text):
        return True
    opened = _ALWAYS.match(text)
    if opened is None or opened.group(2).lower() in _NOT_AN_INSTRUCTION:
        return False
    return _is_base_verb(opened.group(2))


def message_category(role: str, text: str) -> str | None:
    """The category a conversation turn is stored with: ``INSTRUCTION`` for a user's standing
    instruction, else none."""
    return INSTRUCTION if role == "user" and is_standing_instruction(text) else None
