"""Choose the offline extractor's statement weights by leave-one-conversation-out (reproduces
``nous/events/extraction.py``'s WEIGHTS and BIAS).

    .venv/bin/python scripts/fit_extractor.py ../shared/datasets/locomo

Each candidate clause of each LoCoMo session (``extraction.statements_of``: what the pipeline
scores) is a sample: its features (``extraction.features``) and whether its fact (the clause
rewritten in the third person) matches an annotated event of its speaker in that session at
cosine >= 0.60 with the shipped model (the threshold of ``nous bench extraction``). A logistic
regression is fitted on all conversations but one and selects the held-out one's facts as the
pipeline does (``extraction.select``: the PER_SESSION best per session scored at least
MIN_SCORE, repeats skipped); the table shows the held-out event coverage and unmatched share per
conversation, then the weights fitted on all.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from fit_reranker import fit_logistic

from nous.bench.extraction import load_sessions
from nous.embeddings.local import LocalEmbeddingProvider
from nous.events import extraction as ex

THRESHOLD = 0.60


def main(directory: Path) -> None:
    provider = LocalEmbeddingProvider()
    rows: list[dict[str, object]] = []
    for session in load_sessions(directory):
        if not session.events:
            continue
        statements = ex.statements_of(session.messages, session.at)
        if not statements:
            continue
        facts = provider.embed([ex.rewrite(s) for s in statements])
        events = provider.embed([text for _, text in session.events])
        sim = facts @ events.T
        for i, st in enumerate(statements):
            matched = [
                j for j, (who, _) in enumerate(session.events) if who == st.speaker and sim[i, j] >= THRESHOLD
            ]
            rows.append(
                {
                    "conv": session.conversation,
                    "session": session.key,
                    "x": ex.features(st),
                    "statement": st,
                    "matched": matched,
                    "events": len(session.events),
                }
            )
    x = np.stack([r["x"] for r in rows])  # type: ignore[misc]
    y = np.array([1.0 if r["matched"] else 0.0 for r in rows])
    convs = np.array([r["conv"] for r in rows])
    print(
        "| held-out conversation | sessions with events | event coverage | unmatched share | facts/session |"
    )
    print("|---|---|---|---|---|")
    scores = np.zeros(len(rows))
    for conv in sorted(set(convs)):
        train = convs != conv
        w, b = fit_logistic(x[train], y[train], np.ones(int(train.sum())))
        scores[~train] = x[~train] @ w + b
        cov, unm, per, n = _select([r for r, t in zip(rows, train, strict=True) if not t], scores[~train])
        print(f"| {conv} | {n} | {cov:.3f} | {unm:.3f} | {per:.2f} |")
    cov, unm, per, n = _select(rows, scores)
    print(f"| **all (held out)** | {n} | {cov:.3f} | {unm:.3f} | {per:.2f} |")
    w, b = fit_logistic(x, y, np.ones(len(y)))
    print("\nWEIGHTS =", np.round(w, 2).tolist(), "BIAS =", round(b, 2))
    for name, value, shipped in zip(ex.FEATURES, w, ex.WEIGHTS, strict=True):
        print(f"  {name:22s} {value:6.2f}  (shipped {shipped:.2f})")


def _select(rows: list[dict[str, object]], scores: np.ndarray) -> tuple[float, float, float, int]:
    sessions: dict[object, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        sessions[(r["conv"], r["session"])].append(i)
    chosen = []
    for idx in sessions.values():
        scored = [(float(scores[i]), rows[i]["statement"]) for i in idx]
        chosen += [idx[k] for k in ex.select(scored)]  # type: ignore[arg-type]
    matched = {(rows[i]["conv"], rows[i]["session"], j) for i in chosen for j in rows[i]["matched"]}  # type: ignore[attr-defined]
    total = sum(int(rows[idx[0]]["events"]) for idx in sessions.values())  # type: ignore[call-overload]
    unmatched = float(np.mean([0.0 if rows[i]["matched"] else 1.0 for i in chosen])) if chosen else 0.0
    return len(matched) / max(1, total), unmatched, len(chosen) / max(1, len(sessions)), len(sessions)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
