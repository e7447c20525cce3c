"""Helpers over sequences shared by the layers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def spread(items: Sequence[T], most: int) -> list[T]:
    """Up to ``most`` of ``items`` spread evenly over them, the first and the last included (one:
    the first)."""
    if len(items) <= most:
        return list(items)
    if most <= 1:
        return list(items[:most])
    step = (len(items) - 1) / (most - 1)
    return [items[round(i * step)] for i in range(most)]
