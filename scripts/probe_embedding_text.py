"""How should a conversation turn be presented to the embedder? Dense-only recall per format.

    .venv/bin/python scripts/probe_embedding_text.py DIR [DIR ...]

Embeds every message of each conversation (LoCoMo files or labelled conversations) in each
presentation and prints dense recall_all@10 / recall_any@10 per folder with the same scorer as
``nous bench retrieval``. The winner is what ``Turn.embedding_text`` uses (docs/retrieval.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from nous.bench.labelled import Scores, from_locomo, load_labelled
from nous.embeddings.local import LocalEmbeddingProvider

FORMATS = {
    "speaker: text": lambda name, role, text: f"{name or role}: {text}",
    'speaker said, "text"': lambda name, role, text: f'{name or role} said, "{text}"',
    "text alone": lambda name, role, text: text,
    # What Turn.embedding_text does: a named speaker is said, a bare role is left out.
    'named: said, "text"; role only: text': lambda name, role, text: (
        f'{name} said, "{text}"' if name else text
    ),
}


def main(directories: list[Path]) -> None:
    provider = LocalEmbeddingProvider()
    for directory in directories:
        scores = {name: Scores((10,)) for name in FORMATS}
        for path in sorted(directory.glob("*.json")):
            head = path.read_text(encoding="utf-8")[:4000]
            item = load_labelled(path) if '"sessions"' in head else from_locomo(path)
            messages = [m for s in item.conversation.sessions for m in s.messages]
            queries = provider.embed([q.question for q in item.questions])
            for name, fmt in FORMATS.items():
                matrix = provider.embed([fmt(m.name, m.role, m.content) for m in messages])
                for q, vec in zip(item.questions, queries, strict=True):
                    order = np.argsort(-(matrix @ vec))[:10]
                    scores[name].add(q, [[messages[i].id] for i in order])
        for name, s in scores.items():
            f = s.summary()
            print(
                f"{directory.name:8} {name:24} all@10 {f['recall_all@10']:.3f}  any@10 {f['recall_any@10']:.3f}"
            )


if __name__ == "__main__":
    main([Path(d) for d in sys.argv[1:]])
