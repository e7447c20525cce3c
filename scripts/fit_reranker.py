"""Choose the re-ranker's weights by leave-one-conversation-out (reproduces retrieval/rerank.py).

    .venv/bin/python scripts/fit_reranker.py dump OUT.npz DIR [DIR ...]   # features per question
    .venv/bin/python scripts/fit_reranker.py fit OUT.npz                   # LOO table + weights

``dump`` ingests every conversation of each folder (LoCoMo files or labelled conversations) into
a fresh store (the event pipeline off, as in ``nous bench retrieval``: with it on, facts extracted
in the background while the questions run made the dump depend on timing) and records, per question, the re-ranker features of the head of the base ranking
and which evidence groups each candidate covers. ``fit`` trains an L2-regularised logistic
regression on all conversations but one, scores the held-out one (recall_all@10 / recall_any@5
when the head is re-ordered by the model), for each conversation in turn, and prints the per-fold
figures, the spread of the weights across folds and the weights fitted on everything. Each
dataset (folder) carries the same total weight, so a large one cannot dictate the weights.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from nous import Nous, Settings
from nous.bench.labelled import LabelledConversation, from_locomo, load_labelled
from nous.embeddings.local import LocalEmbeddingProvider
from nous.retrieval import RecallQuery
from nous.retrieval.rerank import BIAS, FEATURES, WEIGHTS


def _load(directory: Path) -> list[LabelledConversation]:
    out = []
    for path in sorted(directory.glob("*.json")):
        head = path.read_text(encoding="utf-8")[:4000]
        out.append(load_labelled(path) if '"sessions"' in head else from_locomo(path))
    return out


async def dump(out: Path, directories: list[Path]) -> None:
    provider = LocalEmbeddingProvider()
    records: list[dict[str, object]] = []
    for directory in directories:
        for item in _load(directory):
            with tempfile.TemporaryDirectory() as tmp:
                settings = Settings(
                    home=Path(tmp), database_url=f"sqlite:///{tmp}/fit.db", events_worker="off"
                )
                async with Nous(settings, agent_id="fit", embedding_provider=provider) as nous:
                    await nous.ingest(item.conversation)
                    retriever = nous._retriever
                    assert retriever is not None
                    for q in item.questions:
                        rows = await retriever.rerank_features(
                            RecallQuery(text=q.question, limit=10, now=q.asked_at)
                        )
                        covers = [
                            [
                                g
                                for g, group in enumerate(q.evidence)
                                if set(m.provenance.turn_ids) & set(group)
                            ]
                            for m, _ in rows
                        ]
                        records.append(
                            {
                                "dataset": directory.name,
                                "conversation": item.name,
                                "category": q.category,
                                "groups": len(q.evidence),
                                "x": np.stack([x for _, x in rows]).tolist() if rows else [],
                                "covers": covers,
                            }
                        )
            print(f"{directory.name}/{item.name}: {len(item.questions)} questions", file=sys.stderr)
    out.write_text(json.dumps({"features": FEATURES, "records": records}))


def _recall(records: list[dict], w: np.ndarray, b: float, k: int, mode: str) -> float:
    hits = []
    for r in records:
        x = np.asarray(r["x"])
        if len(x) == 0:
            hits.append(0.0)
            continue
        order = np.argsort(-(x @ w + b), kind="stable")[:k]
        found = {g for i in order for g in r["covers"][i]}
        hits.append(float(len(found) == r["groups"]) if mode == "all" else float(bool(found)))
    return float(np.mean(hits)) if hits else 0.0


def _training_set(records: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    datasets = {r["dataset"] for r in records}
    per_dataset = {d: sum(1 for r in records if r["dataset"] == d) for d in datasets}
    xs, ys, ws = [], [], []
    for r in records:
        x = np.asarray(r["x"])
        if len(x) == 0:
            continue
        y = np.array([1.0 if c else 0.0 for c in r["covers"]])
        weight = 1.0 / per_dataset[r["dataset"]] / len(x)  # each dataset, then each question, weighs the same
        xs.append(x)
        ys.append(y)
        ws.append(np.full(len(x), weight))
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1e-3) -> tuple[np.ndarray, float]:
    """Weighted L2-regularised logistic regression by Newton's method (intercept unpenalised)."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = w / w.sum()
    theta = np.zeros(xb.shape[1])
    penalty = np.full(xb.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(xb @ theta)))
        grad = xb.T @ (w * (p - y)) + penalty * theta
        hess = (xb * (w * p * (1 - p))[:, None]).T @ xb + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < 1e-8:
            break
    return theta[:-1], float(theta[-1])


def _pairwise_set(records: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Differences x_relevant - x_other within each question (each question weighs the same)."""
    datasets = {r["dataset"] for r in records}
    per_dataset = {d: sum(1 for r in records if r["dataset"] == d) for d in datasets}
    xs, ws = [], []
    for r in records:
        x = np.asarray(r["x"])
        pos = [i for i, c in enumerate(r["covers"]) if c]
        neg = [i for i, c in enumerate(r["covers"]) if not c]
        if not pos or not neg:
            continue
        diffs = (x[pos][:, None, :] - x[neg][None, :, :]).reshape(-1, x.shape[1])
        xs.append(diffs)
        ws.append(np.full(len(diffs), 1.0 / per_dataset[r["dataset"]] / len(diffs)))
    x, w = np.concatenate(xs), np.concatenate(ws)
    # Symmetric pairs (d, 1) and (-d, 0) keep the intercept at zero.
    return np.vstack([x, -x]), np.r_[np.ones(len(x)), np.zeros(len(x))], np.r_[w, w]


def fit_model(records: list[dict], objective: str) -> tuple[np.ndarray, float]:
    if objective == "pairwise":
        w, _ = fit_logistic(*_pairwise_set(records))
        # Place the intercept where pointwise logistic would put it, for a calibrated sigmoid.
        x, y, sw = _training_set(records)
        m, target = x @ w, float(np.sum(sw * y) / sw.sum())
        lo, hi = -50.0, 50.0  # bisection: mean predicted relevance = share of relevant candidates
        for _ in range(100):
            bias = (lo + hi) / 2
            mean = float(np.sum(sw / (1.0 + np.exp(-(m + bias)))) / sw.sum())
            lo, hi = (bias, hi) if mean < target else (lo, bias)
        return w, (lo + hi) / 2
    return fit_logistic(*_training_set(records))


def fit(path: Path, objective: str = "pairwise", drop: str = "") -> None:
    data = json.loads(path.read_text())
    records = data["records"]
    names = list(data["features"])
    keep = [i for i, n in enumerate(names) if n not in drop.split(",")]
    names = [names[i] for i in keep]
    for r in records:
        r["x"] = [[row[i] for i in keep] for row in r["x"]]
    conversations = sorted({(r["dataset"], r["conversation"]) for r in records})
    rank_only = np.zeros(len(names))
    rank_only[names.index("rank")] = 1.0
    print(
        "| held-out conversation | questions | base (RRF) all@10 | re-ranker all@10 | base any@5 | re-ranker any@5 |"
    )
    print("|---|---|---|---|---|---|")
    fold_weights = []
    totals: dict[str, list[float]] = {"base": [], "rerank": [], "base5": [], "rerank5": []}
    by_dataset: dict[str, dict[str, list[float]]] = {}
    for dataset, conv in conversations:
        train = [r for r in records if (r["dataset"], r["conversation"]) != (dataset, conv)]
        test = [r for r in records if (r["dataset"], r["conversation"]) == (dataset, conv)]
        w, b = fit_model(train, objective)
        fold_weights.append(np.append(w, b))
        figures = (
            _recall(test, rank_only, 0.0, 10, "all"),
            _recall(test, w, b, 10, "all"),
            _recall(test, rank_only, 0.0, 5, "any"),
            _recall(test, w, b, 5, "any"),
        )
        for key, value in zip(("base", "rerank", "base5", "rerank5"), figures, strict=True):
            totals[key].extend([value] * len(test))
            by_dataset.setdefault(dataset, {}).setdefault(key, []).extend([value] * len(test))
        print(f"| {dataset}/{conv} | {len(test)} | " + " | ".join(f"{v:.3f}" for v in figures) + " |")
    for dataset, t in sorted(by_dataset.items()):
        print(
            f"| **{dataset} (held out, pooled)** | {len(t['base'])} | "
            + " | ".join(f"{np.mean(t[k]):.3f}" for k in ("base", "rerank", "base5", "rerank5"))
            + " |"
        )
    stack = np.stack(fold_weights)
    w_all, b_all = fit_model(records, objective)
    print("\n| feature | all data | fold mean | fold min | fold max | shipped |")
    print("|---|---|---|---|---|---|")
    for i, name in enumerate([*names, "bias"]):
        shipped = BIAS if name == "bias" else (WEIGHTS[FEATURES.index(name)] if name in FEATURES else 0.0)
        value = b_all if name == "bias" else w_all[i]
        print(
            f"| {name} | {value:.3f} | {stack[:, i].mean():.3f} | {stack[:, i].min():.3f} | "
            f"{stack[:, i].max():.3f} | {shipped:.3f} |"
        )
    print(f"\nfitted on all data, scored on all data: all@10 {_recall(records, w_all, b_all, 10, 'all'):.3f}")
    print("WEIGHTS =", np.round(w_all, 3).tolist(), "BIAS =", round(b_all, 3))


if __name__ == "__main__":
    command, target, *rest = sys.argv[1:]
    if command == "dump":
        asyncio.run(dump(Path(target), [Path(d) for d in rest]))
    elif command == "fit":
        fit(Path(target), *rest)
    else:
        raise SystemExit(__doc__)
