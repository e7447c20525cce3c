"""The cognitive layer: frames, frame selection, the context engine and the turn loop."""

from nous.cognitive.context import (
    Context,
    ContextItem,
    ContextSection,
    DroppedItem,
    DropReason,
)
from nous.cognitive.frames import FRAMES, Budget, Frame, check_frame, get_frame
from nous.cognitive.layer import CognitiveLayer, SessionEnd, TurnContext, TurnResult
from nous.cognitive.selection import FrameChoice, FrameSelector

__all__ = [
    "FRAMES",
    "Budget",
    "CognitiveLayer",
    "Context",
    "ContextItem",
    "ContextSection",
    "DropReason",
    "DroppedItem",
    "Frame",
    "FrameChoice",
    "FrameSelector",
    "SessionEnd",
    "TurnContext",
    "TurnResult",
    "check_frame",
    "get_frame",
]
