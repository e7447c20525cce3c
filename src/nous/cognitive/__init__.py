"""The cognitive layer: frames, frame selection, the context engine and the turn loop.

The names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nous._lazy import lazy_exports

if TYPE_CHECKING:
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

# Each name and the module it is defined in.
_EXPORTS = {
    "Context": "nous.cognitive.context",
    "ContextItem": "nous.cognitive.context",
    "ContextSection": "nous.cognitive.context",
    "DroppedItem": "nous.cognitive.context",
    "DropReason": "nous.cognitive.context",
    "FRAMES": "nous.cognitive.frames",
    "Budget": "nous.cognitive.frames",
    "Frame": "nous.cognitive.frames",
    "check_frame": "nous.cognitive.frames",
    "get_frame": "nous.cognitive.frames",
    "CognitiveLayer": "nous.cognitive.layer",
    "SessionEnd": "nous.cognitive.layer",
    "TurnContext": "nous.cognitive.layer",
    "TurnResult": "nous.cognitive.layer",
    "FrameChoice": "nous.cognitive.selection",
    "FrameSelector": "nous.cognitive.selection",
}

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
