"""A bounded cache of what is computed from a text, keyed by the text's digest.

The same memories come back query after query (a context shows them turn after turn, a recall
re-ranks them again), and some of what is computed from their text is costly on a long one:
tokenizing it, stemming every word. The key is a 16-byte digest, not the text, so the cache
holds no long strings; texts shorter than ``min_chars`` are computed each time (cheaper than a
digest and a lookup).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class TextMemo(Generic[T]):
    """``compute(text, *args)`` remembered for the ``size`` most recently used (digest, args)."""

    def __init__(self, size: int = 8192, *, min_chars: int = 512) -> None:
        self.size, self.min_chars = size, min_chars
        self._found: OrderedDict[tuple[bytes, tuple[Hashable, ...]], T] = OrderedDict()
        self._lock = threading.Lock()  # reader threads and the event loop may share one

    def get(self, text: str, compute: Callable[..., T], *args: Hashable) -> T:
        if len(text) < self.min_chars:
            return compute(text, *args)
        key = (hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), args)
        with self._lock:
            if key in self._found:
                self._found.move_to_end(key)
                return self._found[key]
        value = compute(text, *args)
        with self._lock:
            self._found[key] = value
            while len(self._found) > self.size:
                self._found.popitem(last=False)
        return value
