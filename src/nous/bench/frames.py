"""Frame benchmark: the frame chosen for each labelled message against its label.

Each row of the labelled set (JSONL: ``text``, ``frame``, optional ``turn`` — the message's
1-based place in its session — ``has_identity`` and ``domain``) goes through the selector
``pre_turn`` uses, with the shipped weights. Reported: accuracy overall and per frame (recall,
precision), the confusion counts and the mistakes.

The rule weights are then chosen again by k-fold cross-validation (and leave-one-domain-out):
for each fold, the weights of the grid that are most accurate on the other folds, scored on the
held-out one. The per-fold table is what docs/cognitive.md quotes; the held-out mean is the
figure to expect on messages nobody tuned on (the rules themselves were written with the set in
view: see docs/cognitive.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from nous.bench.jsonl import checkout_data_file, jsonl_rows
from nous.cognitive.frames import FRAMES
from nous.cognitive.selection import (
    GENERIC_WEIGHT,
    RULE_WEIGHT,
    FrameSelector,
    decide,
    fired_rules,
    is_greeting,
    is_introduction,
)
from nous.embeddings import Embedder, EmbeddingProvider
from nous.errors import InvalidInputError

FOLDS = 5
# The weights tried: a specific rule's (RULE_WEIGHT) and a generic form's (GENERIC_WEIGHT).
RULE_GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
GENERIC_GRID = (0.0, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25)


def default_frames_path() -> Path | None:
    """``tests/data/frames.jsonl`` of a source checkout, if there is one."""
    return checkout_data_file("frames.jsonl")


def load_frames(path: Path) -> list[dict[str, Any]]:
    """Labelled messages from JSONL (``text``, ``frame``; optional ``turn``, ``has_identity``,
    ``domain``)."""
    rows = []
    for number, row in jsonl_rows(path):
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("text"), str)
            or row.get("frame") not in FRAMES
        ):
            raise InvalidInputError(f"{path}:{number}: needs a text and a frame in {', '.join(FRAMES)}")
        rows.append(
            {
                "text": row["text"],
                "frame": row["frame"],
                "turn": int(row.get("turn", 1)),
                "has_identity": bool(row.get("has_identity", True)),
                "domain": str(row.get("domain", "")),
            }
        )
    if not rows:
        raise InvalidInputError(f"{path} holds no messages")
    return rows


@dataclass(frozen=True)
class _Scored:
    """What the selector computes for a row before the weights apply."""

    cosines: np.ndarray
    specific: tuple[str, ...]
    generic: tuple[str, ...]
    greeting: bool


def _predict(s: _Scored, row: dict[str, Any], rule_weight: float, generic_weight: float) -> str:
    first, identity = row["turn"] <= 1, row["has_identity"]
    if s.greeting:
        return "initiation" if first and not identity else "conversation"
    return decide(
        s.cosines,
        s.specific,
        s.generic,
        has_identity=identity,
        first_turn=first,
        introduction=is_introduction(row["text"]),
        rule_weight=rule_weight,
        generic_weight=generic_weight,
    ).frame


def _accuracy(
    scored: Sequence[_Scored], rows: Sequence[dict[str, Any]], weights: tuple[float, float]
) -> float:
    hits = sum(_predict(s, r, *weights) == r["frame"] for s, r in zip(scored, rows, strict=True))
    return hits / len(rows) if rows else 0.0


def _best_weights(scored: Sequence[_Scored], rows: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """The grid's most accurate weights on these rows; a tie goes to the one nearest the shipped."""
    grid = list(product(RULE_GRID, GENERIC_GRID))
    return max(
        grid,
        key=lambda w: (
            round(_accuracy(scored, rows, w), 6),
            -abs(w[0] - RULE_WEIGHT) - abs(w[1] - GENERIC_WEIGHT),
        ),
    )


def _folds(rows: Sequence[dict[str, Any]], k: int) -> list[list[int]]:
    """k folds stratified by frame: each frame's rows dealt round-robin in file order."""
    folds: list[list[int]] = [[] for _ in range(k)]
    seen: Counter[str] = Counter()
    for i, row in enumerate(rows):
        folds[seen[row["frame"]] % k].append(i)
        seen[row["frame"]] += 1
    return folds


def _cross_validate(
    scored: Sequence[_Scored], rows: Sequence[dict[str, Any]], groups: dict[str, list[int]]
) -> list[dict[str, Any]]:
    out = []
    for name, held in groups.items():
        held_set = set(held)
        train = [i for i in range(len(rows)) if i not in held_set]
        weights = _best_weights([scored[i] for i in train], [rows[i] for i in train])
        out.append(
            {
                "fold": name,
                "messages": len(held),
                "rule_weight": weights[0],
                "generic_weight": weights[1],
                "train_accuracy": round(
                    _accuracy([scored[i] for i in train], [rows[i] for i in train], weights), 4
                ),
                "held_out_accuracy": round(
                    _accuracy([scored[i] for i in held], [rows[i] for i in held], weights), 4
                ),
            }
        )
    return out


def _summary(rows: Sequence[dict[str, Any]], predicted: Sequence[str]) -> dict[str, Any]:
    pairs = list(zip((r["frame"] for r in rows), predicted, strict=True))
    per_frame = {}
    for frame in FRAMES:
        labelled = sum(g == frame for g, _ in pairs)
        chosen = sum(p == frame for _, p in pairs)
        right = sum(g == p == frame for g, p in pairs)
        if labelled or chosen:
            per_frame[frame] = {
                "messages": labelled,
                "recall": round(right / labelled, 4) if labelled else None,
                "precision": round(right / chosen, 4) if chosen else None,
            }
    confusion = Counter(f"{g} -> {p}" for g, p in pairs if g != p)
    return {
        "messages": len(rows),
        "accuracy": round(sum(g == p for g, p in pairs) / len(pairs), 4),
        "per_frame": per_frame,
        "confusion": dict(confusion.most_common()),
    }


async def run_frames(
    rows: list[dict[str, Any]], provider: EmbeddingProvider, *, folds: int = FOLDS
) -> dict[str, Any]:
    """The shipped selector on every row, then the weights chosen by k-fold and leave-one-domain-out."""
    selector = FrameSelector(Embedder(provider))
    centroids = await selector.frame_vectors()
    vectors = np.asarray(provider.embed([r["text"] for r in rows]), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    scored = []
    for row, vector in zip(rows, vectors, strict=True):
        specific, generic = fired_rules(row["text"])
        scored.append(_Scored(centroids @ vector, specific, generic, is_greeting(row["text"])))
    shipped = (RULE_WEIGHT, GENERIC_WEIGHT)
    predicted = [_predict(s, r, *shipped) for s, r in zip(scored, rows, strict=True)]
    result = _summary(rows, predicted)
    result["rule_weight"], result["generic_weight"] = shipped
    result["errors"] = [
        {
            "text": r["text"],
            "label": r["frame"],
            "predicted": p,
            "turn": r["turn"],
            "has_identity": r["has_identity"],
        }
        for r, p in zip(rows, predicted, strict=True)
        if p != r["frame"]
    ]
    k_folds = {f"fold {i + 1}": idx for i, idx in enumerate(_folds(rows, folds))}
    result["k_fold"] = _cross_validate(scored, rows, k_folds)
    domains: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        if row["domain"]:
            domains.setdefault(row["domain"], []).append(i)
    result["leave_one_domain_out"] = _cross_validate(scored, rows, domains) if len(domains) > 1 else []
    for key in ("k_fold", "leave_one_domain_out"):
        table = result[key]
        total = sum(f["messages"] for f in table)
        # every message is held out once: the pooled held-out accuracy weighs folds by their size
        result[f"{key}_accuracy"] = (
            round(sum(f["held_out_accuracy"] * f["messages"] for f in table) / total, 4) if total else None
        )
    return result
