"""Frames: the modes an agent works in, and the memory instructions each one carries.

A frame is stamped on memories encoded in it (``encoded_frame``) and boosts them when the
agent is in the same frame again (spec 003). Its instructions tell the agent what is worth
recording there; the decision, task and debug frames say plainly what is *not* a decision,
because most "decisions" the reference system stored were status reports (spec 000 C1).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from nous.errors import InvalidInputError


class Frame(BaseModel):
    """One cognitive frame."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    description: str
    instructions: str


FRAMES: dict[str, Frame] = {
    f.id: f
    for f in (
        Frame(
            id="conversation",
            name="Conversation",
            description="Talking with the user; no task in progress.",
            instructions=(
                "Remember what the user tells you about themselves, their preferences and their "
                "plans with `learn_fact`. Do not record greetings or small talk."
            ),
        ),
        Frame(
            id="decision",
            name="Decision",
            description="Choosing between alternatives.",
            instructions=(
                "You are in a DECISION frame. Record your decision with `record_decision` before "
                "responding: your reasons, your confidence and a category.\n\n"
                "What IS a decision: a choice between alternatives — architecture choices, tool "
                "selections, process changes, trade-offs with pros and cons.\n\n"
                "What is NOT a decision: status reports, routine completions, simple observations, "
                "task acknowledgements, greetings. Do not record these.\n\n"
                "Search past decisions with `recall` first: they may already answer the question."
            ),
        ),
        Frame(
            id="task",
            name="Task",
            description="Carrying out work the user asked for.",
            instructions=(
                "You are in a TASK frame. If you make a meaningful choice between alternatives, "
                "record it with `record_decision`. Do NOT record routine task completions, status "
                "updates or simple observations as decisions: a decision requires choosing between "
                "alternatives with trade-offs. Store new facts you discover with `learn_fact`."
            ),
        ),
        Frame(
            id="debug",
            name="Debug",
            description="Finding and fixing a fault.",
            instructions=(
                "You are in a DEBUG frame. Search past procedures and decisions with `recall`. "
                "Record meaningful debugging decisions (root cause identified, fix approach chosen) "
                "with `record_decision`. Do NOT record routine debug steps or status observations. "
                "Store root-cause findings with `learn_fact`."
            ),
        ),
        Frame(
            id="research",
            name="Research",
            description="Gathering and weighing information.",
            instructions=(
                "Store findings that will matter later with `learn_fact`, with their source. "
                "Do not store intermediate search results or page summaries you will not reuse."
            ),
        ),
    )
}


def get_frame(frame_id: str) -> Frame:
    """The frame with this id; a clear error listing the known ones otherwise."""
    try:
        return FRAMES[frame_id]
    except KeyError:
        raise InvalidInputError(
            f"unknown frame {frame_id!r}; known: {', '.join(FRAMES)}", field="frame"
        ) from None
