"""The cognitive layer: frames (what the agent is doing) and, later, the context engine."""

from nous.cognitive.frames import FRAMES, Frame, get_frame

__all__ = ["FRAMES", "Frame", "get_frame"]
