"""The MCP tools' parameter types and result shapes.

Every parameter is ``Annotated`` with a pydantic ``Field`` so the SDK writes its description,
bounds and default into the tool's JSON schema. Closed value sets are ``Literal`` types, which the
schema shows inline as ``enum`` (a model reads them without resolving ``$ref``s); each one spells
out the values of the model enum it stands for, and ``tests/test_mcp_schema.py`` keeps the two
equal. A value outside a set is refused by the SDK before the tool runs, with the allowed values
named in the error.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nous.models import Memory
from nous.server.scope import SessionRef, UserRef

# -- closed value sets (mirrors of nous.models enums) ---------------------------------------------
FactCategoryName = Literal[
    "preference", "technical", "person", "tool", "concept", "rule", "event", "lesson", "other"
]
MemoryKindName = Literal["fact", "episode", "procedure", "censor", "decision", "turn"]
DecisionCategoryName = Literal["architecture", "process", "tooling", "security", "integration", "other"]
StakesName = Literal["low", "medium", "high", "critical"]
CensorActionName = Literal["warn", "block", "absolute"]
ReasonTypeName = Literal[
    "analysis", "pattern", "empirical", "authority", "intuition", "analogy", "elimination", "constraint"
]

# The largest result page a tool returns: enough for any prompt, small enough for a context window.
MAX_RESULTS = 100


class ReasonIn(BaseModel):
    """One typed reason behind a decision."""

    model_config = ConfigDict(extra="forbid")

    type: Annotated[
        ReasonTypeName,
        Field(
            description="What kind of reason: analysis (worked out), pattern (seen before), empirical "
            "(measured or observed), authority (someone said so), intuition, analogy, elimination "
            "(the alternatives fail), constraint (forced by a requirement)."
        ),
    ]
    text: Annotated[
        str,
        Field(min_length=1, max_length=5000, description="The reason itself, without a type prefix."),
    ]


# -- parameters shared by several tools -----------------------------------------------------------
# A session and a user carry their scope (``SessionRef``, ``UserRef``): ``nous.server.mcp.scoped``
# makes the session id the caller's stored one and resolves the acting user before a tool runs.
SessionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="The conversation's id, chosen by you and the same for every call of one "
        "conversation (e.g. a UUID).",
    ),
    SessionRef(),
]
OptionalSessionId = Annotated[
    str | None,
    Field(
        max_length=200,
        description="The conversation this happens in (the session_id given to `context`), so the "
        "memory is tied to it; omit outside a conversation.",
    ),
    SessionRef(),
]
UserId = Annotated[
    str | None,
    Field(
        max_length=200,
        description="The user this concerns: their memories and the agent's shared ones. Omit to use "
        "the user of the API key (a key made for one user acts only as that user).",
    ),
    UserRef(),
]
Limit = Annotated[
    int, Field(ge=1, le=MAX_RESULTS, description=f"How many results at most (1-{MAX_RESULTS}).")
]
Confidence = Annotated[
    float,
    Field(ge=0.0, le=1.0, description="How sure you are, from 0 (a guess) to 1 (certain)."),
]


# -- results --------------------------------------------------------------------------------------
def dated(memory: Memory) -> dict[str, Any]:
    """A memory as a tool shows it: its id, kind (``type``), text and the date it happened."""
    return {
        "id": memory.id,
        "type": memory.kind.value,
        "content": memory.content,
        "at": memory.occurred_at.isoformat(),
        **({"metadata": memory.metadata} if memory.metadata else {}),
    }


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()
