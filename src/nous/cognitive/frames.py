"""Frames: the modes an agent works in, with their context budgets, tools and instructions.

A frame is stamped on memories encoded in it (``encoded_frame``) and boosts them when the agent
is in the same frame again. Its instructions tell the agent what is worth recording there; the
decision, task and debug frames say plainly what is *not* a decision, because most "decisions"
the reference system stored were status reports. Instructions name no tools: the agent runner,
MCP and REST offer different ones, and each caller offers its own (``tools`` is the runner's set). Budgets are in tokens (``nous._tokens``);
the retrieved sections follow the reference system's table, plus a budget for conversation turns,
which it lacked (an agent's own past messages are often the answer).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from nous.errors import InvalidInputError


class Budget(BaseModel):
    """Token budgets of a frame's context: fixed sections, retrieved sections and the total."""

    model_config = ConfigDict(frozen=True)

    total: int = Field(ge=0)
    identity: int = 500
    user_profile: int = 200
    censors: int = 300
    frame: int = 500
    working_memory: int = 700
    recent: int = 150
    decisions: int = 0
    facts: int = 0
    procedures: int = 0
    episodes: int = 0
    turns: int = 0

    @property
    def fixed(self) -> int:
        """Tokens the fixed sections may take."""
        return self.identity + self.user_profile + self.censors + self.frame + self.working_memory

    @property
    def retrieves(self) -> bool:
        return any((self.decisions, self.facts, self.procedures, self.episodes, self.turns))


class Frame(BaseModel):
    """One cognitive frame."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    description: str
    instructions: str
    tools: tuple[str, ...]
    budget: Budget
    examples: tuple[str, ...] = ()  # typical user messages, embedded for frame selection


_MEMORY_TOOLS = ("recall", "recall_recent", "learn_fact")

FRAMES: dict[str, Frame] = {
    f.id: f
    for f in (
        Frame(
            id="conversation",
            name="Conversation",
            description="Talking with the user; small talk, greetings, personal news; no task in progress.",
            instructions=(
                "Keep as facts what the user tells you about themselves, their preferences and "
                "their plans. Do not record greetings or small talk."
            ),
            tools=(*_MEMORY_TOOLS,),
            budget=Budget(total=3000, decisions=500, facts=500, turns=800),
            examples=(
                "Hi, how are you today?",
                "I just got back from my holiday in Portugal, it was lovely.",
                "Thanks, that was really helpful!",
                "I'm Sam, I work as a nurse and live in Glasgow.",
                "Remember that my son's name is Leo.",
                "My favourite food is Thai curry.",
                "Oh cool, good to know.",
            ),
        ),
        Frame(
            id="question",
            name="Question",
            description="The user asks for information or something remembered from earlier.",
            instructions=(
                "Answer from what you remember: check the decisions, facts, procedures, episodes and "
                "conversation excerpts below before saying you do not know; each is dated, so say "
                "when one may be out of date. Keep as a fact anything new and lasting the user "
                "states in passing."
            ),
            tools=(*_MEMORY_TOOLS,),
            budget=Budget(total=6000, decisions=1000, facts=1500, procedures=500, episodes=500, turns=2000),
            examples=(
                "What did I say my sister's name was?",
                "When is the project deadline?",
                "How does the billing service handle refunds?",
                "What do you remember about my job?",
                "Where did I park the car last time?",
                "What's the difference between a loan and a lease?",
            ),
        ),
        Frame(
            id="task",
            name="Task",
            description="Carrying out work the user asked for: write, build, set up, change something.",
            instructions=(
                "You are in a TASK frame. Follow the procedures and respect the rules below. If you "
                "make a meaningful choice between alternatives, record it as a decision with your "
                "reasons once you have made it. Do NOT record routine task completions, status "
                "updates or simple observations as decisions: a decision requires choosing between "
                "alternatives with trade-offs. Keep as facts what you discover that will last."
            ),
            tools=(*_MEMORY_TOOLS, "record_decision", "add_procedure", "check_action"),
            budget=Budget(total=8000, decisions=2000, facts=1500, procedures=1500, episodes=1000, turns=1500),
            examples=(
                "Write a script that renames all the photos by date.",
                "Set up the staging database and run the migrations.",
                "Add a retry to the upload function.",
                "Make a to-do list for moving house.",
                "Summarise the meeting notes into bullet points.",
                "Reserve two seats on the train to York.",
            ),
        ),
        Frame(
            id="decision",
            name="Decision",
            description="Choosing between alternatives, weighing trade-offs, asking what to do.",
            instructions=(
                "You are in a DECISION frame. The past decisions below, with their reasons and "
                "outcomes, may already answer the question: start from them. Recommend, and record "
                "a decision only when a choice between alternatives is actually made (by the user, "
                "or by you when asked to decide), with its reasons, your confidence and a category "
                "— not a question or a recommendation still open.\n\n"
                "What IS a decision: a choice between alternatives — architecture choices, tool "
                "selections, process changes, trade-offs with pros and cons.\n\n"
                "What is NOT a decision: status reports, routine completions, simple observations, "
                "task acknowledgements, greetings. Do not record these."
            ),
            tools=(*_MEMORY_TOOLS, "record_decision", "check_action"),
            budget=Budget(
                total=12000, decisions=3000, facts=2000, procedures=2000, episodes=1000, turns=1500
            ),
            examples=(
                "Should we use PostgreSQL or MongoDB for this?",
                "Which laptop should I buy, the lighter one or the faster one?",
                "What are the pros and cons of moving to microservices?",
                "Why did we choose Kafka over RabbitMQ?",
                "What did we decide about the holiday budget?",
                "Rent a flat or buy one?",
            ),
        ),
        Frame(
            id="creative",
            name="Creative",
            description="Writing, brainstorming, inventing names, stories, ideas.",
            instructions=(
                "Use what you know of the user's tastes and earlier drafts below. Keep as facts only "
                "the preferences the user states, not the drafts themselves."
            ),
            tools=(*_MEMORY_TOOLS,),
            budget=Budget(total=6000, decisions=1000, facts=1500, procedures=500, episodes=500, turns=1000),
            examples=(
                "Write a short poem about the sea for my mother's birthday.",
                "Brainstorm some names for my bakery.",
                "Give me ideas for a sci-fi story.",
                "Write a funny birthday card message for my colleague.",
                "Describe a haunted lighthouse for my short story.",
            ),
        ),
        Frame(
            id="debug",
            name="Debug",
            description="Finding and fixing a fault: an error, a crash, something not working.",
            instructions=(
                "You are in a DEBUG frame. Start from the procedures, past episodes and decisions "
                "below. Record meaningful debugging decisions (root cause identified, fix approach "
                "chosen) as decisions with their reasons. Do NOT record routine debug steps or status "
                "observations. Keep root-cause findings as facts."
            ),
            tools=(*_MEMORY_TOOLS, "record_decision", "add_procedure", "check_action"),
            budget=Budget(
                total=10000, decisions=1500, facts=1000, procedures=2500, episodes=1000, turns=1500
            ),
            examples=(
                "I'm getting a KeyError when I run the import script.",
                "The server crashes on startup with a segmentation fault.",
                "My tests pass locally but fail in CI, why?",
                "The washing machine won't spin and shows an error light.",
                "My bike chain keeps slipping when I change gear.",
                "The website shows a blank page since the last deploy.",
                "The kitchen tap keeps dripping even when it's fully closed.",
            ),
        ),
        Frame(
            id="initiation",
            name="Initiation",
            description="A new agent with no identity yet meets its user.",
            instructions=(
                "You have no identity yet. Introduce yourself briefly, ask the user what they want "
                "to call you and how you can help, and keep the answers: your character, values "
                "and boundaries as your identity, the user's name and preferences as facts."
            ),
            tools=("learn_fact", "set_identity"),
            budget=Budget(total=2000),
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


def check_frame(frame_id: str | None) -> str | None:
    """``frame_id`` if it names a frame (or is None); InvalidInputError otherwise."""
    return None if frame_id is None else get_frame(frame_id).id
