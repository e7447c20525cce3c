"""Dedup benchmark: the write path's tiers on labelled pairs (duplicate / related / unrelated).

Each pair is embedded with the configured model and classified by the same ``classify`` the
write path uses (cosine tiers plus the lexical conflict check). Reported: precision and
recall of the duplicate tier (predicted duplicate vs labelled duplicate) and of the connect
tier (predicted connect / update / contradiction vs labelled related), overall and per
domain, with a cosine-only baseline at the same threshold in the same run, and how many
changed statements (labelled related) were judged duplicates: changes the store would lose.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nous.bench.jsonl import checkout_data_file, jsonl_rows
from nous.embeddings import EmbeddingProvider
from nous.errors import InvalidInputError
from nous.memory.dedup import (
    DedupThresholds,
    Tier,
    agreement_verdict,
    classify,
    cosine,
    needs_agreement,
    residual_wordings,
)

LABELS = ("duplicate", "related", "unrelated")
CONNECT_TIERS = frozenset({Tier.CONNECT, Tier.UPDATE, Tier.CONTRADICTION})


def default_pairs_path() -> Path | None:
    """``tests/data/dedup_pairs.jsonl`` of a source checkout, if there is one."""
    return checkout_data_file("dedup_pairs.jsonl")


def default_pairs_paths() -> list[Path]:
    """Every labelled pair file of a source checkout: ``dedup_pairs.jsonl`` (the dev pairs the
    thresholds were calibrated on), then ``dedup_pairs_*.jsonl`` (``_holdout``: written before the
    short-text rules; ``_changes``: changed values and paraphrases, written before the rules that
    read what statements say)."""
    first = default_pairs_path()
    if first is None:
        return []
    return [first, *sorted(first.parent.glob("dedup_pairs_*.jsonl"))]


def load_pairs(path: Path) -> list[dict[str, str]]:
    """Labelled pairs from JSONL (``a``, ``b``, ``label``, optional ``domain`` / ``note``)."""
    pairs = []
    for number, row in jsonl_rows(path):
        if not isinstance(row, dict) or not {"a", "b", "label"} <= row.keys() or row["label"] not in LABELS:
            raise InvalidInputError(f"{path}:{number}: needs a, b and a label in {', '.join(LABELS)}")
        pairs.append(row)
    if not pairs:
        raise InvalidInputError(f"{path} holds no pairs")
    return pairs


def _ratio(hit: int, total: int) -> float:
    return round(hit / total, 4) if total else 0.0


def _scores(predicted: Sequence[str], labels: Sequence[str]) -> dict[str, float]:
    pairs = list(zip(predicted, labels, strict=True))
    dup_tp = sum(p == "duplicate" and lab == "duplicate" for p, lab in pairs)
    con_tp = sum(p == "connect" and lab == "related" for p, lab in pairs)
    return {
        "duplicate_precision": _ratio(dup_tp, sum(p == "duplicate" for p in predicted)),
        "duplicate_recall": _ratio(dup_tp, sum(lab == "duplicate" for lab in labels)),
        "connect_precision": _ratio(con_tp, sum(p == "connect" for p in predicted)),
        "connect_recall": _ratio(con_tp, sum(lab == "related" for lab in labels)),
    }


def run_dedup(
    pairs: list[dict[str, str]], provider: EmbeddingProvider, thresholds: DedupThresholds
) -> dict[str, Any]:
    """Classify every pair; figures for the write path and a cosine-only baseline."""
    a = np.asarray(provider.embed([p["a"] for p in pairs]), dtype=np.float32)
    b = np.asarray(provider.embed([p["b"] for p in pairs]), dtype=np.float32)
    cosines = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    predicted, baseline, errors, swallowed = [], [], [], []
    for pair, cos in zip(pairs, cosines, strict=True):
        tier, conflict = classify(float(cos), pair["b"], pair["a"], thresholds)
        if needs_agreement(tier, float(cos)):
            rest = residual_wordings(pair["b"], pair["a"])
            if rest is not None:
                va, vb = provider.embed(list(rest))
                tier = agreement_verdict(tier, cosine(va, vb))
        label = "duplicate" if tier == Tier.DUPLICATE else "connect" if tier in CONNECT_TIERS else "unique"
        predicted.append(label)
        baseline.append(
            "duplicate"
            if cos >= thresholds.duplicate
            else "connect"
            if cos >= thresholds.connect
            else "unique"
        )
        if label == "duplicate" and pair["label"] == "related":
            swallowed.append({"a": pair["a"], "b": pair["b"], "cosine": round(float(cos), 4)})
        if (label == "duplicate") != (pair["label"] == "duplicate"):
            errors.append(
                {
                    "a": pair["a"],
                    "b": pair["b"],
                    "label": pair["label"],
                    "predicted": tier.value,
                    "cosine": round(float(cos), 4),
                    "conflict": conflict.kind.value if conflict else None,
                }
            )
    labels = [p["label"] for p in pairs]
    domains = sorted({p.get("domain", "") for p in pairs})
    per_domain = {}
    for domain in domains:
        idx = [i for i, p in enumerate(pairs) if p.get("domain", "") == domain]
        per_domain[domain or "-"] = _scores([predicted[i] for i in idx], [labels[i] for i in idx])
    return {
        **_scores(predicted, labels),
        "pairs": len(pairs),
        "labels": {lab: labels.count(lab) for lab in LABELS},
        "thresholds": {"duplicate": thresholds.duplicate, "connect": thresholds.connect},
        "embedding_model": provider.model_name,
        "cosine_only": _scores(baseline, labels),
        "per_domain": per_domain,
        # changed statements (labelled related) judged duplicates: a change the store would lose
        "changes_swallowed": len(swallowed),
        "swallowed": swallowed,
        "duplicate_errors": errors,
    }
