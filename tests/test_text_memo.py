"""What is computed once per long text (``nous._memo``) is what would be computed each time:
token counts and clips, the re-ranker's stems and passage coverage. The references below are
the plain computations, written out."""

from __future__ import annotations

import random
import re
from collections import Counter

import tiktoken

from nous._memo import TextMemo
from nous._tokens import ENCODING, clip_and_count, clip_to_tokens, count_tokens
from nous.retrieval.rerank import PASSAGE_CHARS, coverage, stem, stems

SAMPLE = (
    "the ledger migration moved to Postgres because ACID mattered; Alice's team reviewed it "
    "twice, and the staging cluster in eu-west-1 was rebuilt after the freeze — 3,400 rows "
    "failed, re-run at 02:00. Überprüfung ✓ naïve café 東京 don't re-index"
)
WORDS = SAMPLE.split()


def _texts() -> list[str]:
    rng = random.Random(7)
    return [" ".join(rng.choice(WORDS) for _ in range(n)) for n in (3, 40, 200, 900, 2500)]


def _reference_coverage(text: str, query_terms: set[str]) -> tuple[set[str], float]:
    word = re.compile(r"[\w][\w'\-]*", re.UNICODE)
    hits = [(m.start(), m.end(), s) for m in word.finditer(text) if (s := stem(m.group())) in query_terms]
    found = {s for _, _, s in hits}
    if len(text) <= PASSAGE_CHARS or len(found) <= 1:
        return found, len(found) / len(query_terms)
    best, left, inside = 0, 0, Counter[str]()
    for right, (_, end, term) in enumerate(hits):
        inside[term] += 1
        while left < right and end - hits[left][0] > PASSAGE_CHARS:
            inside[hits[left][2]] -= 1
            if not inside[hits[left][2]]:
                del inside[hits[left][2]]
            left += 1
        best = max(best, len(inside))
    return found, best / len(query_terms)


def test_token_counts_and_clips_match_the_encoder_first_time_and_cached() -> None:
    encoding = tiktoken.get_encoding(ENCODING)
    for text in _texts():
        tokens = encoding.encode(text, disallowed_special=())
        for _ in range(2):  # computed, then from the cache
            assert count_tokens(text) == len(tokens)
            clipped = clip_to_tokens(text, 50)
            expected = text if len(tokens) <= 50 else encoding.decode(tokens[:50])
            assert clipped == expected
            assert clip_and_count(text, 50) == (
                expected,
                len(encoding.encode(expected, disallowed_special=())),
            )


def test_a_clip_read_from_the_opening_is_the_clip_of_the_whole_text() -> None:
    """Clipping encodes an opening of the text (``nous._tokens._opening``): on texts built to
    break that (runs of spaces and newlines, numbers, contractions, punctuation against letters,
    words without spaces), every clip and count is the one of the whole text encoded."""
    encoding = tiktoken.get_encoding(ENCODING)
    pieces = [*"ab cd'sll-_=()12345éü東京✓", " ", "\n", "\t", "\r", " the", "don't", "I'LL", "\n   ", "  \n"]
    pieces += ["x" * 60, "=" * 40]
    rng = random.Random(11)
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(50, 1500)))
        tokens = encoding.encode(text, disallowed_special=())
        for limit in (1, 7, 50, 200):
            expected = text if len(tokens) <= limit else encoding.decode(tokens[:limit])
            assert clip_and_count(text, limit) == (
                expected,
                len(encoding.encode(expected, disallowed_special=())),
            )


def test_coverage_and_stems_match_the_plain_computation() -> None:
    queries = ["why did the ledger migration fail", "Alice reviewed the café rows", "re-index 東京"]
    for text in _texts():
        for query in queries:
            terms = {stem(w) for w in re.findall(r"[\w][\w'\-]*", query)}
            for _ in range(2):
                assert coverage(text, terms) == _reference_coverage(text, terms)
        assert stems(text) == {stem(w) for w in re.findall(r"[\w][\w'\-]*", text)}


def test_memo_is_bounded_and_keyed_by_content() -> None:
    calls: list[str] = []

    def upper(text: str, suffix: str) -> str:
        calls.append(text)
        return text.upper() + suffix

    memo: TextMemo[str] = TextMemo(2, min_chars=4)
    assert memo.get("abc", upper, "!") == "ABC!" and memo.get("abc", upper, "!") == "ABC!"
    assert calls == ["abc", "abc"]  # short texts are not kept
    for text in ("aaaa", "bbbb", "aaaa", "cccc", "bbbb"):
        assert memo.get(text, upper, "?") == text.upper() + "?"
    # aaaa and bbbb computed, aaaa from the cache, cccc evicts bbbb (least recently used)
    assert calls[2:] == ["aaaa", "bbbb", "cccc", "bbbb"]
    assert memo.get("aaaa", upper, "!") == "AAAA!"  # other arguments, another entry
