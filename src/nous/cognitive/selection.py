"""Choosing the frame of a turn from the user's text: keyword rules plus cosine to each frame's
examples with the shipped embedding model. A greeting is ``conversation`` and gets no retrieval."""

from __future__ import annotations

import re

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

# A rule that fires adds RULE_WEIGHT to the frame's cosine: cosines to the examples differ by a few
# hundredths, so a clear keyword settles it, while the model decides when no rule fires.
RULE_WEIGHT = 0.25
RULES: dict[str, re.Pattern[str]] = {
    "debug": re.compile(
        r"\b(error|exception|traceback|stack ?trace|bug|crash(es|ed|ing)?|segfault|fails?|failing|"
        r"failed|broken|doesn'?t work|not working|won'?t (start|run|load|compile))\b",
        re.IGNORECASE,
    ),
    "decision": re.compile(
        r"\b(should (i|we)|which (one|option|is better)|decide|deciding|choose|choosing|pros and cons|"
        r"trade-?offs?|versus|vs\.?|better option|worth it)\b",
        re.IGNORECASE,
    ),
    "creative": re.compile(
        r"\b(poem|story|stories|brainstorm|ideas? for|imagine|slogan|lyrics|names? for|come up with|"
        r"invent)\b",
        re.IGNORECASE,
    ),
    "task": re.compile(
        r"^\s*(please\s+|can you\s+|could you\s+)?(write|create|build|implement|add|make|generate|"
        r"refactor|deploy|set up|install|run|update|book|draft|convert|rename|move|delete|remove|"
        r"schedule|send|configure|fix)\b",
        re.IGNORECASE,
    ),
    "question": re.compile(
        r"(\?\s*$)|^\s*(what|when|where|who|whom|which|why|how|is|are|was|were|do|does|did|can|could|"
        r"would|have|has|tell me|remind me)\b",
        re.IGNORECASE,
    ),
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


# The frames' centroids per embedding model (provider class, model name, dimensions), for the
# process: the frames and their examples are fixed, so every store on the same model has the same
# ones. Embedding the ~25 texts took ~0.5 s (2 cores) at each store's first pre_turn.
_CENTROIDS: dict[tuple[str, str, int], np.ndarray] = {}


class FrameSelector:
    """Scores the selectable frames for a text; the examples' vectors are computed once."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._centroids: np.ndarray | None = None

    async def _frame_vectors(self) -> np.ndarray:
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

    async def select(self, text: str, *, has_identity: bool = True) -> FrameChoice:
        """The frame for ``text``. Without an identity, small talk starts ``initiation``."""
        if is_greeting(text):
            frame = "conversation" if has_identity else "initiation"
            return FrameChoice(frame=frame, confidence=0.95, greeting=True, reason="greeting")
        vector = await self.embedder.embed_one(text)
        scores = (await self._frame_vectors()) @ vector
        fired = []
        for i, frame_id in enumerate(SELECTABLE):
            rule = RULES.get(frame_id)
            if rule is not None and rule.search(text):
                scores[i] += RULE_WEIGHT
                fired.append(frame_id)
        weights = np.exp((scores - scores.max()) / TEMPERATURE)
        best = int(np.argmax(scores))
        frame = SELECTABLE[best]
        if frame == "conversation" and not has_identity:
            frame = "initiation"
        reason = f"rules: {', '.join(fired)}" if fired else "closest examples"
        return FrameChoice(
            frame=frame, confidence=round(float(weights[best] / weights.sum()), 3), reason=reason
        )
