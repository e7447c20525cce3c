"""Choosing the frame of a turn from the user's text: keyword rules plus cosine to each frame's
examples with the shipped embedding model. A greeting is ``conversation`` and gets no retrieval.

``initiation`` (a new agent meeting its user) is chosen only in the first message of a session whose
agent has no identity, for a greeting or the user introducing themselves: from the second message
on, or once an identity is set, the same text is ``conversation``, and a first message that asks for
something keeps the retrieval initiation lacks.

Rules are of two strengths. The specific ones (an error for ``debug``, a choice or "why did we …"
for ``decision``, a poem or brainstorm for ``creative``, "remember that …" for ``conversation``)
add RULE_WEIGHT; the generic forms (an imperative opening for ``task``, a question form for
``question``) add GENERIC_WEIGHT, and only when no specific rule outranks them: "Why did we move
the ledger to Postgres?" is a question in form and a decision in substance, and "Write a limerick"
is an imperative asking for something creative. The weights were chosen by five-fold
cross-validation on the labelled messages of ``tests/data/frames.jsonl`` (``nous bench frames``
reproduces the choice and its per-fold accuracy; the figures are in docs/cognitive.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from nous.cognitive.frames import FRAMES
from nous.embeddings import Embedder

GREETING = re.compile(
    r"^\s*(hi|hello|hey|hiya|howdy|yo|greetings|good (morning|afternoon|evening|day)|thanks|thank you|"
    r"cheers|bye|goodbye|see you)\b",
    re.IGNORECASE,
)
GREETING_MAX_WORDS = 8  # "Hello, what can you do?" is a greeting; a long first message is not

# A rule that fires adds its weight to the frame's cosine: cosines to the examples differ by a few
# hundredths, so a clear keyword settles it, while the model decides when no rule fires.
RULE_WEIGHT = 0.25
GENERIC_WEIGHT = 0.15
# The specific rules, by frame. "remember that …" asks the agent to keep a fact: that is what the
# conversation frame records (its instructions keep what the user says about themselves); it is
# not a creative request, nor a question when phrased "can you remember that …?".
RULES: dict[str, re.Pattern[str]] = {
    "conversation": re.compile(
        r"^\s*(please\s+|and\s+|also,?\s+|oh,?\s+|(can|could|would) you\s+(please\s+)?)?"
        r"(remember|note|make a note|keep in mind|bear in mind|don'?t forget|never forget|"
        r"for (future )?reference|fyi|for your information|just so you know|for the record)\b"
        r"(?!\s+to\b)(?!\s+(what|when|where|who|how|if|whether)\b)",
        re.IGNORECASE,
    ),
    "debug": re.compile(
        r"\b(error|exception|traceback|stack ?trace|bugs?|crash(es|ed|ing)?|segfault|fails?|failing|"
        r"failed|broken|doesn'?t work|not working|won'?t (start|run|load|compile|work|open|boot|connect|"
        r"drain|spin|charge|print|sync|turn on|save)|can'?t (push|pull|connect|log ?in|"
        r"find|open|load|start|save)|stopped (working|running|responding|syncing)|(?<!to )keeps? \w+ing|"
        r"hangs?|hanging|freez(es|ing)|too slow|really slow|slow(ed)? down|off by|drops? out|"
        r"OOM|[45]\d\ds|timeouts?|timed out)\b",
        re.IGNORECASE,
    ),
    # A choice being made ("should we … or …", "X or Y?"), or one the user, the team or the agent
    # made ("why did we …", "what did I decide …"): someone else's ("why did Jon decide to open a
    # studio?", "would Melanie prefer a park or a museum?", "what does Mel think of Caroline's
    # decision?") is a question about a conversation, whose turns the question frame has more room for.
    "decision": re.compile(
        r"^\s*(so,?\s+)?((should|shall|do|would|could) ((i|we|you|it|the)\b|(?=.*\b(i|me|my|we|us|our)\b))|"
        r"is it better to\b).{0,120}\bor\b|"
        r"\b((do you think|whether|if) (i|we) should|which (one|option|is better)|(our|my|your) decision|"
        r"(make|making|made) (a|the|this|that) (decision|choice)|"
        r"help (me|us) (decide|choose|pick)|(decide|deciding|choose|choosing) (between|whether)|"
        r"pros and cons|trade-?offs?|versus|vs\.?|better option|worth (it|the)|"
        r"why did (we|i|you)|what made (us|me|you)|(we|i|you) (decided|chose|picked|agreed)|"
        r"what did (we|i|you) (decide|choose|pick|agree)|(our|my|your) (reasons?|rationale)|"
        r"torn between|go with|weigh up)\b",
        re.IGNORECASE,
    ),
    "creative": re.compile(
        r"\b(poems?|story|stories|brainstorm|ideas? for|imagine|slogans?|lyrics|names? for|"
        r"name ideas|come up with|invent|haiku|limerick|sonnet|riddle|toast|jingle|taglines?|"
        r"backstory|plot|make up|dream up|fun|funny|playful|catchy|creative|costume)\b",
        re.IGNORECASE,
    ),
}
GENERIC_RULES: dict[str, re.Pattern[str]] = {
    "task": re.compile(
        r"^\s*(please\s+|can you\s+|could you\s+|i need you to\s+|let'?s\s+)?(write|create|build|"
        r"implement|add|make|generate|refactor|deploy|set up|install|run|update|book|draft|convert|"
        r"rename|move|migrate|delete|remove|schedule|send|configure|fix|clean up|summari[sz]e|"
        r"translate|plan|order|put together|fill in|prepare|sort|go through|organi[sz]e|list|find|"
        r"compile|tidy|reply|cancel|review|format|upload|copy|print|calculate)\b",
        re.IGNORECASE,
    ),
    "question": re.compile(
        r"(\?\s*$)|^\s*(what|when|where|who|whom|which|why|how|is|are|was|were|do|does|did|can|could|"
        r"would|have|has|tell me|remind me)\b",
        re.IGNORECASE,
    ),
}
# The specific rules that outrank a generic one: a question form gives way to any of them, an
# imperative only to a creative request or a fact to remember ("fix the crash" stays in play
# for both task and debug; the model settles it).
OUTRANKS: dict[str, frozenset[str]] = {
    "question": frozenset(RULES),
    "task": frozenset({"creative", "conversation"}),
}
SELECTABLE = ("conversation", "question", "task", "decision", "creative", "debug")
TEMPERATURE = 0.05  # softmax temperature over frame scores, for the reported confidence


class FrameChoice(BaseModel):
    """The frame chosen for a turn, how sure the choice is (0..1) and why."""

    frame: str
    confidence: float
    greeting: bool = False
    reason: str


def is_greeting(text: str) -> bool:
    return bool(GREETING.match(text)) and len(text.split()) <= GREETING_MAX_WORDS


# A user introducing themselves ("I'm Alice, …", "my name is …"). Initiation retrieves nothing, so
# it is chosen only for a greeting or an introduction (asking no question) that opens a session of
# an agent without identity: a first message that asks for something ("Walk me through swapping the credentials",
# "…, can you add it for our second dinner?") keeps the memories that answer it.
INTRODUCTION = re.compile(
    r"^\W*((hi|hello|hey)\W+)?(i'?m|i am|my name is|my name'?s|call me|this is)\b", re.IGNORECASE
)


def is_introduction(text: str) -> bool:
    """A greeting of any length or a self-introduction, asking no question."""
    opens = bool(INTRODUCTION.match(text) or GREETING.match(text))
    return opens and not GENERIC_RULES["question"].search(text)


def fired_rules(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The specific and the generic rules that fire on ``text`` (a generic one outranked by a
    fired specific one is left out)."""
    specific = tuple(f for f, rule in RULES.items() if rule.search(text))
    generic = tuple(
        f
        for f, rule in GENERIC_RULES.items()
        if rule.search(text) and not (OUTRANKS.get(f, frozenset()) & set(specific))
    )
    return specific, generic


def decide(
    cosines: np.ndarray,
    specific: Sequence[str],
    generic: Sequence[str],
    *,
    has_identity: bool,
    first_turn: bool,
    introduction: bool = False,
    rule_weight: float = RULE_WEIGHT,
    generic_weight: float = GENERIC_WEIGHT,
) -> FrameChoice:
    """The frame from the cosines to the SELECTABLE frames' centroids and the rules that fired.
    ``introduction``: the text is one (``is_introduction``), which may make it ``initiation``."""
    scores = np.array(cosines, dtype=np.float64)
    if list(specific) == ["conversation"]:
        # a fact to keep ("remember that …"), and nothing else asked: the cosine is not consulted,
        # since what the fact is about (rent, a deadline) pulls it toward any frame
        scores[SELECTABLE.index("conversation")] = scores.max() + rule_weight
    for i, frame_id in enumerate(SELECTABLE):
        if frame_id in specific:
            scores[i] += rule_weight
        if frame_id in generic:
            scores[i] += generic_weight
    weights = np.exp((scores - scores.max()) / TEMPERATURE)
    best = int(np.argmax(scores))
    frame = SELECTABLE[best]
    if frame == "conversation" and not has_identity and first_turn and introduction:
        frame = "initiation"
    fired = [*specific, *generic]
    reason = f"rules: {', '.join(fired)}" if fired else "closest examples"
    return FrameChoice(frame=frame, confidence=round(float(weights[best] / weights.sum()), 3), reason=reason)


# The frames' centroids per embedding model (provider class, model name, dimensions), for the
# process: the frames and their examples are fixed, so every store on the same model has the same
# ones. Embedding the ~50 texts took ~1 s (2 cores) at each store's first pre_turn.
_CENTROIDS: dict[tuple[str, str, int], np.ndarray] = {}


class FrameSelector:
    """Scores the selectable frames for a text; the examples' vectors are computed once."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._centroids: np.ndarray | None = None

    async def frame_vectors(self) -> np.ndarray:
        """The unit centroid of each SELECTABLE frame's description and examples, one row each."""
        if self._centroids is None:
            provider = self.embedder.provider
            key = (type(provider).__qualname__, self.embedder.model_name, self.embedder.dimensions)
            if key not in _CENTROIDS:
                rows = []
                for frame_id in SELECTABLE:
                    frame = FRAMES[frame_id]
                    vectors = await self.embedder.embed_many([frame.description, *frame.examples])
                    centroid = np.mean(vectors, axis=0)
                    rows.append(centroid / np.linalg.norm(centroid))
                _CENTROIDS[key] = np.vstack(rows)
            self._centroids = _CENTROIDS[key]
        return self._centroids

    async def select(self, text: str, *, has_identity: bool = True, first_turn: bool = True) -> FrameChoice:
        """The frame for ``text``. Small talk is ``initiation`` only in the first message of a
        session (``first_turn``) of an agent without an identity."""
        if is_greeting(text):
            frame = "initiation" if not has_identity and first_turn else "conversation"
            return FrameChoice(frame=frame, confidence=0.95, greeting=True, reason="greeting")
        vector = await self.embedder.embed_one(text)
        specific, generic = fired_rules(text)
        return decide(
            (await self.frame_vectors()) @ vector,
            specific,
            generic,
            has_identity=has_identity,
            first_turn=first_turn,
            introduction=is_introduction(text),
        )
