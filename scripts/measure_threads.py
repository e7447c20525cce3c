"""Measure topic threading (nous.memory.threading) on labelled chats, for a few join thresholds.

For each file: how many threads the messages form, their mean size, the largest thread's share of
the messages, and the share of questions with several evidence groups whose evidence sits in at
most two threads (some two threads hold a message of every group), and in one. One giant thread
would put every question's evidence in one thread, so read these beside the thread count and the
largest thread's share; and any two threads cover a question of two groups, so "in 1 thread" is
the stricter figure.

    PYTHONPATH=src python scripts/measure_threads.py /work/shared/datasets/beam/*.json \
        /work/shared/datasets/locomo/*.json --thresholds 0.45 0.5 0.55 0.6
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

from nous.bench.labelled import LabelledConversation, from_locomo, load_labelled
from nous.config import Settings
from nous.embeddings import create_provider
from nous.memory.threading import CONTINUITY, WORDS_WEIGHT, ThreadItem, item_words, thread_all

CACHE = Path("/tmp/nous-thread-vectors")


def load(path: Path) -> LabelledConversation:
    return from_locomo(path) if "locomo" in str(path) else load_labelled(path)


def items_of(conv: LabelledConversation, provider: object) -> list[ThreadItem]:
    rows = []
    for session in conv.conversation.sessions:
        start = session.started_at
        for i, m in enumerate(session.messages):
            at = m.occurred_at or (start + timedelta(seconds=30 * i) if start else None)
            assert at is not None
            named = m.name and m.name not in ("user", "assistant")
            text = f'{m.name} said, "{m.content}"' if named else m.content
            rows.append((m.id, session.id, at, text, m.content))
    texts = [r[3][:1000] for r in rows]
    key = hashlib.sha256("\x1f".join(texts).encode()).hexdigest()[:16]
    CACHE.mkdir(exist_ok=True)
    cached = CACHE / f"{key}.npy"
    if cached.exists():
        vectors = np.load(cached)
    else:
        vectors = provider.embed(texts)  # type: ignore[attr-defined]
        np.save(cached, vectors)
    return [
        ThreadItem(id=i, user_id=None, session_id=s, occurred_at=at, vector=v, words=item_words(content))
        for (i, s, at, _, content), v in zip(rows, vectors, strict=True)
    ]


def within(groups: list[list[str]], thread_of: dict[str, str], n: int) -> bool:
    """Some ``n`` threads hold a message of every evidence group."""
    sets = [{thread_of[m] for m in g if m in thread_of} for g in groups]
    candidates = set().union(*sets)
    return any(
        all(s & set(pick) for s in sets) for pick in itertools.combinations_with_replacement(candidates, n)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--thresholds", nargs="+", type=float, default=[0.45, 0.5, 0.55, 0.6])
    parser.add_argument("--words", type=float, default=WORDS_WEIGHT, help="weight of shared frequent words")
    parser.add_argument(
        "--continuity", type=float, default=CONTINUITY, help="bonus of the session's last thread"
    )
    parser.add_argument(
        "--no-center", action="store_true", help="compare raw vectors (no background removed)"
    )
    args = parser.parse_args()
    provider = create_provider(Settings())
    print(
        "| file | messages | multi-group q | threshold | threads | mean size | largest share "
        "| evidence in ≤2 threads | in 1 thread | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for path in args.files:
        conv = load(path)
        items = items_of(conv, provider)
        multi = [q for q in conv.questions if len(q.evidence) > 1]
        for t in args.thresholds:
            began = time.perf_counter()
            pairs, threads = thread_all(
                items,
                [],
                lambda item: f"t:{item.id}",
                join_at=t,
                words_weight=args.words,
                continuity=args.continuity,
                center=not args.no_center,
            )
            took = time.perf_counter() - began
            thread_of = dict(pairs)
            sizes = [th.size for th in threads]
            held = sum(within(q.evidence, thread_of, 2) for q in multi) / max(len(multi), 1)
            one = sum(within(q.evidence, thread_of, 1) for q in multi) / max(len(multi), 1)
            print(
                f"| {path.name} | {len(items)} | {len(multi)} | {t:.2f} | {len(threads)} | "
                f"{np.mean(sizes):.1f} | {max(sizes) / len(items):.2f} | {held:.2f} | {one:.2f} | {took:.2f} |"
            )


if __name__ == "__main__":
    main()
